// The text on the annotate page: the context box (the segments before the current one) and
// the current segment, each drawn by textview.js from layered ranges (mentions,
// annotations, paired spans, the pending selection, suggestions). The context takes the
// height it needs (the page scrolls, no inner letterbox); moving to a segment scrolls the
// page so the current segment starts at the top of the window.
//
// A book-length document has thousands of segments: the context draws only what is seen.
// After a move it holds the CONTEXT_WINDOW segments before the current one (and any earlier
// one the page needs on screen: the keyboard cursor's, a pending paired span's); a "show
// earlier" button above them draws CONTEXT_WINDOW more, and presses itself when the reader
// scrolls up to within NEAR pixels of it (the reading position stays put). Only the reader's
// scroll upwards does (one within READER_SCROLL_MS of a wheel, a touch, a scrolling key or a
// press on the scrollbar): the page's own scrolls (to the current segment, keeping the
// reading position, an entity's smooth scroll still running after a move) and its layout
// never do, so a reader who has not scrolled up has exactly the window, whatever the fonts
// and the window's height (an IntersectionObserver pressed it on load whenever the window's
// segments were shorter than the viewport). showSegment(i) draws back to
// segment i (the jump menu, an entity's first mention). Each drawn segment keeps its ranges'
// signature and is redrawn only when they change, and the ranges come from per-segment
// indexes: a move, a selection or an add costs the same at segment 1,500 as at segment 1.

import { clear, h } from "../dom.js";
import { t } from "../i18n.js";
import { renderSegmentText } from "../textview.js";
import { el, page, pairKind, pieceIn, root, state } from "./state.js";

export const CONTEXT_WINDOW = 20;

let entityById = new Map();
let mentionsBySegment = new Map();
let indexed = null; // the state.data the mention index was built for
const drawn = new Map(); // context segment -> {node, text, signature}
let from = 0; // the first context segment drawn
let drawnFor = -1; // the current segment `from` was set for
let current = { segment: -1, signature: null };
let more = null; // the "show earlier" button
const NEAR = 300; // px above the viewport within which a scroll upwards presses it
let lastScrollY = 0; // the page's scroll position as last seen or set here
const READER_SCROLL_MS = 1000; // how long after the reader's input a scroll is the reader's
let readerInputAt = -Infinity; // when the reader last did something that scrolls
const SCROLLING_KEYS = new Set(["PageUp", "PageDown", "ArrowUp", "ArrowDown", "Home", "End", " "]);

function indexMentions() {
  indexed = state.data;
  entityById = new Map((state.data.entities || []).map((e) => [e.id, e]));
  mentionsBySegment = new Map();
  for (const m of state.data.mentions || []) {
    if (!mentionsBySegment.has(m.segment)) mentionsBySegment.set(m.segment, []);
    mentionsBySegment.get(m.segment).push(m);
  }
}

/** Per segment, the annotations drawn there ({a, own}), in the annotations' order. */
function annotationIndex(first, last) {
  const bySegment = new Map();
  const add = (segment, entry) => {
    if (segment < first || segment > last) return;
    if (!bySegment.has(segment)) bySegment.set(segment, []);
    bySegment.get(segment).push(entry);
  };
  for (const a of state.annotations) {
    add(a.segment, { a, own: true });
    if (a.paired) {
      const end = a.paired.end_segment ?? a.paired.segment;
      for (let s = Math.max(a.paired.segment, first); s <= Math.min(end, last); s++) add(s, { a, own: false });
    }
  }
  return bySegment;
}

function rangesFor(segment, isCurrent, annotations) {
  const conv = state.conv[segment];
  const ranges = [];
  const u = (cp) => conv.toUtf16(cp);
  for (const m of mentionsBySegment.get(segment) || []) {
    const ent = entityById.get(m.entity);
    ranges.push({
      type: "mention",
      start: u(m.start),
      end: u(m.end),
      entity: m.entity,
      title: ent ? t("mention_title", { name: ent.name, n: ent.first_segment + 1 }) : null,
    });
  }
  for (const { a, own } of annotations.get(segment) || []) {
    const cat = state.categories.get(a.category);
    const color = cat ? cat.color : "#888888";
    if (own) {
      ranges.push({ type: "annotation", start: u(a.start), end: u(a.end), key: a.key, color, focus: isCurrent });
      continue;
    }
    // stored offsets are code points: the end belongs to end_segment when it crosses
    const last = a.paired.end_segment ?? a.paired.segment;
    const inUtf16 = {
      segment: a.paired.segment,
      start: state.conv[a.paired.segment].toUtf16(a.paired.start),
      end: state.conv[last].toUtf16(a.paired.end),
      end_segment: a.paired.end_segment,
    };
    const piece = pieceIn(inUtf16, segment);
    if (piece) ranges.push({ type: "paired", start: piece.start, end: piece.end, key: a.key, color });
  }
  const f = state.form;
  if (f.span && f.span.segment === segment) ranges.push({ type: "pending", start: f.span.start, end: f.span.end });
  const pendingPiece = f.paired ? pieceIn(f.paired, segment) : null;
  if (pendingPiece) ranges.push({ type: "pending-paired", start: pendingPiece.start, end: pendingPiece.end });
  const cursor = page.keyboardRange();
  const cursorPiece = cursor ? pieceIn(cursor, segment) : null;
  if (cursorPiece) ranges.push({ type: "kb", start: cursorPiece.start, end: cursorPiece.end });
  if (isCurrent && !state.readOnly) {
    for (const s of page.visibleSuggestions()) {
      const cat = state.categories.get(s.category);
      ranges.push({
        type: "suggestion",
        id: s.id,
        start: u(s.start),
        end: u(s.end),
        color: cat.color,
        label: cat.id,
        title: t("suggested_title", { label: cat.label }),
      });
    }
  }
  return ranges;
}

/** The earliest context segment the page needs on screen now. */
function neededFrom() {
  let first = state.current;
  const f = state.form;
  if (f.paired) first = Math.min(first, f.paired.segment);
  if (state.kb) first = Math.min(first, state.kb.anchor.segment, state.kb.head.segment);
  return first;
}

function block(i) {
  const text = h("p", { class: "ctx-text" });
  const node = h(
    "div",
    { class: "ctx-seg", dataset: { block: String(i) } },
    h("span", { class: "seg-num" }, h("span", { class: "visually-hidden" }, `${t("segment_word")} `), String(i + 1)),
    text,
  );
  return { node, text, signature: null };
}

/** Lay out the context blocks [from, state.current): drop those outside, add the missing
 * ones before or after the ones kept (never rebuilding the ones kept). */
function placeBlocks() {
  for (const [i, entry] of drawn) {
    if (i < from || i >= state.current) {
      entry.node.remove();
      drawn.delete(i);
    }
  }
  const kept = [...drawn.keys()];
  const low = kept.length ? Math.min(...kept) : state.current;
  const high = kept.length ? Math.max(...kept) + 1 : state.current;
  const before = [];
  for (let i = from; i < Math.min(low, state.current); i++) {
    const entry = block(i);
    drawn.set(i, entry);
    before.push(entry.node);
  }
  const firstKept = kept.length ? drawn.get(low).node : null;
  if (firstKept) firstKept.before(...before);
  else el.context.append(...before);
  for (let i = Math.max(high, from); i < state.current; i++) {
    const entry = block(i);
    drawn.set(i, entry);
    el.context.append(entry.node);
  }
}

function renderMore() {
  if (!more) {
    more = h("button", { type: "button", class: "btn btn-quiet ctx-more", onclick: () => showEarlier() });
    el.context.prepend(more);
    lastScrollY = window.scrollY;
    watchReaderInput();
    window.addEventListener("scroll", pressWhenScrolledUpNear, { passive: true });
  }
  more.hidden = from === 0;
  if (from > 0) {
    const first = Math.max(0, from - CONTEXT_WINDOW);
    more.textContent = t("context_earlier", { first: first + 1, last: from });
  }
}

/** Note the reader's inputs that scroll the page: the wheel, a touch, a scrolling key, a
 * press on the page's scrollbar (outside the document's client area). */
function watchReaderInput() {
  const note = () => {
    readerInputAt = performance.now();
  };
  const passive = { passive: true };
  window.addEventListener("wheel", note, passive);
  window.addEventListener("touchmove", note, passive);
  window.addEventListener("keydown", (e) => SCROLLING_KEYS.has(e.key) && note(), passive);
  window.addEventListener(
    "pointerdown",
    (e) => {
      const root = document.documentElement;
      if (e.clientX >= root.clientWidth || e.clientY >= root.clientHeight) note();
    },
    passive,
  );
}

/** The reader scrolled up to the button: press it. */
function pressWhenScrolledUpNear() {
  const y = window.scrollY;
  const up = y < lastScrollY && performance.now() - readerInputAt < READER_SCROLL_MS;
  lastScrollY = y;
  if (up && !more.hidden && more.getBoundingClientRect().bottom > -NEAR) showEarlier();
}

/** Scroll the page itself: not the reader's scroll (see pressWhenScrolledUpNear). */
function scrollItself(scroll) {
  scroll();
  lastScrollY = window.scrollY;
}

/** Draw CONTEXT_WINDOW more segments above the context, the reading position kept. */
function showEarlier() {
  if (from === 0) return;
  const anchor = drawn.get(from);
  const top = anchor ? anchor.node.getBoundingClientRect().top : 0;
  from = Math.max(0, from - CONTEXT_WINDOW);
  renderText();
  if (anchor && anchor.node.isConnected) {
    scrollItself(() => window.scrollBy(0, anchor.node.getBoundingClientRect().top - top));
  }
}

/** Draw the context back to segment `i` (if it is not drawn yet); its block, or null. */
export function showSegment(i) {
  if (i < state.current && i < from) {
    from = Math.max(0, i);
    renderText();
  }
  return drawn.has(i) ? drawn.get(i).node : null;
}

/** Whether `target` must be drawn again for these ranges (its signature is then updated). */
function draw(target, ranges) {
  const signature = JSON.stringify(ranges);
  if (target.signature === signature) return false;
  target.signature = signature;
  return true;
}

export function renderText({ scrollContext = false } = {}) {
  if (indexed !== state.data) indexMentions();
  if (drawnFor !== state.current) {
    from = Math.max(0, state.current - CONTEXT_WINDOW);
    drawnFor = state.current;
  }
  from = Math.min(from, neededFrom());
  placeBlocks();
  renderMore();
  const annotations = annotationIndex(from, state.current);
  for (const [i, entry] of drawn) {
    const ranges = rangesFor(i, false, annotations);
    if (draw(entry, ranges)) entry.text.replaceChildren(renderSegmentText(state.texts[i], i, ranges));
  }
  el.contextSection.hidden = state.current === 0;

  const ranges = rangesFor(state.current, true, annotations);
  if (current.segment !== state.current || !el.current.firstChild) current = { segment: state.current, signature: null };
  if (draw(current, ranges)) {
    clear(el.current);
    el.current.append(h("p", { class: "cur-text" }, renderSegmentText(state.texts[state.current], state.current, ranges)));
  }
  const f = state.form;
  root.classList.toggle("awaiting-paired", Boolean(pairKind() && f.span && !f.paired));
  page.renderHints(state.readOnly ? [] : page.visibleSuggestions());
  if (scrollContext && state.current > 0) {
    scrollItself(() => el.currentHeading.scrollIntoView({ block: "start" }));
  }
}
