"""Helpers for driving the annotate page like a person: real mouse drags over text."""

from __future__ import annotations

import re

# Finds the on-screen boxes of the first and last character of `needle` inside the segment
# element `.seg-text[data-seg=<segment>]`, walking its text nodes (UTF-16 offsets).
_RECTS_JS = """
([segment, needle, occurrence]) => {
  const root = document.querySelector(`.seg-text[data-seg="${segment}"]`);
  if (!root) return null;
  root.scrollIntoView({ block: "center", inline: "nearest" });
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
  const firstWidth = /[\\uD800-\\uDBFF]/.test(text[at]) ? 2 : 1;
  const lastWidth = /[\\uDC00-\\uDFFF]/.test(text[at + needle.length - 1]) ? 2 : 1;
  return { first: box(at, firstWidth), last: box(at + needle.length - lastWidth, lastWidth) };
}
"""


def drag_select(page, segment: int, needle: str, occurrence: int = 0, *, inset: float = 1.5):
    """Select `needle` in segment `segment` with a real mouse drag (down, move, up)."""
    rects = page.evaluate(_RECTS_JS, [segment, needle, occurrence])
    assert rects is not None, f"{needle!r} is not in segment {segment}"
    first, last = rects["first"], rects["last"]
    x0 = first["left"] + inset
    y0 = (first["top"] + first["bottom"]) / 2
    x1 = last["right"] - inset
    y1 = (last["top"] + last["bottom"]) / 2
    page.mouse.move(x0, y0)
    page.mouse.down()
    next_frame(page)
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=4)
    page.mouse.move(x1, y1, steps=4)
    # Chromium delivers mouse moves aligned to animation frames: let the last one land (and
    # extend the selection) before the button is released, as it would for a person.
    next_frame(page)
    page.mouse.up()


def next_frame(page) -> None:
    """Wait until the page has rendered two more frames."""
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def category_button(page, category_id: str):
    return page.locator(f'.cat-btn[data-category="{category_id}"]')


def wait_saved(page, timeout: float = 10_000) -> None:
    """Wait until the save-status region says everything is stored: nothing left in the
    outbox but hint events waiting for the next move (which takes them along)."""
    page.wait_for_function(
        "() => document.getElementById('save-status').dataset.state === 'saved'"
        " && JSON.parse(localStorage.getItem('marginalia.outbox.' +"
        " document.getElementById('annotate').dataset.token) || '[]').every((o) => o.defer)",
        timeout=timeout,
    )


def hide_tab(page) -> None:
    """The tab goes to the background (the page's lifecycle: what waits is sent now)."""
    page.evaluate(
        """() => {
            Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});
            document.dispatchEvent(new Event('visibilitychange'));
            delete document.visibilityState;
        }"""
    )


def progress_text(page) -> str:
    return re.sub(r"\s+", " ", page.locator("#progress-text").inner_text()).strip()


def open_assignment(
    page, base_url: str, slug: str, worker: str, document: str | None = None
) -> str:
    """Arrive as a worker through /s/<slug>; wait for the page to load; return the token."""
    url = f"{base_url}/s/{slug}?worker_id={worker}"
    if document:
        url += f"&document={document}"
    page.goto(url)
    wait_loaded(page)
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def wait_loaded(page) -> None:
    page.wait_for_selector("#annotate:not(.is-loading)")
    page.wait_for_selector(".cur-text .seg-text")


def annotation_texts(page) -> list[str]:
    """The span texts in the annotation list, in list order."""
    return page.locator("#annotation-list .annot-span").all_inner_texts()


def highlight_text(page, key: str) -> str:
    """The text under the highlight of annotation `key` (joined pieces)."""
    return page.evaluate(
        """(key) => [...document.querySelectorAll('[data-annotations]')]
            .filter((el) => el.dataset.annotations.split(' ').includes(key))
            .map((el) => el.textContent).join('')""",
        key,
    )


def wait_value(page, selector: str, value: str, timeout: float = 10_000) -> None:
    """Wait until the field `selector` holds `value`; on timeout, say what it holds."""
    try:
        page.wait_for_function(
            "([sel, value]) => document.querySelector(sel).value === value",
            arg=[selector, value],
            timeout=timeout,
        )
    except Exception as exc:
        actual = page.input_value(selector)
        hint = page.locator("#form-hint").inner_text()
        raise AssertionError(
            f"{selector} holds {actual!r}, not {value!r} (hint: {hint!r})"
        ) from exc


# The review page's text is pieces (span.piece) with vote badges (buttons) between them:
# the needle is found in the pieces' text only, and its first and last characters' boxes come
# back (code units; the review page's offsets are code points, computed by the page itself).
_REVIEW_RECTS_JS = """
([segment, needle, occurrence]) => {
  const root = document.querySelector(`[data-segment="${segment}"] .review-text`);
  if (!root) return null;
  root.scrollIntoView({ block: "center", inline: "nearest" });
  const nodes = [...root.querySelectorAll(".piece")].map((p) => p.firstChild).filter(Boolean);
  const text = nodes.map((n) => n.nodeValue).join("");
  let at = -1;
  for (let i = 0; i <= occurrence; i++) {
    at = text.indexOf(needle, at + 1);
    if (at < 0) return null;
  }
  const locate = (offset) => {
    let seen = 0;
    for (const node of nodes) {
      if (offset < seen + node.nodeValue.length) return [node, offset - seen];
      seen += node.nodeValue.length;
    }
    return null;
  };
  const box = (offset) => {
    const [node, local] = locate(offset);
    const range = document.createRange();
    range.setStart(node, local);
    range.setEnd(node, local + 1);
    const r = range.getClientRects()[0] || range.getBoundingClientRect();
    return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
  };
  return { first: box(at), last: box(at + needle.length - 1) };
}
"""


def drag_review(page, segment: int, needle: str, occurrence: int = 0) -> None:
    """Select `needle` in segment `segment` of the review page with a real mouse drag."""
    rects = page.evaluate(_REVIEW_RECTS_JS, [segment, needle, occurrence])
    assert rects is not None, f"{needle!r} is not in review segment {segment}"
    first, last = rects["first"], rects["last"]
    x0, y0 = first["left"] + 1, (first["top"] + first["bottom"]) / 2
    x1, y1 = last["right"] - 1, (last["top"] + last["bottom"]) / 2
    page.mouse.move(x0, y0)
    page.mouse.down()
    next_frame(page)
    page.mouse.move(x1, y1, steps=6)
    next_frame(page)
    page.mouse.up()
    selected = page.evaluate("() => getSelection().toString()")
    assert selected == needle, f"the drag selected {selected!r}, not {needle!r}"


def log_in(page, base: str, email: str, password: str) -> None:
    """Log in on ``base``'s researcher login page and wait for the page it leads to."""
    page.goto(f"{base}/admin/login")
    page.fill('input[name="email"]', email)
    page.fill('input[name="password"]', password)
    with page.expect_navigation():
        page.click('button[type="submit"]')
    assert "/admin/login" not in page.url, f"the login of {email} was refused"
