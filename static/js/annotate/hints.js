// Detector suggestions ("hints") on the annotate page: which ones show in the current
// segment, the hint list with Use and Dismiss, and logging them as shown or dismissed (kept in
// the outbox until the next move's position update takes them along: no request of their
// own) or accepted (with its add). A hint is applied only by its Use button, or by
// Enter on a hint focused in the text: clicking or double-clicking hinted text selects text
// like anywhere else.

import { clear, h, setVar } from "../dom.js";
import { t } from "../i18n.js";
import { el, emptyForm, page, pairedPrompt, quote, saveSet, setHint, state, textAttrs } from "./state.js";

export function visibleSuggestions() {
  const list = (state.data && state.data.suggestions) || [];
  return list.filter(
    (s) =>
      s.segment === state.current &&
      !state.dismissed.has(String(s.id)) &&
      state.categories.has(s.category) &&
      !state.annotations.some(
        (a) => a.segment === s.segment && a.category === s.category && a.start < s.end && s.start < a.end,
      ),
  );
}

function useSuggestion(s) {
  if (state.readOnly) return;
  const conv = state.conv[s.segment];
  const span = { segment: s.segment, start: conv.toUtf16(s.start), end: conv.toUtf16(s.end) };
  state.form = { ...emptyForm(), raw: { start: span.start, end: span.end }, span, category: s.category, suggestion: s.id, suggestionCategory: s.category };
  const cat = state.categories.get(s.category);
  setHint(
    el.formHint,
    cat.kind === "paired" ? pairedPrompt(cat) : t("check_suggestion"),
  );
  page.renderForm();
  page.renderText();
  el.addButton.focus({ preventScroll: true });
}

function dismissSuggestion(s) {
  state.dismissed.add(String(s.id));
  saveSet("dismissed", state.dismissed);
  page.outbox.push({ kind: "events", suggestions: [s.id], event: "dismissed", defer: true });
  if (state.form.suggestion === s.id) page.resetForm();
  page.renderAll();
}

function logShown(list) {
  const fresh = list.filter((s) => !state.shown.has(String(s.id))).map((s) => s.id);
  if (!fresh.length) return;
  for (const id of fresh) state.shown.add(String(id));
  page.outbox.push({ kind: "events", suggestions: fresh, event: "shown", defer: true });
  saveSet("shown", state.shown);
}

export function renderHints(list) {
  clear(el.hintList);
  el.hints.hidden = state.readOnly || list.length === 0;
  for (const s of list) {
    const cat = state.categories.get(s.category);
    const item = h(
      "li",
      { class: "hint-item", dataset: { suggestionItem: String(s.id) } },
      setVar(h("span", { class: "swatch", "aria-hidden": "true" }), "--cat", cat.color),
      h("span", { class: "hint-cat" }, cat.label),
      h("q", { class: "hint-text", ...textAttrs() }, s.text),
      s.reason ? h("span", { class: "hint-reason" }, s.reason) : null,
      h(
        "button",
        { type: "button", class: "btn btn-small", "aria-label": t("use_label", { text: quote(s.text) }), onclick: () => useSuggestion(s) },
        t("use"),
      ),
      h(
        "button",
        { type: "button", class: "btn btn-small btn-quiet", "aria-label": t("dismiss_label", { text: quote(s.text) }), onclick: () => dismissSuggestion(s) },
        t("dismiss"),
      ),
    );
    el.hintList.append(item);
  }
  if (!state.readOnly) logShown(list);
}

/** Use a suggestion with Enter when it has focus in the text (clicks only select text). */
export function wireHints() {
  el.textArea.addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    const target = e.target instanceof Element ? e.target.closest("[data-suggestion]") : null;
    if (!target) return;
    const s = visibleSuggestions().find((x) => String(x.id) === target.dataset.suggestion);
    if (s) {
      e.preventDefault();
      useSuggestion(s);
    }
  });
}
