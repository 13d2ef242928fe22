"""Keyboard-only marking in Chromium, on SQLite and Postgres: a worker does a whole
document without the mouse (into the text with Tab, a cursor moved by word and sentence,
Shift to extend, Enter to take, a category's key, Ctrl+Enter to add, Delete to remove, n to
move on, a paired span chosen the same way, Tab to Submit) and the stored annotations are
the words chosen, at code-point offsets. What the cursor says goes to a live region."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Annotation, Assignment
from tests.browser.helpers import open_assignment, wait_saved
from tests.conftest import BACKENDS, make_database_url, make_study

pytestmark = pytest.mark.browser

STORY = [
    "Mara keeps the lighthouse on the cliff. Her brother Tomas visits in spring.",
    "In winter the lamp fails twice. Mara climbs the stairs and mends it alone.",
    "Tomas never visits again. The lighthouse stands dark by summer.",
]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def focused(page) -> str:
    return page.evaluate("() => document.activeElement.id")


def tab_to(page, element_id: str, most: int = 40) -> None:
    """Press Tab until the element has focus (as a keyboard user would)."""
    for _ in range(most):
        if focused(page) == element_id:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"#{element_id} not reached with Tab (at #{focused(page)})")


def said(page) -> str:
    return page.locator("#kb-status").inner_text()


def keys(page, *names: str) -> None:
    for name in names:
        page.keyboard.press(name)


def test_a_whole_document_with_the_keyboard_alone(app, live_server, pw_page):
    make_study(app, slug="keys", documents=[("lights", STORY)])
    page = pw_page
    token = open_assignment(page, live_server.url, "keys", "kb-1")
    page.mouse.move(0, 0)
    tab_to(page, "text-area")
    assert said(page) == "segment 1: Mara"

    # One word: right arrow to "keeps", Enter takes it, 6 is its category, Ctrl+Enter adds.
    keys(page, "ArrowRight")
    assert said(page) == "keeps"
    keys(page, "Enter")
    assert page.input_value("#span-field") == "keeps"
    keys(page, "6", "Control+Enter")
    assert page.locator("#form-hint").inner_text() == "Added: Ungrammatical — “keeps”"
    # Two words with Shift; the cursor says what is under it, the marks included.
    keys(page, "ArrowRight", "Shift+ArrowRight")
    assert said(page) == "Selected: “the lighthouse”"
    keys(page, "Enter", "2", "Control+Enter")
    keys(page, "Home")
    assert said(page) == "Mara"
    keys(page, "ArrowRight")
    assert said(page) == "keeps — marked: Ungrammatical"
    # Down reads the next sentence.
    keys(page, "ArrowDown")
    assert said(page) == "Her brother Tomas visits in spring."
    wait_saved(page)

    # n moves on; the cursor stays in the text, at the new segment's start.
    keys(page, "n")
    page.wait_for_function(
        "() => document.getElementById('progress-text').textContent.startsWith('Segment 2')"
    )
    assert focused(page) == "text-area"
    assert said(page) == "segment 2: In winter the lamp fails twice."

    # A span to remove again: "twice", added, then Delete on it.
    keys(page, "ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight")
    assert said(page) == "twice"
    keys(page, "Enter", "7", "Control+Enter")
    assert page.locator("#annotation-list .annot-span").all_inner_texts()[-1] == "twice"
    keys(page, "Delete")
    assert page.locator("#form-hint").inner_text() == "Removed: “twice”"
    assert "twice" not in page.locator("#annotation-list").inner_text()

    # A paired span: "alone" (End), Enter, 4 (a contradiction, paired); then up by sentence
    # into the context, to "Her", Shift+End to the segment's end, Enter, Ctrl+Enter.
    keys(page, "End")
    assert said(page) == "alone"
    keys(page, "Enter", "4")
    assert page.locator("#paired-row").is_visible()
    keys(page, "ArrowUp")
    assert said(page) == "Mara climbs the stairs and mends it alone."
    keys(page, "ArrowUp", "ArrowUp")
    assert said(page) == "segment 1: Her brother Tomas visits in spring."
    keys(page, "Home", "ArrowRight")
    assert said(page) == "keeps — marked: Ungrammatical"
    keys(page, "ArrowDown", "Shift+End")
    assert said(page) == "Selected: “Her brother Tomas visits in spring”"
    keys(page, "Enter")
    assert said(page) == "Earlier text: “Her brother Tomas visits in spring”"
    assert page.input_value("#paired-field") == "Her brother Tomas visits in spring"
    keys(page, "Control+Enter")
    wait_saved(page)

    # The last segment: a whole-sentence category widens the word to its sentence.
    keys(page, "n")
    page.wait_for_function(
        "() => document.getElementById('progress-text').textContent.startsWith('Segment 3')"
    )
    keys(page, "ArrowDown", "ArrowRight", "Enter", "3")
    assert page.input_value("#span-field") == "The lighthouse stands dark by summer."
    keys(page, "Control+Enter")
    wait_saved(page)
    tab_to(page, "submit-button")
    keys(page, "Enter")
    page.wait_for_url(f"{live_server.url}/a/{token}/done")

    with app.app_context(), session_scope() as session:
        rows = session.scalars(
            select(Annotation)
            .join(Assignment, Assignment.id == Annotation.assignment_id)
            .where(Assignment.token == token, Annotation.removed_at.is_(None))
            .order_by(Annotation.segment, Annotation.start)
        ).all()
        status = session.scalar(select(Assignment.status).where(Assignment.token == token))
        got = [
            (
                a.segment,
                a.start,
                a.end,
                a.text,
                a.category,
                None
                if a.paired_segment is None
                else (a.paired_segment, a.paired_start, a.paired_end, a.paired_text),
            )
            for a in rows
        ]
    assert status == "submitted"

    def at(segment: int, text: str) -> tuple[int, int, int, str]:
        start = STORY[segment].index(text)
        return segment, start, start + len(text), text

    earlier = "Her brother Tomas visits in spring"
    assert got == [
        (*at(0, "keeps"), "GramE", None),
        (*at(0, "the lighthouse"), "RefE", None),
        (*at(1, "alone"), "InconE", at(0, earlier)),
        (*at(2, "The lighthouse stands dark by summer."), "SceneE", None),
    ]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_click_after_keyboard_marking_lands_on_what_was_pressed(app, live_server, pw_page):
    """Leaving the text empties the cursor's status line, which then takes no room: done on
    the press, it moved Submit (below the text) up between the press and the release, and the
    click was lost. It is emptied once the click is out."""
    make_study(app, slug="click", documents=[("one", ["One short segment to read."])])
    page = pw_page
    token = open_assignment(page, live_server.url, "click", "kb-click")
    page.mouse.move(0, 0)
    tab_to(page, "text-area")
    keys(page, "ArrowRight")
    assert said(page) == "short"
    page.click("#submit-button")
    page.wait_for_url(f"{live_server.url}/a/{token}/done")
