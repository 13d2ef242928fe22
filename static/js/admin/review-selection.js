// The review page's text selection as code-point offsets in one segment: the span of an
// edit or of a new error comes from what the researcher selected, never from typed offsets.
// The text is drawn as pieces (span.piece, data-start = its first code point) inside each
// segment ([data-segment]); vote badges between pieces are not text.

import { utf16ToCp } from "../offsets.js";

/** {segment, start, end} of the selection inside `container`, or why there is none:
 * {none} (nothing selected), {outside} (not in the document), {across} (two segments). */
export function selectionOffsets(container) {
  const selection = window.getSelection();
  if (!selection || selection.isCollapsed || !selection.rangeCount) return { none: true };
  const at = (node, offset) => {
    const piece = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    const seg = piece && piece.closest("[data-segment]");
    if (!piece || !piece.dataset.start || !seg || !container.contains(seg)) return null;
    return { segment: Number(seg.dataset.segment), cp: Number(piece.dataset.start) + utf16ToCp(node.textContent, offset) };
  };
  const range = selection.getRangeAt(0);
  const a = at(range.startContainer, range.startOffset);
  const b = at(range.endContainer, range.endOffset);
  if (!a || !b) return { outside: true };
  if (a.segment !== b.segment) return { across: true };
  if (b.cp <= a.cp) return { none: true };
  return { segment: a.segment, start: a.cp, end: b.cp };
}
