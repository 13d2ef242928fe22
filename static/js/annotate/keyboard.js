// Marking without a mouse. The text area (#text-area, one tab stop) holds a keyboard cursor
// over the segments on screen (the context and the current segment): the arrow keys move it
// by word and Shift with them extends the selection, up and down by sentence, Home and End
// to the segment's ends; Enter or Space takes the selection as the span, or as the earlier,
// paired span while a paired category waits for one (applySelection, the path a mouse
// selection takes); Delete removes the annotation under the cursor. Category keys, Ctrl+Enter,
// Escape and n / p work as everywhere on the page. Each move is said in #kb-status, a polite
// live region. Words are the browser's (Intl.Segmenter: Chinese moves by word, an emoji
// family or a letter with its accents is one stop), offsets UTF-16 like the rest of the page;
// in right-to-left text the left arrow goes forward.

import { t } from "../i18n.js";
import { sentences, wordStops } from "../offsets.js";
import { applySelection, awaitingPaired } from "./selection.js";
import { TEXT_LANG, el, page, quote, segLabel, state } from "./state.js";

const stopsCache = new Map(); // segment -> [{start, end}] (UTF-16)

function stops(segment) {
  if (!stopsCache.has(segment)) stopsCache.set(segment, wordStops(state.texts[segment], TEXT_LANG));
  return stopsCache.get(segment);
}

/** The nearest segment from `segment` in `step` direction that has a stop and is on screen. */
function segmentWithStops(segment, step) {
  for (let s = segment; s >= 0 && s <= state.current; s += step) if (stops(s).length) return s;
  return null;
}

function point(segment, index) {
  return { segment, index };
}

function firstOf(segment) {
  return point(segment, 0);
}

function lastOf(segment) {
  return point(segment, stops(segment).length - 1);
}

const before = (a, b) => a.segment < b.segment || (a.segment === b.segment && a.index < b.index);

/** The selection under the cursor as {segment, start, end, end_segment?} (UTF-16), or null. */
export function keyboardRange() {
  const kb = state.kb;
  if (!kb || kb.head.segment > state.current || kb.anchor.segment > state.current) return null;
  return rangeOf(kb);
}

function rangeOf(kb) {
  const [first, last] = before(kb.head, kb.anchor) ? [kb.head, kb.anchor] : [kb.anchor, kb.head];
  const range = {
    segment: first.segment,
    start: stops(first.segment)[first.index].start,
    end: stops(last.segment)[last.index].end,
  };
  if (last.segment !== first.segment) range.end_segment = last.segment;
  return range;
}

function textOf(range) {
  if (range.end_segment === undefined) return state.texts[range.segment].slice(range.start, range.end);
  const pieces = [state.texts[range.segment].slice(range.start)];
  for (let s = range.segment + 1; s < range.end_segment; s += 1) pieces.push(state.texts[s]);
  pieces.push(state.texts[range.end_segment].slice(0, range.end));
  return pieces.join(" ");
}

/** Where the cursor starts: where it was, else the marked span while its earlier text is
 * awaited, else the current segment's first word. */
function startingPoint() {
  const kb = state.kb;
  const valid = (p) => p.segment <= state.current && Boolean(stops(p.segment)[p.index]);
  if (kb && valid(kb.head) && valid(kb.anchor)) return kb;
  const f = state.form;
  if (awaitingPaired() && f.span) {
    const index = Math.max(0, stops(f.span.segment).findIndex((s) => s.end > f.span.start));
    return { anchor: point(f.span.segment, index), head: point(f.span.segment, index) };
  }
  const segment = segmentWithStops(state.current, -1);
  if (segment === null) return null;
  return { anchor: firstOf(segment), head: firstOf(segment) };
}

/** The annotations whose span covers the cursor's word (in its segment). */
function annotationsAt(p) {
  const word = stops(p.segment)[p.index];
  const conv = state.conv[p.segment];
  return state.annotations.filter(
    (a) => a.segment === p.segment && conv.toUtf16(a.start) < word.end && word.start < conv.toUtf16(a.end),
  );
}

function say(message) {
  el.kbStatus.textContent = message;
}

/** The text of the sentence the cursor's head is in (its punctuation included). */
function sentenceText(p) {
  const word = stops(p.segment)[p.index];
  const all = sentences(state.texts[p.segment]);
  const found = all.find((s) => word.start >= s.start && word.end <= s.end);
  return found ? state.texts[p.segment].slice(found.start, found.end) : textOf(rangeOf({ anchor: p, head: p }));
}

function announce(kind, previous) {
  const kb = state.kb;
  const range = rangeOf(kb);
  let message;
  if (kind === "sentence") message = sentenceText(kb.head);
  else if (range.end_segment !== undefined || kb.anchor.index !== kb.head.index) {
    message = t("kb_selected", { text: quote(textOf(range)) });
  } else {
    message = textOf(range);
    const labels = annotationsAt(kb.head).map((a) => (state.categories.get(a.category) || { label: a.category }).label);
    if (labels.length) message = t("kb_marked", { text: message, labels: labels.join(", ") });
  }
  if (!previous || previous.head.segment !== kb.head.segment) {
    message = `${segLabel(kb.head.segment)}: ${message}`;
  }
  say(message);
}

function setCursor(next, kind = "word") {
  const previous = state.kb;
  state.kb = next;
  page.renderText();
  const marks = el.textArea.querySelectorAll(".kb-sel");
  const mark = before(next.head, next.anchor) ? marks[0] : marks[marks.length - 1];
  if (mark) mark.scrollIntoView({ block: "nearest", inline: "nearest" });
  announce(kind, previous);
}

/** One word forward (step 1) or back (-1) from `p`, across segments; null at an end. */
function stepWord(p, step) {
  const index = p.index + step;
  if (index >= 0 && index < stops(p.segment).length) return point(p.segment, index);
  const segment = segmentWithStops(p.segment + step, step);
  if (segment === null) return null;
  return step > 0 ? firstOf(segment) : lastOf(segment);
}

/** The sentences of a segment as stop indices: [{first, last}] in reading order. */
function sentencesOf(segment) {
  const list = stops(segment);
  const out = [];
  for (const s of sentences(state.texts[segment])) {
    const inside = list.map((w, i) => [w, i]).filter(([w]) => w.start >= s.start && w.end <= s.end);
    if (inside.length) out.push({ first: inside[0][1], last: inside[inside.length - 1][1] });
  }
  // words outside every sentence range (none in practice) join the previous one
  return out.length ? out : [{ first: 0, last: list.length - 1 }];
}

function sentenceAt(p) {
  const all = sentencesOf(p.segment);
  const at = all.findIndex((s) => p.index >= s.first && p.index <= s.last);
  return { all, at: at < 0 ? 0 : at };
}

/** The first word of the next (step 1) or this-or-previous (step -1) sentence. */
function sentenceStart(p, step) {
  const { all, at } = sentenceAt(p);
  if (step > 0) {
    if (at + 1 < all.length) return point(p.segment, all[at + 1].first);
    const segment = segmentWithStops(p.segment + 1, 1);
    return segment === null ? null : firstOf(segment);
  }
  if (p.index > all[at].first) return point(p.segment, all[at].first);
  if (at > 0) return point(p.segment, all[at - 1].first);
  const segment = segmentWithStops(p.segment - 1, -1);
  if (segment === null) return null;
  const prev = sentencesOf(segment);
  return point(segment, prev[prev.length - 1].first);
}

/** Shift+down / Shift+up: the head to the end of its sentence (or the next one's), or to
 * its start (or the previous one's). */
function sentenceEdge(p, step) {
  const { all, at } = sentenceAt(p);
  if (step > 0) {
    if (p.index < all[at].last) return point(p.segment, all[at].last);
    if (at + 1 < all.length) return point(p.segment, all[at + 1].last);
    const segment = segmentWithStops(p.segment + 1, 1);
    return segment === null ? null : point(segment, sentencesOf(segment)[0].last);
  }
  return sentenceStart(p, -1);
}

function isRtl(segment) {
  const node = el.textArea.querySelector(`.seg-text[data-seg="${segment}"]`);
  return Boolean(node) && getComputedStyle(node).direction === "rtl";
}

function move(e) {
  const kb = state.kb;
  const extend = e.shiftKey;
  let head = null;
  let kind = "word";
  let key = e.key;
  if ((key === "ArrowLeft" || key === "ArrowRight") && isRtl(kb.head.segment)) {
    key = key === "ArrowLeft" ? "ArrowRight" : "ArrowLeft";
  }
  if (key === "ArrowRight") head = stepWord(kb.head, 1);
  else if (key === "ArrowLeft") head = stepWord(kb.head, -1);
  else if (key === "ArrowDown") {
    head = extend ? sentenceEdge(kb.head, 1) : sentenceStart(kb.head, 1);
    kind = extend ? "word" : "sentence";
  } else if (key === "ArrowUp") {
    head = extend ? sentenceEdge(kb.head, -1) : sentenceStart(kb.head, -1);
    kind = extend ? "word" : "sentence";
  } else if (key === "Home") head = firstOf(kb.head.segment);
  else if (key === "End") head = lastOf(kb.head.segment);
  if (!head) {
    const forward = ["ArrowRight", "ArrowDown", "End"].includes(key);
    say(t(forward ? "kb_end" : "kb_start"));
    return;
  }
  setCursor({ anchor: extend ? kb.anchor : head, head }, kind);
}

/** Enter / Space: the selection becomes the span or the earlier text (or a message why not;
 * the form hint, a live region too, says what comes next). */
function take() {
  const range = rangeOf(state.kb);
  const { span, paired } = state.form;
  applySelection(range);
  const f = state.form;
  const text = quote(textOf(range));
  if (f.paired && f.paired !== paired) say(t("kb_paired_taken", { text }));
  else if (f.span && f.span !== span) say(t("kb_span_taken", { text }));
  else say(el.formHint.textContent);
}

function remove() {
  const found = annotationsAt(state.kb.head);
  if (found.length === 0) return say(t("kb_nothing_here"));
  if (found.length > 1) return say(t("kb_several_here"));
  page.removeAnnotation(found[0].key);
  say(el.formHint.textContent);
}

function onKey(e) {
  if (e.target !== el.textArea || !state.data || e.altKey || e.ctrlKey || e.metaKey) return;
  const moves = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"];
  const acts = ["Enter", " ", "Delete"];
  if (!moves.includes(e.key) && !acts.includes(e.key)) return;
  // After a click in the text, Space and Enter keep their usual meaning (Space scrolls)
  // until an arrow key brings the cursor out.
  if (acts.includes(e.key) && !el.textArea.classList.contains("kb-active")) return;
  e.preventDefault();
  el.textArea.classList.add("kb-active");
  state.kb = startingPoint();
  if (!state.kb) return;
  if (moves.includes(e.key)) move(e);
  else if (state.readOnly) say(t("kb_read_only"));
  else if (e.key === "Delete") remove();
  else take();
}

/** After a move to another segment with the text area focused: the cursor to its start. */
export function keyboardMoved() {
  el.textArea.focus({ preventScroll: true });
  if (!stops(state.current).length) {
    state.kb = null;
    say(segLabel(state.current));
    return;
  }
  state.kb = { anchor: firstOf(state.current), head: firstOf(state.current) };
  el.textArea.classList.add("kb-active");
  page.renderText();
  say(`${segLabel(state.current)}: ${sentenceText(state.kb.head)}`);
}

export function wireKeyboard() {
  let pressed = false;
  el.textArea.addEventListener("keydown", onKey);
  el.textArea.addEventListener("focus", () => {
    if (!state.data || pressed) return;
    state.kb = startingPoint();
    if (!state.kb) return;
    el.textArea.classList.add("kb-active");
    page.renderText();
    announce("word", null);
  });
  // The cursor shows (CSS) while the keyboard works the text; a mouse press hides it again
  // (only a class: redrawing the text under a starting drag would lose its selection).
  el.textArea.addEventListener("pointerdown", () => {
    pressed = true;
    document.addEventListener("pointerup", () => (pressed = false), { once: true });
    el.textArea.classList.remove("kb-active");
  });
  el.textArea.addEventListener("blur", () => say(""));
}
