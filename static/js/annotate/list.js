// The list of annotations made so far: one entry each (category, segment, text, paired
// text, comment), hover to light it up in the text, jump to its segment, remove it, edit its
// category or comment in place (the same span: an "edit" in the outbox, stored server-side
// as the old annotation removed and the span added again).

import { clear, h, setVar } from "../dom.js";
import { t } from "../i18n.js";
import { el, labelsOf, page, quote, segLabel, setHint, state, textAttrs, uuid } from "./state.js";

let editingKey = null; // the annotation whose category / comment is being changed

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
            ? h("span", { class: "annot-seg" }, t("this_segment", { segment: segLabel(a.segment) }))
            : h(
                "button",
                {
                  type: "button",
                  class: "annot-seg link-btn",
                  title: t("go_to", { segment: segLabel(a.segment) }),
                  onclick: () => page.goTo(a.segment),
                },
                segLabel(a.segment),
              ),
          a.pending ? h("span", { class: "annot-pending" }, t("saving_item")) : null,
        ),
        h("q", { class: "annot-span", ...textAttrs() }, a.text),
        a.paired
          ? h(
              "div",
              { class: "annot-paired" },
              h(
                "span",
                { class: "annot-paired-label" },
                t(linked ? "linked_in" : "earlier_in", { segment: segLabel(a.paired.segment) }),
              ),
              h("q", textAttrs(), a.paired.text),
            )
          : null,
        attributes.length
          ? h(
              "div",
              { class: "annot-attributes" },
              attributes.map(([key, value]) =>
                h("span", { class: "annot-attribute" }, t("attribute_value", { label: attributeLabel(key), value })),
              ),
            )
          : null,
        a.comment
          ? h("div", { class: "annot-comment" }, h("span", { class: "annot-paired-label" }, t("comment_label")), h("span", { dir: "auto" }, a.comment))
          : null,
      ),
      state.readOnly
        ? null
        : h(
            "div",
            { class: "annot-actions" },
            h(
              "button",
              {
                type: "button",
                class: "btn btn-small btn-quiet edit-btn",
                "aria-label": t("edit_label", { label: labels, text: a.text }),
                "aria-expanded": editingKey === a.key ? "true" : "false",
                disabled: a.pending || a.id === null || a.id === undefined,
                onclick: () => {
                  editingKey = editingKey === a.key ? null : a.key;
                  renderList();
                },
              },
              t("edit"),
            ),
            h(
              "button",
              {
                type: "button",
                class: "btn btn-small btn-quiet remove-btn",
                "aria-label": t("remove_label", { label: labels, text: a.text }),
                onclick: (e) => removeAnnotation(a.key, e.currentTarget),
              },
              t("remove"),
            ),
          ),
    );
    if (editingKey === a.key && !state.readOnly) li.append(editForm(a, cat));
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

/**
 * Remove an annotation (its list button, or Delete at the keyboard cursor). When the button
 * had focus, focus goes on to the next entry's button (or the list's heading), not nowhere.
 */
export function removeAnnotation(key, button = null) {
  if (state.readOnly) return;
  const a = state.annotations.find((x) => x.key === key);
  const items = [...el.list.querySelectorAll(".annot-item")].map((li) => li.dataset.key);
  const next = items[items.indexOf(key) + 1] ?? items[items.indexOf(key) - 1] ?? null;
  state.annotations = state.annotations.filter((x) => x.key !== key);
  page.outbox.push({ kind: "remove", client_id: key });
  if (a) setHint(el.formHint, t("removed", { text: quote(a.text) }), "ok");
  page.renderAll();
  if (button && document.activeElement !== button) {
    const target = next && el.list.querySelector(`[data-key="${CSS.escape(next)}"] .remove-btn`);
    (target || el.listHeading).focus();
  }
}

/** The in-place editor: another category of the same kind (a pair keeps its earlier span),
 * the comment. */
function editForm(a, cat) {
  const choices = [...state.categories.values()].filter((c) => (c.kind === "paired") === (cat.kind === "paired"));
  const select = h(
    "select",
    { class: "edit-category", "aria-label": t("edit_category") },
    choices.map((c) => h("option", { value: c.id, selected: c.id === a.category }, c.label)),
  );
  const comment = h("textarea", { class: "edit-comment", rows: "2", maxlength: "5000", "aria-label": t("edit_comment") }, a.comment || "");
  return h(
    "form",
    {
      class: "annot-edit",
      onsubmit: (event) => {
        event.preventDefault();
        saveEdit(a.key, select.value, comment.value.trim());
      },
    },
    h("label", {}, `${t("edit_category")} `, select),
    h("label", {}, `${t("edit_comment")} `, comment),
    h(
      "div",
      { class: "annot-edit-actions" },
      h("button", { type: "submit", class: "btn btn-small btn-primary save-edit" }, t("edit_save")),
      h("button", { type: "button", class: "btn btn-small btn-quiet", onclick: () => { editingKey = null; renderList(); } }, t("edit_cancel")),
    ),
  );
}

function saveEdit(key, category, comment) {
  const a = state.annotations.find((x) => x.key === key);
  editingKey = null;
  if (!a || state.readOnly) return renderList();
  if (category === a.category && comment === (a.comment || "")) return renderList();
  const newKey = uuid();
  const previous = { key: a.key, category: a.category, comment: a.comment || "" };
  Object.assign(a, { key: newKey, category, comment, pending: true });
  page.outbox.push({ kind: "edit", client_id: newKey, from: previous.key, previous, body: { category, comment, client_id: newKey } });
  setHint(el.formHint, t("changed", { text: quote(a.text) }), "ok");
  return page.renderAll();
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
