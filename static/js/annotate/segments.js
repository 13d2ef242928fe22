// The text on the annotate page: the context box (the segments before the current one) and
// the current segment, each drawn by textview.js from layered ranges (mentions,
// annotations, paired spans, the pending selection, suggestions). The context takes the
// height it needs (the page scrolls, no inner letterbox); moving to a segment scrolls the
// page so the current segment starts at the top of the window.

import { clear, h } from "../dom.js";
import { t } from "../i18n.js";
import { renderSegmentText } from "../textview.js";
import { el, page, pairKind, pieceIn, root, state } from "./state.js";

let entityById = new Map();

function rangesFor(segment, { current }) {
  const conv = state.conv[segment];
  const ranges = [];
  const u = (cp) => conv.toUtf16(cp);
  for (const m of state.data.mentions || []) {
    if (m.segment !== segment) continue;
    const ent = entityById.get(m.entity);
    ranges.push({
      type: "mention",
      start: u(m.start),
      end: u(m.end),
      entity: m.entity,
      title: ent ? t("mention_title", { name: ent.name, n: ent.first_segment + 1 }) : null,
    });
  }
  for (const a of state.annotations) {
    const cat = state.categories.get(a.category);
    const color = cat ? cat.color : "#888888";
    if (a.segment === segment) {
      ranges.push({ type: "annotation", start: u(a.start), end: u(a.end), key: a.key, color, focus: current });
    }
    if (a.paired) {
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
  }
  const f = state.form;
  if (f.span && f.span.segment === segment) ranges.push({ type: "pending", start: f.span.start, end: f.span.end });
  const pendingPiece = f.paired ? pieceIn(f.paired, segment) : null;
  if (pendingPiece) ranges.push({ type: "pending-paired", start: pendingPiece.start, end: pendingPiece.end });
  const cursor = page.keyboardRange();
  const cursorPiece = cursor ? pieceIn(cursor, segment) : null;
  if (cursorPiece) ranges.push({ type: "kb", start: cursorPiece.start, end: cursorPiece.end });
  if (current && !state.readOnly) {
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

export function renderText({ scrollContext = false } = {}) {
  entityById = new Map((state.data.entities || []).map((e) => [e.id, e]));
  clear(el.context);
  for (let i = 0; i < state.current; i++) {
    el.context.append(
      h(
        "div",
        { class: "ctx-seg", dataset: { block: String(i) } },
        h("span", { class: "seg-num" }, h("span", { class: "visually-hidden" }, `${t("segment_word")} `), String(i + 1)),
        h("p", { class: "ctx-text" }, renderSegmentText(state.texts[i], i, rangesFor(i, { current: false }))),
      ),
    );
  }
  el.contextSection.hidden = state.current === 0;

  clear(el.current);
  el.current.append(
    h("p", { class: "cur-text" }, renderSegmentText(state.texts[state.current], state.current, rangesFor(state.current, { current: true }))),
  );
  const f = state.form;
  root.classList.toggle("awaiting-paired", Boolean(pairKind() && f.span && !f.paired));
  page.renderHints(state.readOnly ? [] : page.visibleSuggestions());
  if (scrollContext && state.current > 0) el.currentHeading.scrollIntoView({ block: "start" });
}
