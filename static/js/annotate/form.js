// The annotation form: the category buttons (and their keys), the span and paired fields,
// the comment, Add and Cancel. Adding queues the annotation in the outbox.

import { append, clear, h, setVar } from "../dom.js";
import { t } from "../i18n.js";
import { groupedCategories } from "../instructions.js";
import {
  chosenAttributes,
  chosenCategories,
  currentCategory,
  el,
  emptyForm,
  findDuplicate,
  page,
  pairKind,
  pairedPrompt,
  quote,
  root,
  setHint,
  snapSpan,
  spanSegments,
  spanText,
  state,
  typingInField,
  uuid,
} from "./state.js";

export function buildCategoryButtons() {
  clear(el.categoryButtons);
  const groups = groupedCategories(state.data.taxonomy);
  const labelled = groups.length > 1 || groups.some((g) => g.group);
  for (const { group, categories } of groups) {
    const buttons = categories.map((c) => {
      const btn = h(
        "button",
        {
          type: "button",
          class: "cat-btn",
          dataset: { category: c.id },
          "aria-pressed": "false",
          title: `${c.label}: ${c.definition || ""}${c.shortcut ? t("key_suffix", { key: c.shortcut }) : ""}`,
          "aria-keyshortcuts": c.shortcut || null,
          onclick: () => chooseCategory(c.id),
        },
        h("span", { class: "swatch", "aria-hidden": "true" }),
        h("span", { class: "cat-label" }, c.label),
        c.kind === "paired" ? h("span", { class: "cat-tag", title: t("tag_paired_title") }, t("tag_paired")) : null,
        c.kind === "relation" ? h("span", { class: "cat-tag", title: t("tag_link_title") }, t("tag_link")) : null,
        c.scope === "sentence" ? h("span", { class: "cat-tag", title: t("tag_sentence_title") }, t("tag_sentence")) : null,
        c.shortcut ? h("kbd", { "aria-hidden": "true" }, c.shortcut) : null,
      );
      setVar(btn, "--cat", c.color);
      return btn;
    });
    append(
      el.categoryButtons,
      h(
        "div",
        { class: "cat-group", role: "group", "aria-label": group ? group.label : t("group_other") },
        labelled
          ? h("span", { class: "cat-group-label", "aria-hidden": "true" }, group ? group.label : t("group_other"))
          : null,
        h("div", { class: "cat-group-buttons" }, buttons),
      ),
    );
  }
}

function chooseCategory(id) {
  if (state.readOnly) return;
  const cat = state.categories.get(id);
  if (!cat) return;
  const f = state.form;
  if (state.data.taxonomy.multi_label && f.category && f.suggestion === null) {
    // several categories on one mark: a button (or key) toggles its category
    if (f.category === id) [f.category, ...f.extra] = f.extra.length ? f.extra : [null];
    else if (f.extra.includes(id)) f.extra = f.extra.filter((x) => x !== id);
    else f.extra = [...f.extra, id];
    afterChoice();
    return;
  }
  f.category = id;
  f.extra = [];
  afterChoice();
}

function afterChoice() {
  const f = state.form;
  const cat = currentCategory();
  if (!cat) {
    f.paired = null;
    setHint(el.formHint, t("choose_category"));
    renderForm();
    page.renderText();
    return;
  }
  const id = cat.id;
  if (f.span && f.raw) {
    const text = state.texts[f.span.segment];
    const snapped = snapSpan(text, f.raw, cat);
    if (snapped) f.span = { segment: f.span.segment, ...snapped };
  }
  if (!pairKind()) f.paired = null;
  if (f.suggestion !== null && f.suggestionCategory !== id) f.suggestion = null;
  if (!f.span) setHint(el.formHint, t("select_words_now"));
  else if (pairKind() && !f.paired) setHint(el.formHint, pairedPrompt(pairing()));
  else setHint(el.formHint, t("category_chosen", { label: chosenLabels({ categories: [f.category, ...f.extra] }) }));
  renderForm();
  page.renderText();
}

function toWire(span) {
  const crossing = span.end_segment !== undefined && span.end_segment !== null;
  const wire = {
    segment: span.segment,
    start: state.conv[span.segment].toCp(span.start),
    end: state.conv[crossing ? span.end_segment : span.segment].toCp(span.end),
    text: spanText(span),
  };
  if (crossing) wire.end_segment = span.end_segment;
  return wire;
}

/** The chosen category whose pairing rule the mark follows (paired first, then relation). */
function pairing() {
  const kind = pairKind();
  return chosenCategories().find((c) => c.kind === kind) || currentCategory();
}

function missingAttribute() {
  return chosenAttributes().find((a) => a.required && state.form.attributes[a.id] === undefined);
}

function formReady() {
  const f = state.form;
  const cat = currentCategory();
  return Boolean(f.span && cat && (pairKind() !== "paired" || f.paired) && !missingAttribute());
}

function addAnnotation() {
  if (state.readOnly) return;
  const f = state.form;
  const cat = currentCategory();
  if (!f.span) return setHint(el.formHint, t("select_first"), "warn");
  if (!cat) return setHint(el.formHint, t("choose_first"), "warn");
  if (pairKind() === "paired" && !f.paired) return setHint(el.formHint, pairedPrompt(pairing()), "warn");
  const missing = missingAttribute();
  if (missing) return setHint(el.formHint, t("choose_attribute", { label: missing.label }), "warn");
  const clientId = uuid();
  const body = {
    ...toWire(f.span),
    category: cat.id,
    paired: pairKind() && f.paired ? toWire(f.paired) : null,
    comment: el.comment.value.trim(),
    client_id: clientId,
  };
  if (f.extra.length) body.categories = [cat.id, ...f.extra];
  const declared = chosenAttributes();
  if (declared.length) {
    body.attributes = {};
    for (const a of declared) if (f.attributes[a.id] !== undefined) body.attributes[a.id] = f.attributes[a.id];
  }
  if (f.suggestion !== null) body.suggestion_id = f.suggestion;
  const twin = findDuplicate(body);
  if (twin) {
    setHint(el.formHint, t("already_marked", { label: chosenLabels(body), text: quote(body.text) }), "warn");
    page.flashAnnotation(twin.key);
    return;
  }
  state.annotations.push({ ...body, key: clientId, id: null, pending: true });
  page.outbox.push({ kind: "add", client_id: clientId, body });
  if (f.suggestion !== null) {
    page.outbox.push({ kind: "event", suggestion: f.suggestion, event: "accepted", client_id: clientId });
  }
  resetForm();
  setHint(el.formHint, t("added", { label: chosenLabels(body), text: quote(body.text) }), "ok");
  page.renderAll();
}

export function resetForm() {
  state.form = emptyForm();
  el.comment.value = "";
  el.attributesRow.dataset.key = "-"; // cleared on the next render
}

function cancelForm() {
  resetForm();
  setHint(el.formHint, "");
  renderForm();
  page.renderText();
}

export function renderForm() {
  const f = state.form;
  const cat = currentCategory();
  el.spanField.value = f.span ? spanText(f.span) : "";
  el.clearSpan.disabled = !f.span;
  const chosen = [f.category, ...f.extra];
  for (const btn of el.categoryButtons.querySelectorAll(".cat-btn")) {
    btn.setAttribute("aria-pressed", chosen.includes(btn.dataset.category) ? "true" : "false");
  }
  const definition = cat ? `${cat.label}: ${cat.definition || ""}` : "";
  if (el.categoryDefinition.textContent !== definition) {
    el.categoryDefinition.textContent = definition;
    el.categoryDefinition.classList.remove("is-open");
  }
  el.categoryDefinition.title = definition;
  el.definitionToggle.hidden = !cat || !definitionCut();
  el.definitionToggle.textContent = el.categoryDefinition.classList.contains("is-open")
    ? t("definition_less")
    : t("definition_full");
  const kind = pairKind();
  const paired = Boolean(cat && kind);
  el.pairedRow.hidden = !paired;
  renderAttributes();
  if (paired) {
    el.pairedLabel.textContent = kind === "relation" ? t("linked_span_label") : t("earlier_span_label");
    el.pairedPrompt.textContent = f.paired ? "" : pairedPrompt(pairing());
    el.pairedPrompt.hidden = Boolean(f.paired);
    el.pairedField.value = f.paired ? spanText(f.paired) : "";
    el.pairedSegment.textContent = f.paired ? ` · ${spanSegments(f.paired)}` : "";
    el.clearPaired.disabled = !f.paired;
  }
  el.addButton.disabled = !formReady();
  // Narrow screens show the form as a sheet at the bottom of the window, opened by a span.
  const opening = Boolean(f.span || f.category) && !el.form.classList.contains("is-open");
  el.form.classList.toggle("is-open", Boolean(f.span || f.category));
  root.classList.toggle("form-open", el.form.classList.contains("is-open"));
  if (opening) keepSpanAboveSheet();
}

function chosenLabels(body) {
  return (body.categories || [body.category]).map((id) => state.categories.get(id)?.label || id).join(" + ");
}

/** The chosen categories' attributes: a group of radio buttons each (arrow keys move within
 * a group, Tab between groups), rebuilt only when the set of attributes changes. */
function renderAttributes() {
  const declared = chosenAttributes();
  const key = declared.map((a) => a.id).join(" ");
  el.attributesRow.hidden = declared.length === 0;
  if (el.attributesRow.dataset.key === key) return;
  el.attributesRow.dataset.key = key;
  clear(el.attributesRow);
  const f = state.form;
  for (const a of declared) {
    const values = a.kind === "choice" ? a.values : range(a.min, a.max);
    const name = `attribute-${a.id}`;
    append(
      el.attributesRow,
      h(
        "fieldset",
        { class: `attribute attribute-${a.kind}` },
        h("legend", {}, a.label, a.required ? null : h("span", { class: "optional" }, ` ${t("optional")}`)),
        h(
          "div",
          { class: "attribute-values" },
          values.map((value) =>
            h(
              "label",
              { class: "attribute-value" },
              h("input", {
                type: "radio",
                name,
                value: String(value),
                checked: f.attributes[a.id] === value,
                required: a.required,
                onchange: () => {
                  state.form.attributes[a.id] = value;
                  el.addButton.disabled = !formReady();
                },
              }),
              h("span", {}, String(value)),
            ),
          ),
        ),
      ),
    );
  }
}

function range(from, to) {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** On a narrow screen, keep the marked span in sight above the sheet that just opened. */
function keepSpanAboveSheet() {
  if (!window.matchMedia("(max-width: 800px)").matches) return;
  window.requestAnimationFrame(() => {
    const sheetTop = el.form.getBoundingClientRect().top;
    const mark = el.current.querySelector(".pending") || el.current;
    const below = mark.getBoundingClientRect().bottom + 12 - sheetTop;
    if (below > 0) window.scrollBy({ top: below, behavior: "instant" });
  });
}

/** Is the category definition cut off by its line clamp? */
function definitionCut() {
  const box = el.categoryDefinition;
  return box.classList.contains("is-open") || box.scrollHeight > box.clientHeight + 1;
}

/** The form's buttons, and the keys: Ctrl/Cmd+Enter adds, Escape cancels, a category's key chooses it. */
export function wireForm() {
  el.form.addEventListener("submit", (e) => {
    e.preventDefault();
    addAnnotation();
  });
  el.cancelButton.addEventListener("click", cancelForm);
  el.definitionToggle.addEventListener("click", () => {
    el.categoryDefinition.classList.toggle("is-open");
    renderForm();
  });
  el.clearSpan.addEventListener("click", () => {
    state.form.span = null;
    state.form.raw = null;
    state.form.paired = null;
    state.form.suggestion = null;
    renderForm();
    page.renderText();
  });
  el.clearPaired.addEventListener("click", () => {
    state.form.paired = null;
    if (pairKind()) setHint(el.formHint, pairedPrompt(pairing()));
    renderForm();
    page.renderText();
  });

  document.addEventListener("keydown", (e) => {
    if (!state.data || state.readOnly) return;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      addAnnotation();
      return;
    }
    if (e.key === "Escape") {
      // Inside a field (the comment), Escape only leaves the field: the form is kept.
      if (typingInField(e.target)) {
        e.preventDefault();
        e.target.blur();
        return;
      }
      if (state.form.span || state.form.category) {
        e.preventDefault();
        cancelForm();
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || typingInField(e.target)) return;
    const key = e.key.length === 1 ? e.key.toLowerCase() : null;
    if (!key) return;
    for (const c of state.categories.values()) {
      if (c.shortcut && c.shortcut.toLowerCase() === key) {
        e.preventDefault();
        chooseCategory(c.id);
        return;
      }
    }
  });
}
