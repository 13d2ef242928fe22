// The list of annotations made so far: one entry each (categories, segment, text, paired
// text, attribute values, comment), hover to light it up in the text, jump to its segment,
// remove it, edit its categories, attribute values or comment in place (the same span: an
// "edit" in the outbox, stored server-side as the old mark removed and the span added again).

import { clear, h, setVar } from "../dom.js";
import { t } from "../i18n.js";
import {
  el,
  labelsOf,
  page,
  quote,
  segLabel,
  setHint,
  spanSegments,
  state,
  textAttrs,
  uuid,
} from "./state.js";

let editingKey = null; // the annotation whose categories / attributes / comment are being changed

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
                t(linked ? "linked_in" : "earlier_in", { segment: spanSegments(a.paired) }),
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
                  // On a phone the new-annotation sheet is fixed at the window's foot: bring the
                  // whole form above it (its scroll-margin keeps the sheet's height clear).
                  el.list.querySelector(".annot-edit")?.scrollIntoView({ block: "nearest" });
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
    if (editingKey === a.key && !state.readOnly) li.append(editForm(a));
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

/** The in-place editor: other categories (a select, or check boxes where the taxonomy is
 * multi-label) that take the mark's other span as it is, the chosen categories' attribute
 * values, the comment. */
function editForm(a) {
  const multi = Boolean(state.data.taxonomy.multi_label);
  const fits = (c) => (a.paired ? c.kind !== "singleton" : c.kind !== "paired");
  const choices = [...state.categories.values()].filter((c) => fits(c) || labelsOf(a).includes(c.id));
  const chosen = new Set(labelsOf(a));
  const values = { ...(a.attributes || {}) };
  const attributes = h("div", { class: "annot-edit-attributes" });
  const picked = () => (multi ? choices.filter((c) => chosen.has(c.id)).map((c) => c.id) : [select.value]);
  const redraw = () => clear(attributes).append(...attributeFields(picked(), values));
  const select = multi
    ? null
    : h(
        "select",
        { class: "edit-category", "aria-label": t("edit_category"), onchange: redraw },
        choices.map((c) => h("option", { value: c.id, selected: c.id === a.category }, c.label)),
      );
  const boxes = multi
    ? h(
        "fieldset",
        { class: "edit-categories" },
        h("legend", {}, t("edit_category")),
        choices.map((c) =>
          h(
            "label",
            { class: "edit-category-choice" },
            h("input", {
              type: "checkbox",
              value: c.id,
              checked: chosen.has(c.id),
              onchange: (event) => {
                if (event.currentTarget.checked) chosen.add(c.id);
                else chosen.delete(c.id);
                redraw();
              },
            }),
            h("span", {}, c.label),
          ),
        ),
      )
    : null;
  const comment = h("textarea", { class: "edit-comment", rows: "2", maxlength: "5000", "aria-label": t("edit_comment") }, a.comment || "");
  redraw();
  return h(
    "form",
    {
      class: "annot-edit",
      onsubmit: (event) => {
        event.preventDefault();
        saveEdit(a.key, picked(), values, comment.value.trim());
      },
    },
    multi ? boxes : h("label", {}, `${t("edit_category")} `, select),
    attributes,
    h("label", {}, `${t("edit_comment")} `, comment),
    h(
      "div",
      { class: "annot-edit-actions" },
      h("button", { type: "submit", class: "btn btn-small btn-primary save-edit" }, t("edit_save")),
      h("button", { type: "button", class: "btn btn-small btn-quiet", onclick: () => { editingKey = null; renderList(); } }, t("edit_cancel")),
    ),
  );
}

/** The attributes the categories ``ids`` declare, each once (first declaration). */
function declaredBy(ids) {
  const out = new Map();
  for (const id of ids) for (const x of state.categories.get(id)?.attributes || []) if (!out.has(x.id)) out.set(x.id, x);
  return [...out.values()];
}

/** A list of values per declared attribute (a scale's whole numbers too); a choice is written
 * into ``values``, the empty one removes it. */
function attributeFields(ids, values) {
  return declaredBy(ids).map((x) => {
    const options = x.kind === "choice" ? x.values : Array.from({ length: x.max - x.min + 1 }, (_, i) => x.min + i);
    return h(
      "label",
      {},
      `${x.label} `,
      h(
        "select",
        {
          class: "edit-attribute",
          dataset: { attribute: x.id },
          onchange: (event) => {
            const raw = event.currentTarget.value;
            if (raw === "") delete values[x.id];
            else values[x.id] = x.kind === "scale" ? Number(raw) : raw;
          },
        },
        h("option", { value: "" }, x.required ? "—" : t("optional")),
        options.map((v) => h("option", { value: String(v), selected: values[x.id] === v }, String(v))),
      ),
    );
  });
}

function saveEdit(key, categories, values, comment) {
  const a = state.annotations.find((x) => x.key === key);
  if (!a || state.readOnly) return renderList();
  if (!categories.length) return setHint(el.formHint, t("choose_first"), "warn");
  const declared = declaredBy(categories);
  const missing = declared.find((x) => x.required && values[x.id] === undefined);
  if (missing) return setHint(el.formHint, t("choose_attribute", { label: missing.label }), "warn");
  const attributes = {};
  for (const x of declared) if (values[x.id] !== undefined) attributes[x.id] = values[x.id];
  editingKey = null;
  const before = { ...(a.attributes || {}) };
  const same = (x, y) => JSON.stringify(Object.entries(x).sort()) === JSON.stringify(Object.entries(y).sort());
  const sameLabels = [...categories].sort().join(" ") === [...labelsOf(a)].sort().join(" ");
  if (sameLabels && same(attributes, before) && comment === (a.comment || "")) return renderList();
  const newKey = uuid();
  const previous = { key: a.key, category: a.category, categories: a.categories, attributes: a.attributes, comment: a.comment || "" };
  const body = { category: categories[0], comment, client_id: newKey };
  if (categories.length > 1) body.categories = categories;
  if (declared.length || Object.keys(before).length) body.attributes = attributes;
  const shown = { key: newKey, category: categories[0], categories: body.categories, attributes: Object.keys(attributes).length ? attributes : undefined, comment, pending: true };
  Object.assign(a, shown);
  page.outbox.push({ kind: "edit", client_id: newKey, from: previous.key, previous, body });
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
