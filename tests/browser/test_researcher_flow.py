"""Acceptance (issue 5) in Chromium: a researcher logs in, creates a study, uploads documents
and watches progress change while a Prolific worker annotates in a second browser context
and is redirected to the completion URL; an MTurk preview shows read-only text and an
accepted assignment posts back to a local stand-in for MTurk's externalSubmit."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from app.db import session_scope
from app.models import Assignment
from tests.browser.conftest import VIEWPORT
from tests.browser.helpers import category_button, drag_select, wait_loaded, wait_saved
from tests.conftest import make_study
from tests.test_platforms import StandIn

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "lead@example.org", "researcher password 1"
DOCUMENTS = {
    "gpt-story-1": [
        "Mara keeps the lighthouse on Skerry Island with her old dog Pilot.",
        "One stormy night a fishing boat loses its way near the rocks.",
        "Mara lights the lamp, and the boat finds the harbour safely.",
    ],
    "human-story-1": [
        "The village school has a new teacher, Mr Okafor, who loves maps.",
        "He hangs a huge map of the world above the blackboard.",
        "By spring every child can name the rivers of three continents.",
    ],
}


@pytest.fixture
def completion_page(app):
    """A page on the live server standing in for Prolific's completion URL."""

    @app.get("/_test/prolific-complete")
    def _prolific_complete():
        return "<!doctype html><title>Prolific stand-in</title><h1>Submission complete</h1>"

    return "/_test/prolific-complete"


@pytest.fixture
def stand_in():
    server = StandIn()
    yield server
    server.close()


@pytest.fixture
def researcher(app):
    from app.auth import create_researcher

    app.config["ADMIN_POLL_MS"] = 700
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD)


def field(page, name: str) -> str:
    return page.locator(f'[data-field="{name}"]').first.inner_text().strip()


def wait_field(page, name: str, value: str, timeout: float = 15_000) -> None:
    page.wait_for_function(
        "([name, value]) => { const el = document.querySelector(`[data-field=\"${name}\"]`);"
        " return el && el.textContent.trim() === value; }",
        arg=[name, value],
        timeout=timeout,
    )


def test_researcher_creates_uploads_and_watches_a_prolific_worker(
    app, completion_page, researcher, live_server, pw_browser, pw_page, artifacts, tmp_path
):
    page = pw_page
    base = live_server.url
    # --- log in
    page.goto(f"{base}/admin/")
    assert "/admin/login" in page.url
    page.fill('input[name="email"]', EMAIL)
    page.fill('input[name="password"]', PASSWORD)
    page.click('button:has-text("Log in")')
    page.wait_for_selector("h1:has-text('Studies')")

    # --- create a study (Prolific, completion URL on the live server)
    page.click("a.button:has-text('New study')")
    page.fill('input[name="slug"]', "lighthouse")
    page.fill('input[name="title"]', "Coherence of short stories")
    page.select_option('select[name="taxonomy"]', "snac.yaml")
    page.fill('input[name="annotators_per_doc"]', "2")
    page.select_option('select[name="platform"]', "prolific")
    completion = f"{base}{completion_page}?cc=C0DE42"
    page.fill('input[name="completion_url"]', completion)
    page.click("button:has-text('Create study')")
    page.wait_for_url(f"{base}/admin/studies/lighthouse")
    assert "Study lighthouse created" in page.inner_text(".flash")

    # --- upload documents
    upload = tmp_path / "stories.json"
    upload.write_text(json.dumps(DOCUMENTS), encoding="utf-8")
    page.set_input_files('#upload-form input[name="file"]', str(upload))
    page.uncheck('#upload-form input[name="ner"]')
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(".flash:has-text('Imported 2 documents (6 segments)')")
    assert field(page, "documents") == "2"
    assert field(page, "assignments.active") == "0"
    assert field(page, "slots") == "4"
    assert page.locator(".doc-grid .doc").count() == 2

    # --- a Prolific worker arrives in a second browser context
    worker_context = pw_browser.new_context(viewport=VIEWPORT)
    try:
        worker = worker_context.new_page()
        errors: list[str] = []
        worker.on("pageerror", lambda exc: errors.append(str(exc)))
        worker.goto(f"{base}/s/lighthouse?PROLIFIC_PID=60a1b2c3d4e5f6&STUDY_ID=st-9"
                    f"&SESSION_ID=sess-77")
        wait_loaded(worker)
        assert worker_context.cookies() == []  # identified by the token in the URL only
        wait_field(page, "assignments.active", "1")  # the dashboard notices the arrival

        drag_select(worker, 0, "Mara")
        worker.wait_for_function("() => document.getElementById('span-field').value === 'Mara'")
        category_button(worker, "CharE").click()
        worker.click("#add-button")
        wait_saved(worker)
        wait_field(page, "annotations.in_progress", "1")

        worker.click("#next-button")
        worker.click("#next-button")
        worker.wait_for_selector("#submit-button:not([hidden])")
        worker.click("#submit-button")
        worker.wait_for_url(completion)
        assert worker.inner_text("h1") == "Submission complete"
        assert errors == []
    finally:
        worker_context.close()

    wait_field(page, "slots_submitted", "1")
    wait_field(page, "assignments.active", "0")
    page.wait_for_selector("#worker-table td:has-text('60a1b2c3d4e5f6')")
    page.wait_for_selector("#charts svg.chart")
    assert field(page, "percent") == "25"
    assert page.locator(".doc-grid .pip.done").count() == 1
    page.screenshot(path=str(artifacts / "researcher-dashboard.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.screenshot(path=str(artifacts / "researcher-dashboard-top.png"))


def test_mturk_preview_and_post_back_to_a_stand_in(app, live_server, pw_page, stand_in, artifacts):
    app.config["MTURK_SUBMIT_ORIGINS"] = [stand_in.url]
    make_study(app, slug="hits", documents=[(k, v) for k, v in DOCUMENTS.items()])
    from tests.test_platforms import configure

    configure(app, "hits", platform="mturk")
    page = pw_page
    base = live_server.url

    # preview: the text, read-only, and nothing stored
    page.goto(f"{base}/s/hits?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=HIT9")
    page.wait_for_selector("#preview-text")
    assert "Mara keeps the lighthouse" in page.inner_text("#preview-text")
    assert page.locator("#annot-form").count() == 0
    assert page.locator("textarea, input:not([type=hidden]), button").count() == 0
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Assignment)) == 0
    page.screenshot(path=str(artifacts / "mturk-preview.png"), full_page=True)

    # accepted: annotate, submit, and the done page posts back to turkSubmitTo
    page.goto(f"{base}/s/hits?assignmentId=3XYZASSIGN&hitId=HIT9&workerId=A2WORKER"
              f"&turkSubmitTo={stand_in.url}")
    wait_loaded(page)
    page.click("#next-button")
    page.click("#next-button")
    page.wait_for_selector("#submit-button:not([hidden])")
    page.click("#submit-button")
    page.wait_for_url(f"{stand_in.url}/mturk/externalSubmit", timeout=15_000)
    assert page.inner_text("h1") == "HIT submitted"
    assert len(stand_in.posts) == 1
    path, fields = stand_in.posts[0]
    assert path == "/mturk/externalSubmit"
    assert fields["assignmentId"] == "3XYZASSIGN"
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment))
        assert row.status == "submitted" and row.worker_id == "A2WORKER"
        assert fields["completion_code"] == row.completion_code
