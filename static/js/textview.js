// Renders one segment's text with layered, possibly overlapping ranges (annotations, paired
// spans, entity mentions, suggestions, the pending selection) as text nodes inside spans,
// and maps a DOM selection back to offsets. Ranges here are in UTF-16 units.

import { h } from "./dom.js";
import { t } from "./i18n.js";

const TYPE_CLASS = {
  annotation: "hl",
  paired: "hl-paired",
  pending: "pending",
  "pending-paired": "pending-paired",
  kb: "kb-sel",
  mention: "mention",
  suggestion: "suggestion",
};

/**
 * Build the element for one segment: <span class="seg-text" data-seg=i> with one child per
 * stretch of text covered by the same set of ranges. The element's textContent is exactly
 * the segment text (labels live in CSS pseudo-elements), which selection mapping relies on.
 */
export function renderSegmentText(text, segIndex, ranges) {
  const root = h("span", { class: "seg-text", dataset: { seg: String(segIndex) } });
  const valid = ranges.filter((r) => r.end > r.start && r.start >= 0 && r.end <= text.length);
  const cuts = new Set([0, text.length]);
  for (const r of valid) {
    cuts.add(r.start);
    cuts.add(r.end);
  }
  const points = [...cuts].sort((a, b) => a - b);
  const opened = new Set();
  for (let i = 0; i + 1 < points.length; i++) {
    const from = points[i];
    const to = points[i + 1];
    const piece = text.slice(from, to);
    const covering = valid.filter((r) => r.start <= from && r.end >= to);
    if (covering.length === 0) {
      root.append(document.createTextNode(piece));
      continue;
    }
    const span = h("span", { dataset: { offset: String(from) } }, piece);
    for (const r of covering) decorate(span, r, r.start === from, r.end === to, opened);
    root.append(span);
  }
  return root;
}

function addToken(el, attr, value) {
  const list = (el.dataset[attr] || "").split(" ").filter(Boolean);
  if (!list.includes(value)) list.push(value);
  el.dataset[attr] = list.join(" ");
}

function decorate(span, r, isFirst, isLast, opened) {
  span.classList.add(TYPE_CLASS[r.type] || r.type);
  if (r.type === "annotation") {
    addToken(span, "annotations", r.key);
    span.style.setProperty("--hl", r.color);
    if (span.classList.contains("hl-multi") || span.dataset.annotations.includes(" ")) {
      span.classList.add("hl-multi");
    }
    if (r.focus) span.classList.add("hl-current");
  } else if (r.type === "paired") {
    addToken(span, "paired", r.key);
    span.style.setProperty("--pc", r.color);
  } else if (r.type === "mention") {
    span.dataset.entity = String(r.entity);
    const id = `m:${r.entity}:${r.start}`;
    if (isFirst && !opened.has(id)) {
      opened.add(id);
      span.tabIndex = 0;
      span.dataset.mentionStart = "1";
      if (r.title) span.title = r.title;
    }
  } else if (r.type === "suggestion") {
    span.dataset.suggestion = String(r.id);
    span.style.setProperty("--sc", r.color);
    if (isFirst) {
      span.tabIndex = 0;
      span.setAttribute("role", "button");
      // the visible words first in the accessible name (WCAG 2.5.3, label in name)
      if (r.title) span.setAttribute("aria-label", `${span.textContent} — ${r.title}`);
      if (r.title) span.title = r.title;
    }
    if (isLast) {
      span.classList.add("suggestion-end");
      span.dataset.label = r.label;
    }
  }
}

function offsetIn(root, node, offset) {
  const range = document.createRange();
  range.setStart(root, 0);
  range.setEnd(node, offset);
  return range.toString().length;
}

/**
 * The current selection as {segment, start, end} (UTF-16 units) inside one .seg-text under
 * `scope`, or {error} when it covers several segments, or null when there is none.
 */
export function readSelection(scope, { across = false } = {}) {
  const sel = window.getSelection();
  if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
  const range = sel.getRangeAt(0);
  const hits = [];
  for (const root of scope.querySelectorAll(".seg-text")) {
    if (!range.intersectsNode(root)) continue;
    const length = root.textContent.length;
    const start = root.contains(range.startContainer)
      ? offsetIn(root, range.startContainer, range.startOffset)
      : range.comparePoint(root, 0) >= 0
        ? 0
        : length;
    const end = root.contains(range.endContainer)
      ? offsetIn(root, range.endContainer, range.endOffset)
      : range.comparePoint(root, root.childNodes.length) <= 0
        ? length
        : 0;
    if (end > start) hits.push({ segment: Number(root.dataset.seg), start, end });
  }
  if (hits.length === 0) return null;
  if (hits.length > 1) {
    // An earlier span that runs on into the next segments (a paired category whose
    // taxonomy sets pair_across_segments): from the first piece's start to the last's end.
    const first = hits[0];
    const last = hits[hits.length - 1];
    const consecutive = hits.every((hit, i) => i === 0 || hit.segment === hits[i - 1].segment + 1);
    if (!across || !consecutive) return { error: t("single_segment") };
    return { segment: first.segment, start: first.start, end: last.end, end_segment: last.segment };
  }
  return hits[0];
}
