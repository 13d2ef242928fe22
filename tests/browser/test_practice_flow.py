"""The training phase in Chromium: a worker does the practice document with feedback shown
on the span they missed, fails a graded qualification document once (no answers shown),
passes the second and gets a real document; a worker out of attempts gets the screen-out
return, never a real document."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.crowd import platforms
from app.db import session_scope
from app.documents.studies import import_documents
from app.formats import DocumentInput, GoldSpan
from app.models import Assignment, Study
from tests.browser.helpers import (
    annotation_texts,
    category_button,
    drag_select,
    open_assignment,
    progress_text,
    wait_loaded,
    wait_saved,
    wait_value,
)
from tests.conftest import make_study

pytestmark = pytest.mark.browser

PRACTICE = [
    "Anna met Bob at the station. Bob said hello to the wrong person.",
    "Then Carla leaved the house and walked to the harbour.",
]
REAL = [("real-1", ["A real text about the harbour.", "Its second part."])]


QUALIFY = ["Tomas met Lena at the market. Lena gave the basket to the wrong woman.", "Later."]


def training_study(app, *, attempts: int, **settings) -> None:
    """``practice-1`` teaches (feedback per segment, never graded); ``qualify-1`` and
    ``qualify-2`` (another text, answers never shown) grade the attempts."""
    make_study(app, slug="train", documents=REAL, annotators_per_doc=1, suggestions="off")
    practice = DocumentInput(
        "practice-1",
        list(PRACTICE),
        gold=[
            GoldSpan(segment=0, text="the wrong person", category="CharE", votes=1),
            GoldSpan(segment=0, text="Anna", category="RefE", votes=1),
            GoldSpan(segment=1, text="leaved", category="GramE", votes=1),
        ],
    )
    qualify = [
        DocumentInput(
            f"qualify-{n}",
            list(QUALIFY),
            gold=[GoldSpan(segment=0, text="the wrong woman", category="CharE", votes=1)],
        )
        for n in (1, 2)
    ]
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        import_documents(session, study, [practice], gold=True, practice=True)
        import_documents(session, study, qualify, gold=True)
        platforms.configure_study(
            study, qualification_f1=0.6, qualification_attempts=attempts, **settings
        )


def mark(page, segment: int, text: str, category: str) -> None:
    drag_select(page, segment, text)
    wait_value(page, "#span-field", text)
    category_button(page, category).click()
    page.click("#add-button")
    wait_saved(page)


def feedback_texts(page, kind: str) -> list[str]:
    """The marked spans of one group of the feedback panel."""
    return page.locator(f'#practice-panel [data-kind="{kind}"] .practice-mark').all_inner_texts()


def test_fail_once_with_feedback_then_pass_then_real_work(
    app, live_server, pw_page, artifacts, tmp_path
):
    training_study(app, attempts=2)
    page = pw_page
    open_assignment(page, live_server.url, "train", "trainee")
    assert page.locator("#practice-panel").is_hidden()

    # Attempt 1, segment 1: one of the two errors found; "Anna" (RefE) missed.
    mark(page, 0, "the wrong person", "CharE")
    page.click("#next-button")
    page.wait_for_selector("#practice-panel:not([hidden])")
    assert progress_text(page) == "Segment 1 of 2"  # the first press only checks
    assert feedback_texts(page, "found") == ["the wrong person"]
    assert feedback_texts(page, "missed") == ["Anna"]
    missed = page.locator('#practice-panel [data-kind="missed"]').inner_text()
    assert "as if the reader already knew it" in missed  # RefE's definition
    assert "Anna met Bob at the station." in missed  # the missed span in its context
    assert "null" not in page.inner_text("#practice-panel")
    shots = artifacts / "practice"
    shots.mkdir(exist_ok=True)
    for width, height in ((1440, 900), (1024, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate(
            "() => document.getElementById('practice-panel').scrollIntoView({block: 'center'})"
        )
        page.screenshot(path=str(shots / f"practice-feedback-{width}.png"))
    page.set_viewport_size({"width": 1280, "height": 800})

    # The checked segment is frozen: a late mark there is refused with a clear message.
    drag_select(page, 0, "Anna")
    wait_value(page, "#span-field", "Anna")
    category_button(page, "RefE").click()
    page.click("#add-button")
    page.wait_for_function(
        "() => document.getElementById('form-hint').textContent.includes('can no longer')"
    )
    assert annotation_texts(page) == ["the wrong person"]

    page.click("#next-button")
    assert progress_text(page) == "Segment 2 of 2"
    assert page.locator("#practice-panel").is_hidden()
    page.click("#submit-button")  # checks the last segment first
    page.wait_for_selector("#practice-panel:not([hidden])")
    assert feedback_texts(page, "missed") == ["leaved"]
    page.click("#submit-button")
    page.wait_for_selector("#qualification")
    assert "Practice done" in page.inner_text("#qualification")  # never graded
    page.screenshot(path=str(shots / "practice-done.png"))

    # Qualification, attempt 1 (no answers shown): only a wrong mark, F1 = 0.
    page.click("#continue-link")
    wait_loaded(page)
    mark(page, 0, "Tomas", "RefE")
    page.click("#next-button")
    assert progress_text(page) == "Segment 2 of 2"  # moves on at once: no feedback
    assert page.locator("#practice-panel").is_hidden()
    page.click("#submit-button")
    page.wait_for_selector("#qualification")
    assert "Not quite yet" in page.inner_text("#qualification")
    assert "F1" not in page.inner_text("#qualification")  # failed, never the score

    # Attempt 2, the other qualification document: the error found.
    page.click("#continue-link")
    wait_loaded(page)
    mark(page, 0, "the wrong woman", "CharE")
    page.click("#next-button")
    page.click("#submit-button")
    page.wait_for_selector("#qualification")
    assert "You qualified" in page.inner_text("#qualification")
    page.click("#continue-link")
    wait_loaded(page)
    assert "A real text about the harbour." in page.inner_text("#current")
    assert page.locator("#practice-panel").is_hidden()
    page.click("#next-button")  # a real document moves on at once: no feedback
    assert progress_text(page) == "Segment 2 of 2"
    assert page.locator("#practice-panel").is_hidden()


def test_a_worker_out_of_attempts_gets_the_screen_out_return(app, live_server, pw_page, artifacts):
    url = "https://app.prolific.com/submissions/complete?cc=SCREENED"
    training_study(app, attempts=1, platform="prolific", screen_out_url=url)
    page = pw_page
    page.goto(f"{live_server.url}/s/train?PROLIFIC_PID=p-9&STUDY_ID=st&SESSION_ID=se")
    wait_loaded(page)
    page.click("#next-button")
    page.wait_for_selector("#practice-panel:not([hidden])")
    page.click("#next-button")
    page.click("#submit-button")
    page.wait_for_selector("#practice-panel:not([hidden])")
    page.click("#submit-button")
    page.wait_for_selector("#qualification")  # practice done: on to the graded attempt
    page.click("#continue-link")
    wait_loaded(page)
    page.click("#next-button")
    page.click("#submit-button")
    page.wait_for_selector("#screened-out")
    assert page.get_attribute("#screen-out-link", "href") == url
    shots = artifacts / "practice"
    shots.mkdir(exist_ok=True)
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(shots / f"screened-out-{width}.png"), full_page=True)
    # Arriving again (a new Prolific session): the same return, no real document.
    page.goto(f"{live_server.url}/s/train?PROLIFIC_PID=p-9&STUDY_ID=st&SESSION_ID=se2")
    page.wait_for_selector("#screened-out")
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Assignment)) == 2
