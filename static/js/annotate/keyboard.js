// Marking without a mouse. The text area (#text-area, one tab stop) holds a keyboard cursor
// over the segments on screen (the context and the current segment): the arrow keys move it
// by word and Shift with them extends the selection, up and down by sentence; Home and End
// go to the start and end of the cursor's sentence, and pressed there to the segment's;
// "/" then the first letters of a word jumps to the next word on screen starting with them
// (type-ahead; typeahead.js says why "/"). Enter or Space takes the selection as the span,
// or as the earlier, paired span while a paired category waits for one (applySelection, the
// path a mouse selection takes); Delete removes the annotation under the cursor. Category keys,
// Ctrl+Enter, Escape and n / p work as everywhere on the page. Each move is said in
// #kb-status, a polite live region. Words are the browser's (Intl.Segmenter: Chinese moves
// by word, an emoji family or a letter with its accents is one stop), offsets UTF-16 like
// the rest of the page; in right-to-left text the left arrow goes forward.

import { t } from "../i18n.js";
import { sentences, wordStops } from "../offsets.js";
import { applySelection, awaitingPaired } from "./selection.js";
import { TEXT_LANG, el, page, quote, segLabel, state } from "./state.js";
import { extend, fold, nextMatch, target } from "./typeahead.js";

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

/** Home: the first word of the head's sentence; already there, the segment's first word. */
function sentenceHome(p) {
  const { all, at } = sentenceAt(p);
  return p.index > all[at].first ? point(p.segment, all[at].first) : firstOf(p.segment);
}

/** End: the last word of the head's sentence; already there, the segment's last word. */
function sentenceEnd(p) {
  const { all, at } = sentenceAt(p);
  return p.index < all[at].last ? point(p.segment, all[at].last) : lastOf(p.segment);
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
  } else if (key === "Home") head = sentenceHome(kb.head);
  else if (key === "End") head = sentenceEnd(kb.head);
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

// --- type-ahead ("/" then the first letters of a word) ------------------------------------

let finding = null; // while a find runs: {run} (typeahead.js's run, null before a letter)
const foldedCache = new Map(); // segment -> its stops' words, folded

/** The segments on screen, first to last: the context drawn and the current segment. */
function segmentsOnScreen() {
  let first = Math.min(state.current, state.kb.head.segment);
  for (const node of el.textArea.querySelectorAll(".seg-text[data-seg]")) {
    first = Math.min(first, Number(node.dataset.seg));
  }
  const out = [];
  for (let s = first; s <= state.current; s += 1) out.push(s);
  return out;
}

/** The words on screen in reading order: their points and folded texts, and a point's index. */
function wordsOnScreen() {
  const points = [];
  const words = [];
  const base = new Map();
  for (const segment of segmentsOnScreen()) {
    if (!foldedCache.has(segment)) {
      const text = state.texts[segment];
      foldedCache.set(segment, stops(segment).map((w) => fold(text.slice(w.start, w.end), TEXT_LANG)));
    }
    base.set(segment, points.length);
    foldedCache.get(segment).forEach((word, index) => {
      points.push(point(segment, index));
      words.push(word);
    });
  }
  return { points, words, indexOf: (p) => base.get(p.segment) + p.index };
}

/** The text's words in a line of the interface's language, each in its own direction (a
 * Unicode isolate): a Hebrew word and its prefix stay in their order in an English line. */
const isolated = (text) => `\u2068${text}\u2069`;

function startFind() {
  finding = { run: null };
  page.renderText();
  say(t("kb_find_start"));
}

function stopFind() {
  finding = null;
}

/** Look for the run's prefix; the cursor goes to the match, and the status says where. */
function findRun() {
  const { run } = finding;
  if (!run) {
    say(t("kb_find_start"));
    return;
  }
  const { points, words, indexOf } = wordsOnScreen();
  const { prefix, from } = target(run, state.kb.head);
  const found = words.length ? nextMatch(words, prefix, indexOf(from)) : null;
  if (!found) {
    say(t("kb_find_none", { prefix: quote(isolated(run.prefix)) }));
    return;
  }
  const at = points[found.index];
  setCursor({ anchor: at, head: at });
  const word = isolated(textOf(rangeOf(state.kb)));
  const where = { prefix: quote(isolated(run.prefix)), word, segment: segLabel(at.segment) };
  say(t(found.wrapped ? "kb_found_wrapped" : "kb_found", where));
}

const IGNORED = ["Shift", "Control", "Alt", "AltGraph", "Meta", "CapsLock", "Dead", "Process", "Unidentified"];

/** A key while a find runs. Letters (any one character but Space and "/"), Backspace and
 * Escape are the find's, and no other part of the page sees them (no category key, no n);
 * "/" starts it anew; a modifier alone changes nothing; any other key ends it and goes on
 * as always. True when the find took the key. */
function findKey(e) {
  if (IGNORED.includes(e.key)) return true;
  const letter = !e.ctrlKey && !e.metaKey && !e.altKey && [...e.key].length === 1 && e.key !== " ";
  if (!letter && e.key !== "Backspace" && e.key !== "Escape") {
    stopFind();
    return false;
  }
  e.preventDefault();
  e.stopPropagation();
  if (e.key === "Escape") {
    stopFind();
    announce("word", state.kb);
  } else if (e.key === "/") startFind();
  else if (e.key === "Backspace") {
    const { run } = finding;
    const letters = run ? [...run.prefix].slice(0, -1) : [];
    if (run && letters.length === 0) setCursor({ anchor: run.from, head: run.from });
    finding.run = letters.length ? { ...run, prefix: letters.join(""), last: Date.now() } : null;
    findRun();
  } else {
    const folded = fold(e.key, TEXT_LANG);
    if (!folded) return true; // a mark alone adds nothing to a prefix
    finding.run = extend(finding.run, folded, state.kb.head, Date.now());
    findRun();
  }
  return true;
}

function onKey(e) {
  if (e.target !== el.textArea || !state.data) return;
  if (finding && state.kb && findKey(e)) return;
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const moves = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"];
  const acts = ["Enter", " ", "Delete"];
  const find = e.key === "/";
  if (!moves.includes(e.key) && !acts.includes(e.key) && !find) return;
  // After a click in the text, Space and Enter keep their usual meaning (Space scrolls)
  // until an arrow key (or "/") brings the cursor out.
  if (acts.includes(e.key) && !el.textArea.classList.contains("kb-active")) return;
  e.preventDefault();
  el.textArea.classList.add("kb-active");
  state.kb = startingPoint();
  if (!state.kb) return;
  if (find) startFind();
  else if (moves.includes(e.key)) move(e);
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
    stopFind();
  });
  // Leaving the text empties the status line, which then takes no room: never under a
  // pressed pointer, or the page would shift between the press and the release and the
  // release miss what was pressed (Submit, below the text). Emptied once the click is out.
  let pointerDown = false;
  document.addEventListener("pointerdown", () => (pointerDown = true), { capture: true });
  for (const name of ["pointerup", "pointercancel"]) {
    document.addEventListener(name, () => (pointerDown = false), { capture: true });
  }
  const leftText = () => {
    if (document.activeElement !== el.textArea) say("");
  };
  el.textArea.addEventListener("blur", () => {
    stopFind();
    if (!pointerDown) leftText();
    else document.addEventListener("pointerup", () => setTimeout(leftText, 0), { once: true });
  });
}
