"""Review and adjudication in Chromium: SNaC dev's book_175b13 (26 segments) replayed through
the API as three workers; a researcher walks the disagreements by keyboard, accepts two,
rejects one, edits the boundary of one, adds one, marks the document done. The adjudicated
export holds exactly those errors at the right offsets, and the workers' scores against it
match a hand count. Screenshots at 1440, 1024 and 390 px."""

from __future__ import annotations

import csv
import io

import pytest

from app.db import session_scope
from tests.browser.conftest import ARTIFACTS
from tests.browser.helpers import drag_review, log_in
from tests.test_adjudication_snac import replay_snac_dev

pytestmark = pytest.mark.browser

DOC = "book_175b13"
EMAIL, PASSWORD = "reviewer@example.org", "reviewer password 14"
SHOTS = ARTIFACTS / "review"


def add_suggestions(session) -> None:
    """The detector's view as one more lane: two suggestions on book_175b13."""
    from sqlalchemy import select

    from app.models import Document, Segment, Suggestion

    doc = session.scalar(select(Document).where(Document.external_id == DOC))
    texts = {
        s.index: s.text
        for s in session.scalars(select(Segment).where(Segment.document_id == doc.id))
    }
    for segment, text, category in ((1, "Hero", "CharE"), (0, "Messina", "RefE")):
        start = texts[segment].index(text)
        session.add(
            Suggestion(
                document_id=doc.id,
                segment=segment,
                start=start,
                end=start + len(text),
                text=text,
                category=category,
                score=0.91,
                detector="rules",
                detector_version="1",
            )
        )


def wait_decided(page, count: int) -> None:
    page.wait_for_function(
        "n => (document.getElementById('review-summary').textContent || '').includes(n + ' decided')",
        arg=count,
    )


def focused(page) -> str:
    return page.locator("#review-panel blockquote.proposal").first.inner_text()


def test_walk_disagreements_by_keyboard_and_export(app, client, live_server, pw_page, artifacts):
    from app.researchers.accounts import create_researcher

    replay_snac_dev(app, client, only={DOC})
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
        add_suggestions(session)
    page = pw_page
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_server.url, EMAIL, PASSWORD)
    page.goto(f"{live_server.url}/admin/studies/snac-dev/review")
    page.click(f"a:has-text('{DOC}')")
    page.wait_for_selector("#review[data-ready]")
    assert page.locator(".review-segment").count() == 26
    lanes = page.locator("#lane-filter .lane").all_inner_texts()
    assert [lane.split(": ")[-1] for lane in lanes] == [
        "worker-0",
        "worker-1",
        "worker-2",
        "detector (suggestions)",
    ]
    assert "42 candidates" in page.locator("#review-summary").inner_text()
    page.screenshot(path=str(SHOTS / "review-1440-before.png"))

    # candidate 1 (Don Pedro, 2 of 3 workers) is a disagreement: accept it
    assert focused(page) == "Don Pedro"
    page.keyboard.press("a")
    wait_decided(page, 1)
    page.keyboard.press("d")  # next disagreement: Leonato (2 of 3)
    assert focused(page) == "Leonato"
    page.keyboard.press("a")
    wait_decided(page, 2)
    page.keyboard.press("d")  # Antonio, segment 3: reject
    assert focused(page) == "Antonio"
    page.keyboard.press("r")
    wait_decided(page, 3)
    page.keyboard.press("d")  # John: move its end to take "John decides", selected by mouse
    assert focused(page) == "John"
    page.keyboard.press("e")
    drag_review(page, 2, "John decides")
    page.click("#edit-use-selection")
    assert page.locator("#edit-preview").inner_text() == "“John decides”"
    page.click("#save-edit")
    wait_decided(page, 4)
    # add an error no worker marked: "Hero" in segment 2, selected with the mouse
    drag_review(page, 1, "Hero")
    page.keyboard.press("+")
    assert page.locator("#edit-preview").inner_text() == "“Hero”"
    page.select_option("#edit-category", "CharE")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.getElementById('review-summary').textContent.includes('1 added')"
    )
    page.keyboard.press("Shift+D")
    page.wait_for_selector("#review-status.status-done")
    assert "as CharE “John decides”" in page.locator("#review-panel .decision").inner_text()
    page.screenshot(path=str(SHOTS / "review-1440-walked.png"))
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(SHOTS / "review-1440.png"))
    page.locator(".review-segment").first.screenshot(path=str(SHOTS / "review-segment-1440.png"))
    for width in (1024, 390):
        page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(SHOTS / f"review-{width}.png"))
        page.evaluate("() => window.scrollTo(0, 900)")
        page.screenshot(path=str(SHOTS / f"review-{width}-scrolled.png"))
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(artifacts / "review-390.png"))

    # the study's review list and the dashboard's way in, at the same widths
    page.goto(f"{live_server.url}/admin/studies/snac-dev/review")
    row = page.locator("#review-documents tr", has_text=DOC)
    assert "done" in row.inner_text() and row.locator("button", has_text="Promote").count() == 1
    for width in (1440, 1024, 390):
        page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
        page.screenshot(path=str(SHOTS / f"review-list-{width}.png"))
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/admin/studies/snac-dev")
    page.click("a:has-text('Review & adjudicate')")
    page.wait_for_selector("#review-documents")

    # the adjudicated export: exactly those four errors, at the segment's code points
    from app.documents.studies import get_study
    from app.formats import iter_export

    with app.app_context(), session_scope() as session:
        text = "".join(iter_export(session, get_study(session, "snac-dev"), "csv", "adjudicated"))
    rows = [
        (int(r["segment"]), int(r["span_start"]), int(r["span_end"]), r["span_text"], r["category"])
        for r in csv.DictReader(io.StringIO(text))
    ]
    seg1_hero = 46  # "Claudio tells Benedick that he's in love with " is 46 code points
    assert rows == [
        (0, 0, 9, "Don Pedro", "CharE"),
        (0, 121, 128, "Leonato", "CharE"),
        (1, seg1_hero, seg1_hero + 4, "Hero", "CharE"),
        (2, 68, 80, "John decides", "CharE"),
    ]

    # scores against it, by hand (strict: token IoU >= 0.5; "John" vs "John decides" = 1/2):
    # worker-0 marked 42 errors, of them Don Pedro, Leonato, John -> P 3/42, R 3/4;
    # worker-1 marked 15, the same three -> P 3/15, R 3/4; worker-2 marked 6, none -> 0, 0.
    scores = {
        r["worker_id"]: r["overall"]
        for r in page.evaluate(
            "url => fetch(url).then((r) => r.json())", "/admin/studies/snac-dev/review/scores.json"
        )
    }
    for worker, (matched, marked) in {
        "worker-0": (3, 42),
        "worker-1": (3, 15),
        "worker-2": (0, 6),
    }.items():
        assert (scores[worker]["matched_predicted"], scores[worker]["predicted"]) == (
            matched,
            marked,
        )
        assert scores[worker]["gold"] == 4
        assert scores[worker]["recall"] == pytest.approx(matched / 4)
