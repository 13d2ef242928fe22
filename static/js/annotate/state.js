// The annotate page's shared state: the page's configuration (from #annotate's data
// attributes), its DOM handles, the one state object, small helpers that every part of the
// page uses, and `page`, the table through which the parts call one another.

import { byId } from "../dom.js";
import { t } from "../i18n.js";
import { snapToSentence, snapToWords } from "../offsets.js";

export const root = byId("annotate");
export const API = root.dataset.api;
export const DONE_URL = root.dataset.doneUrl;
export const TOKEN = root.dataset.token;
// The documents' direction and language (the study's settings or the document's metadata,
// app/documents/language.py): set on every element that shows document text.
export const TEXT_DIR = root.dataset.textDir || null;
export const TEXT_LANG = root.dataset.textLang || null;

/** Attributes for an element holding document text (for dom.js's h()). */
export function textAttrs() {
  return { dir: TEXT_DIR || "auto", lang: TEXT_LANG };
}

export const el = {
  progressText: byId("progress-text"),
  progressBar: byId("progress-bar"),
  saveStatus: byId("save-status"),
  banner: byId("banner"),
  instructions: byId("instructions"),
  instructionsBody: byId("instructions-body"),
  sources: byId("sources"),
  sourcesBody: byId("sources-body"),
  contextSection: byId("context-section"),
  context: byId("context"),
  currentLabel: byId("current-label"),
  current: byId("current"),
  currentHeading: byId("current-heading"),
  textArea: byId("text-area"),
  kbStatus: byId("kb-status"),
  listHeading: byId("annotations-heading"),
  hints: byId("hints"),
  hintList: byId("hint-list"),
  form: byId("annot-form"),
  spanField: byId("span-field"),
  clearSpan: byId("clear-span"),
  categoryButtons: byId("category-buttons"),
  categoryDefinition: byId("category-definition"),
  definitionToggle: byId("definition-toggle"),
  segmentJump: byId("segment-jump"),
  pairedRow: byId("paired-row"),
  pairedLabel: byId("paired-label"),
  attributesRow: byId("attributes-row"),
  pairedPrompt: byId("paired-prompt"),
  pairedField: byId("paired-field"),
  pairedSegment: byId("paired-segment"),
  clearPaired: byId("clear-paired"),
  comment: byId("comment-field"),
  addButton: byId("add-button"),
  cancelButton: byId("cancel-button"),
  formHint: byId("form-hint"),
  prev: byId("prev-button"),
  next: byId("next-button"),
  submit: byId("submit-button"),
  navHint: byId("nav-hint"),
  list: byId("annotation-list"),
  listEmpty: byId("annotation-empty"),
  listCount: byId("annotation-count"),
  entityPanel: byId("entity-panel"),
  entityList: byId("entity-list"),
  entityEmpty: byId("entity-empty"),
};

export const state = {
  data: null,
  texts: [],
  conv: [],
  current: 0,
  readOnly: false,
  categories: new Map(),
  annotations: [], // {key, id, segment, start, end (code points), text, category, paired, comment, pending}
  idByKey: new Map(),
  form: emptyForm(),
  dismissed: new Set(),
  shown: new Set(),
  submitting: false,
  kb: null, // the keyboard cursor: {anchor, head} as {segment, index} into its words (keyboard.js)
};

export function emptyForm() {
  // extra: a multi-label mark's further categories; attributes: {id: value} as chosen
  return { raw: null, span: null, category: null, extra: [], paired: null, suggestion: null, attributes: {} };
}

/** A mark's categories (a multi-label one has several). */
export function labelsOf(mark) {
  return mark.categories || [mark.category];
}

/** The categories chosen in the form, in order. */
export function chosenCategories() {
  const f = state.form;
  return [f.category, ...f.extra].map((id) => state.categories.get(id)).filter(Boolean);
}

/** How the chosen categories take a second span: "paired" (an earlier span, required),
 * "relation" (another span anywhere, optional) or null (none). */
export function pairKind() {
  const kinds = chosenCategories().map((c) => c.kind);
  return kinds.includes("paired") ? "paired" : kinds.includes("relation") ? "relation" : null;
}

/** The attributes the chosen categories declare, each once (first declaration). */
export function chosenAttributes() {
  const out = new Map();
  for (const c of chosenCategories()) for (const a of c.attributes || []) if (!out.has(a.id)) out.set(a.id, a);
  return [...out.values()];
}

export function uuid() {
  if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
  const b = window.crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

export function loadSet(name) {
  try {
    return new Set(JSON.parse(window.localStorage.getItem(`marginalia.${name}.${TOKEN}`) || "[]"));
  } catch {
    return new Set();
  }
}

export function saveSet(name, set) {
  try {
    window.localStorage.setItem(`marginalia.${name}.${TOKEN}`, JSON.stringify([...set]));
  } catch {
    // Not critical: at worst a dismissed hint shows again.
  }
}

/** Is this key event's target a field the worker types in (keys there are text, not commands)? */
export function typingInField(target) {
  return (
    target instanceof Element && target.closest("input, textarea, select, [contenteditable='true']") !== null
  );
}

/** The live annotation with exactly this span, category and paired span (code points), if any. */
export function findDuplicate(body) {
  const samePair = (a, b) =>
    (!a && !b) || (a && b && a.segment === b.segment && a.start === b.start && a.end === b.end);
  return state.annotations.find(
    (a) =>
      a.segment === body.segment &&
      a.start === body.start &&
      a.end === body.end &&
      labelsOf(a).some((c) => labelsOf(body).includes(c)) &&
      samePair(a.paired, body.paired),
  );
}

export const segLabel = (i) => t("segment_n", { n: i + 1 });
/** Where a span lies: "segment 3", or "segments 3–4" for an earlier span across a break. */
export const spanSegments = (span) =>
  span.end_segment === undefined || span.end_segment === null || span.end_segment === span.segment
    ? segLabel(span.segment)
    : t("segments_n_m", { n: span.segment + 1, m: span.end_segment + 1 });
export const quote = (text) => t("quote", { text });

export function setHint(target, message, tone = "info") {
  target.textContent = message || "";
  target.dataset.tone = tone;
}

export function showStatus(kind, detail) {
  el.saveStatus.dataset.state = kind;
  el.saveStatus.textContent = kind === "error" && detail ? t("status_error_detail", { detail }) : t(`status_${kind}`);
}

/**
 * Run `fn` once the next frame has been painted: work that nothing on the first screen
 * needs (a long jump menu, the entity panel) goes after the text is on screen.
 */
export function afterPaint(fn) {
  requestAnimationFrame(() => setTimeout(fn, 0));
}

export function clampSegment(i) {
  return Math.max(0, Math.min(Number(i) || 0, state.texts.length - 1));
}

export function currentCategory() {
  return state.form.category ? state.categories.get(state.form.category) : null;
}

export function snapSpan(text, raw, cat) {
  if (cat && cat.scope === "sentence") return snapToSentence(text, raw.start, raw.end);
  return snapToWords(text, raw.start, raw.end, TEXT_LANG);
}

export function pairedPrompt(cat) {
  return cat.paired_prompt || t("paired_prompt");
}

export function spanText(span) {
  if (span.end_segment === undefined || span.end_segment === null) {
    return state.texts[span.segment].slice(span.start, span.end);
  }
  // across segments: the pieces joined by one space (app/annotation/pairing.py)
  const pieces = [state.texts[span.segment].slice(span.start)];
  for (let s = span.segment + 1; s < span.end_segment; s += 1) pieces.push(state.texts[s]);
  pieces.push(state.texts[span.end_segment].slice(0, span.end));
  return pieces.join(" ");
}

/** The part of ``span`` (UTF-16 offsets) inside ``segment``, or null. */
export function pieceIn(span, segment) {
  const last = span.end_segment === undefined || span.end_segment === null ? span.segment : span.end_segment;
  if (segment < span.segment || segment > last) return null;
  const start = segment === span.segment ? span.start : 0;
  const end = segment === last ? span.end : state.texts[segment].length;
  return end > start ? { start, end } : null;
}

/**
 * What the page's parts need from one another, bound once by the entry module (annotate.js)
 * before anything runs. The feature modules (selection, form, hints, segments, list, nav)
 * import only this module and the generic ones beside annotate.js, never each other or the
 * controller, so there are no import cycles; they reach across through `page` instead.
 */
export const page = {
  outbox: null, // the Outbox of this assignment's writes (controller.js)
  renderAll: null, // controller.js
  renderText: null, // segments.js
  showSegment: null, // segments.js
  renderForm: null, // form.js
  resetForm: null, // form.js
  renderHints: null, // hints.js
  visibleSuggestions: null, // hints.js
  goTo: null, // nav.js
  flashAnnotation: null, // list.js
  takeActive: null, // timer.js
  holdForFeedback: null, // practice.js
  renderPractice: null, // practice.js
  removeAnnotation: null, // list.js
  keyboardMoved: null, // keyboard.js
  keyboardRange: null, // keyboard.js
};
