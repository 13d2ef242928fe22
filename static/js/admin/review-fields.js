// The review page's edit-form fields: the offsets' number fields, and the attribute values
// (docs/METRICS.md, "Multi-label marks and attributes") shown after a mark or a decision and
// edited in the form (a list per choice, a number per scale, as the category declares them);
// what the researcher chose survives the form's re-renders. Values are untrusted: text nodes
// only.

import { byId, h } from "../dom.js";

/** A number field of the edit form (a segment or an offset). */
export function field(label, id, value, extra = {}) {
  return h("label", { for: id }, label, h("input", { id, type: "number", min: "0", value: String(value), ...extra }));
}

/** " · id: value, …" after a mark or decision ("" when it has none). */
export function attributesText(values) {
  const shown = Object.entries(values || {}).map(([key, value]) => `${key}: ${value}`);
  return shown.length ? h("span", { class: "attributes" }, ` · ${shown.join(", ")}`) : "";
}

/** The edit form's fields for the ``declared`` attributes, showing ``values``. */
export function attributeFields(declared, values) {
  return (declared || []).map((a) => {
    const id = `edit-attr-${a.id}`;
    const value = values[a.id];
    const input =
      a.kind === "choice"
        ? h("select", { id, dataset: { attribute: a.id } }, h("option", { value: "" }, a.required ? "(choose)" : "(none)"), a.values.map((x) => h("option", { value: x, selected: x === value }, x)))
        : h("input", { id, type: "number", min: String(a.min), max: String(a.max), value: value === undefined ? "" : String(value), dataset: { attribute: a.id, scale: "1" } });
    return h("label", { for: id }, a.label, input);
  });
}

/** The values chosen in the fields under ``container`` (an empty field gives none). */
export function readAttributes(container) {
  const out = {};
  for (const input of container ? container.querySelectorAll("[data-attribute]") : []) {
    if (input.value === "") continue;
    out[input.dataset.attribute] = input.dataset.scale ? Number(input.value) : input.value;
  }
  return out;
}

/** The edit form's category, comment and attribute values back into ``v`` (the edit's
 * values), so that a re-render of the form keeps what the researcher chose. */
export function keepEdited(v) {
  const box = byId("edit-attributes");
  Object.assign(v, { comment: byId("edit-comment").value, category: byId("edit-category").value });
  for (const input of box.querySelectorAll("[data-attribute]")) delete v.attributes[input.dataset.attribute];
  Object.assign(v.attributes, readAttributes(box));
}
