"""A worker pairs a repetition with earlier text that straddles a segment break (SNaC's
InconE/RepE allow it: pair_across_segments), by one mouse drag across the context box."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.browser.helpers import (
    _RECTS_JS,
    category_button,
    drag_select,
    next_frame,
    open_assignment,
    wait_saved,
    wait_value,
)
from tests.conftest import make_study

pytestmark = pytest.mark.browser

SEGMENTS = [
    "Alice falls down a hole. She grows",
    "taller and shorter. Then a cat smiles.",
    "She grows taller and shorter again.",
]


def drag_across(page, first: tuple[int, str], last: tuple[int, str]) -> None:
    """Press on the first character of ``first`` and release on the last of ``last``."""
    a = page.evaluate(_RECTS_JS, [first[0], first[1], 0])["first"]
    b = page.evaluate(_RECTS_JS, [last[0], last[1], 0])["last"]
    page.mouse.move(a["left"] + 1.5, (a["top"] + a["bottom"]) / 2)
    page.mouse.down()
    next_frame(page)
    page.mouse.move(b["right"] - 1.5, (b["top"] + b["bottom"]) / 2, steps=8)
    next_frame(page)
    page.mouse.up()


def test_paired_span_across_a_segment_break(app, live_server, pw_page):
    make_study(app, slug="pairs", documents=[("doc-1", SEGMENTS)])
    page = pw_page
    open_assignment(page, live_server.url, "pairs", "worker-1")
    page.click("#next-button")
    page.click("#next-button")
    drag_select(page, 2, "She grows taller and shorter")
    wait_value(page, "#span-field", "She grows taller and shorter")
    category_button(page, "RepE").click()
    drag_across(page, (0, "She grows"), (1, "shorter."))
    wait_value(page, "#paired-field", "She grows taller and shorter.")
    page.keyboard.press("Control+Enter")
    wait_saved(page)

    from app.db import session_scope
    from app.models import Annotation

    with app.app_context(), session_scope() as session:
        (stored,) = session.scalars(select(Annotation)).all()
        assert (stored.paired_segment, stored.paired_start) == (0, 25)
        assert (stored.paired_end_segment, stored.paired_end) == (1, 19)
        assert stored.paired_text == "She grows taller and shorter."
    # the earlier span is highlighted in both segments of the context box
    pieces = page.locator("#context [data-paired]").all_inner_texts()
    assert "".join(pieces) == "She growstaller and shorter."
    # the annotation list says where it lies: both segments, not the first alone
    label = page.locator("#annotation-list .annot-paired-label").inner_text()
    assert label.strip() == "earlier (segments 1–2):", label


def test_a_selection_across_segments_is_refused_for_the_marked_span(app, live_server, pw_page):
    make_study(app, slug="pairs", documents=[("doc-1", SEGMENTS)])
    page = pw_page
    open_assignment(page, live_server.url, "pairs", "worker-1")
    page.click("#next-button")
    page.click("#next-button")
    category_button(page, "CharE").click()  # a singleton: no earlier span to pick
    drag_across(page, (1, "Then"), (2, "She"))
    page.wait_for_function(
        "() => document.getElementById('form-hint').textContent.includes('single segment')"
    )
    assert page.input_value("#span-field") == ""
