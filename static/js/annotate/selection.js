// Selecting text on the annotate page: a selection in the current segment becomes the form's
// span (snapped to words, or to the sentence for sentence categories); for a paired
// category, a second selection before it becomes the earlier, paired text. Mouse and touch
// selections come through here; the keyboard cursor (keyboard.js) uses applySelection too.

import { t } from "../i18n.js";
import { snapToWords } from "../offsets.js";
import { readSelection } from "../textview.js";
import {
  TEXT_LANG,
  chosenCategories,
  currentCategory,
  el,
  page,
  pairedPrompt,
  pairKind,
  setHint,
  snapSpan,
  state,
} from "./state.js";

/** Is the form waiting for the earlier text of a paired category (or the other span of a
 * relation category: optional, anywhere)? */
export function awaitingPaired() {
  const f = state.form;
  return Boolean(pairKind() && f.span && !f.paired);
}

/** The chosen category whose pairing rule applies (paired first, then relation). */
function pairRule() {
  const kind = pairKind();
  return chosenCategories().find((c) => c.kind === kind) || currentCategory();
}

/** May the second span run across segment breaks? */
function mayCross() {
  const rule = pairRule();
  return pairKind() === "relation" || Boolean(rule && rule.pair_across_segments);
}

/** A selection was made in the text with the mouse or touch. */
function onSelection() {
  if (state.readOnly || !state.data) return;
  const across = awaitingPaired() && mayCross();
  applySelection(readSelection(el.textArea, { across }));
}

/**
 * A selection ({segment, start, end, end_segment?} in UTF-16 units, from the mouse or the
 * keyboard cursor) becomes the form's span, or its earlier, paired span when a paired
 * category waits for one; otherwise a message says why not.
 */
export function applySelection(sel) {
  if (state.readOnly || !state.data || !sel) return;
  if (sel.error) {
    setHint(el.formHint, sel.error, "warn");
    return;
  }
  const f = state.form;
  let cat = currentCategory();
  const pairing = awaitingPaired();
  const anywhere = pairKind() === "relation"; // a relation's other span: before, after, the same
  if (sel.end_segment !== undefined && !(pairing && mayCross())) {
    setHint(el.formHint, t("single_segment"), "warn");
    return;
  }
  const text = state.texts[sel.segment];
  if (pairing && sel.end_segment !== undefined) {
    const last = state.texts[sel.end_segment];
    const head = snapToWords(text, sel.start, text.length, TEXT_LANG);
    const tail = snapToWords(last, 0, sel.end, TEXT_LANG);
    if (!head || !tail) return;
    const before =
      sel.end_segment < f.span.segment || (sel.end_segment === f.span.segment && tail.end <= f.span.start);
    if (!before && !anywhere) {
      setHint(el.formHint, t("earlier_before_span"), "warn");
      window.getSelection().removeAllRanges();
      return;
    }
    f.paired = { segment: sel.segment, start: head.start, end: tail.end, end_segment: sel.end_segment };
    setHint(el.formHint, t(anywhere ? "linked_taken" : "paired_taken"), "ok");
  } else if (pairing) {
    const snapped = snapToWords(text, sel.start, sel.end, TEXT_LANG);
    if (!snapped) return;
    const before =
      sel.segment < f.span.segment || (sel.segment === f.span.segment && snapped.end <= f.span.start);
    if (!before && !anywhere) {
      setHint(el.formHint, t("earlier_before_span_where"), "warn");
      window.getSelection().removeAllRanges();
      return;
    }
    f.paired = { segment: sel.segment, ...snapped };
    setHint(el.formHint, t(anywhere ? "linked_taken" : "paired_taken"), "ok");
  } else {
    if (sel.segment !== state.current) {
      setHint(el.formHint, t("mark_current_segment"), "warn");
      window.getSelection().removeAllRanges();
      return;
    }
    if (f.suggestion !== null) cat = null; // a used hint's category does not stick to a new span
    const snapped = snapSpan(text, sel, cat);
    if (!snapped) return;
    if (!cat) {
      f.category = null;
      f.extra = [];
    }
    f.raw = { start: sel.start, end: sel.end };
    f.span = { segment: sel.segment, ...snapped };
    f.paired = null;
    f.suggestion = null;
    if (!cat) setHint(el.formHint, t("choose_category"));
    else if (pairKind()) setHint(el.formHint, pairedPrompt(pairRule()));
    else setHint(el.formHint, t("span_taken_ready"));
  }
  window.getSelection().removeAllRanges();
  page.renderForm();
  page.renderText();
}

/** Read selections in the text: mouse, keyboard (shift + arrows) and touch. */
export function wireSelection() {
  document.addEventListener("mouseup", () => {
    setTimeout(() => {
      const sel = window.getSelection();
      if (!sel || sel.isCollapsed) return;
      if (el.textArea.contains(sel.anchorNode) || el.textArea.contains(sel.focusNode)) onSelection();
    }, 0);
  });
  // Chromium starts no text selection on a drag that begins inside a focusable element, and
  // mentions and suggestions are focusable (keyboard cues). Make the pressed one unfocusable
  // for the duration of the press so a drag over a name selects it like any other text.
  el.textArea.addEventListener(
    "pointerdown",
    (e) => {
      const target = e.target instanceof Element ? e.target.closest(".seg-text [tabindex]") : null;
      if (!target) return;
      const tabindex = target.getAttribute("tabindex");
      target.removeAttribute("tabindex");
      const restore = () => target.setAttribute("tabindex", tabindex);
      document.addEventListener("pointerup", restore, { once: true });
      document.addEventListener("pointercancel", restore, { once: true });
    },
    true,
  );
  // Touch screens select with a long press and handles, and send no mouseup: read the
  // selection once it has stayed still for a moment.
  let lastPointer = "mouse";
  let touchTimer = null;
  document.addEventListener("pointerdown", (e) => {
    lastPointer = e.pointerType;
  });
  document.addEventListener("selectionchange", () => {
    if (lastPointer !== "touch") return;
    clearTimeout(touchTimer);
    touchTimer = setTimeout(() => {
      const sel = window.getSelection();
      if (sel && !sel.isCollapsed && el.textArea.contains(sel.anchorNode)) onSelection();
    }, 700);
  });
  el.textArea.addEventListener("keyup", (e) => {
    if (e.shiftKey) onSelection();
  });
}
