"""Helpers for driving the annotate page like a person: real mouse drags over text."""

from __future__ import annotations

import re

# Finds the on-screen boxes of the first and last character of `needle` inside the segment
# element `.seg-text[data-seg=<segment>]`, walking its text nodes (UTF-16 offsets).
_RECTS_JS = """
([segment, needle, occurrence]) => {
  const root = document.querySelector(`.seg-text[data-seg="${segment}"]`);
  if (!root) return null;
  const text = root.textContent;
  let at = -1;
  for (let i = 0; i <= occurrence; i++) {
    at = text.indexOf(needle, at + 1);
    if (at < 0) return null;
  }
  const locate = (offset) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let seen = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const len = node.nodeValue.length;
      if (offset < seen + len) return [node, offset - seen];
      seen += len;
    }
    return null;
  };
  const box = (offset, width) => {
    const [node, local] = locate(offset);
    const range = document.createRange();
    range.setStart(node, local);
    range.setEnd(node, local + width);
    const r = range.getClientRects()[0] || range.getBoundingClientRect();
    return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
  };
  const lastWidth = /[\\uDC00-\\uDFFF]/.test(text[at + needle.length - 1]) ? 2 : 1;
  return { first: box(at, 1), last: box(at + needle.length - lastWidth, lastWidth) };
}
"""


def drag_select(page, segment: int, needle: str, occurrence: int = 0, *, inset: float = 1.5):
    """Select `needle` in segment `segment` with a real mouse drag (down, move, up)."""
    locator = page.locator(f'.seg-text[data-seg="{segment}"]')
    locator.first.scroll_into_view_if_needed()
    rects = page.evaluate(_RECTS_JS, [segment, needle, occurrence])
    assert rects is not None, f"{needle!r} is not in segment {segment}"
    first, last = rects["first"], rects["last"]
    x0 = first["left"] + inset
    y0 = (first["top"] + first["bottom"]) / 2
    x1 = last["right"] - inset
    y1 = (last["top"] + last["bottom"]) / 2
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=4)
    page.mouse.move(x1, y1, steps=4)
    page.mouse.up()


def category_button(page, category_id: str):
    return page.locator(f'.cat-btn[data-category="{category_id}"]')


def wait_saved(page, timeout: float = 10_000) -> None:
    """Wait until the save-status region says everything is stored."""
    page.wait_for_function(
        "() => document.getElementById('save-status').dataset.state === 'saved'"
        " && !localStorage.getItem('marginalia.outbox.' +"
        " document.getElementById('annotate').dataset.token)",
        timeout=timeout,
    )


def progress_text(page) -> str:
    return re.sub(r"\s+", " ", page.locator("#progress-text").inner_text()).strip()
