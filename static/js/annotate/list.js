// The list of annotations made so far: one entry each (category, segment, text, paired
// text, comment), hover to light it up in the text, jump to its segment, remove it.

import { clear, h, setVar } from "../dom.js";
import { el, labelsOf, page, quote, segLabel, setHint, state } from "./state.js";

export function renderList() {
  clear(el.list);
  const items = [...state.annotations].sort(
    (a, b) => a.segment - b.segment || a.start - b.start || a.end - b.end,
  );
  el.listEmpty.hidden = items.length > 0;
  el.listCount.textContent = items.length ? `(${items.length})` : "";
  for (const a of items) {
    const cat = state.categories.get(a.category) || { label: a.category, color: "#888888" };
    const labels = labelsOf(a).map((id) => (state.categories.get(id) || { label: id }).label).join(" + ");
    const linked = labelsOf(a).some((id) => state.categories.get(id)?.kind === "relation");
    const attributes = Object.entries(a.attributes || {});
    const li = h(
      "li",
      {
        class: `annot-item${a.segment === state.current ? " is-current" : ""}${a.pending ? " is-pending" : ""}`,
        dataset: { key: a.key, category: a.category },
      },
      setVar(h("span", { class: "swatch", "aria-hidden": "true" }), "--cat", cat.color),
      h(
        "div",
        { class: "annot-body" },
        h(
          "div",
          { class: "annot-head" },
          h("span", { class: "annot-cat" }, labels),
          a.segment === state.current
            ? h("span", { class: "annot-seg" }, `${segLabel(a.segment)} (this one)`)
            : h(
                "button",
                {
                  type: "button",
                  class: "annot-seg link-btn",
                  title: `Go to ${segLabel(a.segment)}`,
                  onclick: () => page.goTo(a.segment),
                },
                segLabel(a.segment),
              ),
          a.pending ? h("span", { class: "annot-pending" }, "saving…") : null,
        ),
        h("q", { class: "annot-span" }, a.text),
        a.paired
          ? h(
              "div",
              { class: "annot-paired" },
              h(
                "span",
                { class: "annot-paired-label" },
                `${linked ? "linked" : "earlier"} (${segLabel(a.paired.segment)}): `,
              ),
              h("q", {}, a.paired.text),
            )
          : null,
        attributes.length
          ? h(
              "div",
              { class: "annot-attributes" },
              attributes.map(([key, value]) => h("span", { class: "annot-attribute" }, `${attributeLabel(key)}: ${value}`)),
            )
          : null,
        a.comment ? h("div", { class: "annot-comment" }, h("span", { class: "annot-paired-label" }, "Comment: "), a.comment) : null,
      ),
      state.readOnly
        ? null
        : h(
            "button",
            {
              type: "button",
              class: "btn btn-small btn-quiet remove-btn",
              "aria-label": `Remove ${labels}: ${a.text}`,
              onclick: () => removeAnnotation(a.key),
            },
            "Remove",
          ),
    );
    li.addEventListener("mouseenter", () => hotAnnotation(a.key, true));
    li.addEventListener("mouseleave", () => hotAnnotation(a.key, false));
    el.list.append(li);
  }
}

function hotAnnotation(key, on) {
  const k = CSS.escape(key);
  for (const node of document.querySelectorAll(`[data-annotations~="${k}"], [data-paired~="${k}"]`)) {
    node.classList.toggle("hl-hot", on);
  }
}

function removeAnnotation(key) {
  if (state.readOnly) return;
  const a = state.annotations.find((x) => x.key === key);
  state.annotations = state.annotations.filter((x) => x.key !== key);
  page.outbox.push({ kind: "remove", client_id: key });
  if (a) setHint(el.formHint, `Removed: ${quote(a.text)}`, "ok");
  page.renderAll();
}

/** Draw attention to one annotation in the list (e.g. the one a duplicate would repeat). */
export function flashAnnotation(key) {
  const item = el.list.querySelector(`[data-key="${CSS.escape(key)}"]`);
  if (!item) return;
  item.scrollIntoView({ block: "nearest" });
  item.classList.remove("flash");
  void item.offsetWidth; // restart the animation
  item.classList.add("flash");
}

/** An attribute's label as the taxonomy declares it (its id when none). */
function attributeLabel(id) {
  for (const c of state.categories.values()) {
    const found = (c.attributes || []).find((a) => a.id === id);
    if (found) return found.label;
  }
  return id;
}
