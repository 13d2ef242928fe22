"""Time on task and worker management in Chromium: the annotate page measures active time and
sends it with its position updates; the researcher's worker pages show it; rejecting the worker takes
their work out of the exports and the agreement figures and gives their slot to the next
worker. Screenshots of the worker pages at 1440, 1024 and 390 px wide."""

from __future__ import annotations

import csv
import io
import time

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, SegmentTime, Study
from tests.browser.conftest import ARTIFACTS
from tests.browser.helpers import (
    category_button,
    drag_select,
    log_in,
    open_assignment,
    wait_saved,
)
from tests.conftest import make_study
from tests.helpers import annotation_body, api_add, export_text, open_token

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "ops@example.org", "researcher password 13"
SEGMENTS = [
    "Anna Berg runs a bakery in the harbour town of Lisle. She is an only child.",
    "Every morning Anna bakes rye bread for the fishermen, who pay her in herring.",
    "Anna's brother visits her and they argue about the shop. Tomas leaves before dawn.",
]
SHOTS = ARTIFACTS / "worker-management"


def busy(page, seconds: float) -> None:
    """A reader at work: the pointer moves now and then for ``seconds``."""
    end = time.monotonic() + seconds
    x = 200
    while time.monotonic() < end:
        x = 200 + (x + 37) % 400
        page.mouse.move(x, 300)
        page.wait_for_timeout(150)


def agreement_workers(app) -> int:
    from app.quality.reporting import study_report

    with app.app_context(), session_scope() as session:
        return study_report(session, session.scalar(select(Study)))["agreement"]["workers"]


def arrive(client, worker: str) -> int:
    return client.post("/api/assignments", json={"study": "demo", "worker_id": worker}).status_code


def shoot(page, name: str, *, check: bool = True) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1440, 1024, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert not check or overflow <= 1, f"{name} at {width}px scrolls sideways by {overflow}px"
    page.set_viewport_size({"width": 1280, "height": 800})


def test_time_is_measured_shown_and_reject_reopens_the_slot(app, client, live_server, pw_page):
    from app.researchers.accounts import create_researcher

    make_study(app, documents=[("doc-1", SEGMENTS)], annotators_per_doc=2)
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD).role = "admin"
        study = session.scalar(select(Study))
        study.settings = {**(study.settings or {}), "min_seconds_per_segment": 30}
    # another worker, through the API, marks the same error
    other = open_token(client, worker="api-worker")
    api_add(client, other, annotation_body(0, "only child", "CharE", texts=SEGMENTS))
    assert client.post(f"/api/assignments/{other}/submit").status_code == 200

    page = pw_page
    started = time.monotonic()
    token = open_assignment(page, live_server.url, "demo", "reader-1")
    busy(page, 2.5)
    drag_select(page, 0, "only child")
    category_button(page, "CharE").click()
    page.click("#add-button")
    wait_saved(page)
    busy(page, 1.0)
    page.click("#next-button")
    busy(page, 2.0)
    page.click("#next-button")
    busy(page, 1.0)
    # hiding the tab sends what was measured on this segment at once
    with page.expect_request(lambda r: r.url.endswith("/position")) as sent:
        page.evaluate(
            """() => {
                Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});
                document.dispatchEvent(new Event('visibilitychange'));
                delete document.visibilityState;
            }"""
        )
    body = sent.value.post_data_json
    assert body["segment"] == 2 and body["active"]["2"] >= 0.5, body
    busy(page, 0.5)
    page.click("#submit-button")
    page.wait_for_url("**/done")
    elapsed = time.monotonic() - started

    with app.app_context(), session_scope() as session:
        aid = session.scalar(select(Assignment.id).where(Assignment.token == token))
        rows = {
            r.segment: r.active_seconds
            for r in session.scalars(select(SegmentTime).where(SegmentTime.assignment_id == aid))
        }
    assert set(rows) == {0, 1, 2}
    assert rows[0] >= 2.5 and rows[1] >= 1.5 and rows[2] >= 0.5, rows
    assert sum(rows.values()) <= elapsed + 1, (rows, elapsed)

    # the researcher's pages show the time and the speeder flag (median below 30 s)
    log_in(page, live_server.url, EMAIL, PASSWORD)
    page.goto(f"{live_server.url}/admin/studies/demo/workers")
    row = page.locator('#workers-table tr[data-worker="reader-1"]')
    median = sorted(rows.values())[1]
    assert f"{median:.1f}" in row.inner_text()
    assert "speeder" in row.inner_text()
    shoot(page, "workers")
    row.locator("a").click()
    page.wait_for_selector("#worker-id")
    assert page.locator("#median-seconds").inner_text() == f"{median:.1f}"
    assert "1: " in page.locator("#worker-assignments").inner_text()

    assert agreement_workers(app) == 2
    assert arrive(client, "late-worker") == 409  # doc-1 has both its workers
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click("#action-reject")
    page.wait_for_selector(".flash-ok")
    assert asked and "Reject reader-1?" in asked[0]  # Reject asks first
    page.fill("textarea[name=note]", "Marked nothing on segment 3; fast.")
    page.click("#action-note")
    page.wait_for_selector("#worker-log")
    log = page.locator("#worker-log").inner_text()
    assert "reject" in log and "note" in log and EMAIL in log
    shoot(page, "worker")

    rows_after = list(csv.DictReader(io.StringIO(export_text(app))))
    assert {r["worker_id"] for r in rows_after} == {"api-worker"}
    download = page.request.get(f"{live_server.url}/admin/studies/demo/export.csv").text()
    assert "reader-1" not in download
    assert agreement_workers(app) == 1
    assert arrive(client, "late-worker") == 201  # the reopened slot
    assert arrive(client, "reader-1") == 409  # rejected workers are blocked
    # the dashboard's worker table links to the worker page and shows active time
    page.goto(f"{live_server.url}/admin/studies/demo")
    assert page.locator("#worker-table a[href*='/worker?id=api-worker']").count() == 1
    shoot(page, "dashboard", check=False)
