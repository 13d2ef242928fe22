// The instructions panel, built from the study's taxonomy snapshot (text only).

import { append, clear, h, setVar } from "./dom.js";
import { t } from "./i18n.js";

/** Categories grouped in taxonomy order: [{group, categories}] (ungrouped ones last). */
export function groupedCategories(taxonomy) {
  const groups = (taxonomy.groups || []).map((g) => ({ group: g, categories: [] }));
  const byId = new Map(groups.map((g) => [g.group.id, g]));
  const rest = { group: null, categories: [] };
  for (const c of taxonomy.categories || []) (byId.get(c.group) || rest).categories.push(c);
  if (rest.categories.length) groups.push(rest);
  return groups.filter((g) => g.categories.length);
}

function categoryEntry(cat) {
  const notes = [];
  if (cat.kind === "paired") notes.push(t("note_paired"));
  if (cat.kind === "relation") notes.push(t("note_relation"));
  if (cat.scope === "sentence") notes.push(t("note_sentence"));
  for (const a of cat.attributes || []) {
    const values = a.kind === "choice" ? a.values.join(", ") : `${a.min}–${a.max}`;
    notes.push(t(a.required ? "note_attribute_required" : "note_attribute", { label: a.label, values }));
  }
  return h(
    "li",
    { class: "instr-cat" },
    h(
      "div",
      { class: "instr-cat-head" },
      setVar(h("span", { class: "swatch", "aria-hidden": "true" }), "--cat", cat.color),
      h("strong", {}, cat.label),
      " ",
      h("span", { class: "cat-id" }, `(${cat.id})`),
      cat.shortcut ? h("kbd", { title: t("shortcut_title") }, cat.shortcut) : null,
    ),
    cat.definition ? h("p", { class: "instr-def" }, cat.definition) : null,
    notes.length ? h("p", { class: "instr-note" }, notes.join("; ")) : null,
    (cat.examples || []).length
      ? h(
          "ul",
          { class: "instr-examples" },
          cat.examples.map((ex) => h("li", {}, h("span", { class: "ex-label" }, t("example_label")), ex)),
        )
      : null,
  );
}

/** Fill the instructions container from the taxonomy. */
export function renderInstructions(container, taxonomy, { readOnly = false } = {}) {
  clear(container);
  if (taxonomy.description) append(container, h("p", { class: "instr-lead" }, taxonomy.description));
  if (taxonomy.instructions) append(container, h("p", {}, taxonomy.instructions));
  if (!readOnly) {
    append(
      container,
      h(
        "ol",
        { class: "instr-steps" },
        h("li", {}, t("step_select")),
        h("li", {}, t("step_category")),
        h("li", {}, t("step_paired")),
        h("li", {}, t("step_add")),
        h("li", {}, t("step_next")),
      ),
    );
  }
  for (const { group, categories } of groupedCategories(taxonomy)) {
    append(
      container,
      h(
        "section",
        { class: "instr-group" },
        h("h3", {}, group ? group.label : t("error_categories")),
        group && group.description ? h("p", { class: "instr-note" }, group.description) : null,
        h("ul", { class: "instr-cats" }, categories.map(categoryEntry)),
      ),
    );
  }
}

/** The collapsible panel of source texts (Thresh's context and source), text nodes only. */
export function renderSources(panel, body, sources) {
  clear(body);
  for (const source of sources) {
    append(body, [h("h3", {}, source.label), h("p", { class: "source-text" }, source.text)]);
  }
  panel.hidden = sources.length === 0;
}
