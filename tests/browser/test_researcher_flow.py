"""The researcher's first study in Chromium: a researcher logs in, creates a study, uploads
documents and watches progress change while a Prolific worker annotates in a second browser context
and is redirected to the completion URL (the MTurk half is in test_mturk_flow.py)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment
from tests.browser.conftest import VIEWPORT
from tests.browser.helpers import category_button, drag_select, wait_loaded, wait_saved
from tests.helpers import run_import_worker

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
def researcher(app):
    from app.researchers.accounts import create_researcher

    app.config["ADMIN_POLL_MS"] = 700
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD)


def field(page, name: str) -> str:
    return page.locator(f'[data-field="{name}"]').first.inner_text().strip()


def wait_field(page, name: str, value: str, timeout: float = 15_000) -> None:
    page.wait_for_function(
        '([name, value]) => { const el = document.querySelector(`[data-field="${name}"]`);'
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

    # --- a broken taxonomy upload is refused with file:line:field, and nothing is created
    page.click("a.button:has-text('New study')")
    broken = tmp_path / "mine.yaml"
    broken.write_text(
        "name: Mine\ncategories:\n  - id: Typo\n    label: Typo\n    scope: paragraph\n",
        encoding="utf-8",
    )
    page.fill('input[name="slug"]', "mine")
    page.set_input_files('input[name="taxonomy_file"]', str(broken))
    page.click("button:has-text('Create study')")
    assert page.inner_text("#form-error").startswith("mine.yaml:5: categories[0].scope:")
    page.screenshot(path=str(artifacts / "researcher-new-study-error.png"), full_page=True)

    # --- create a study (Prolific, completion URL on the live server)
    page.set_input_files('input[name="taxonomy_file"]', [])
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
    page.wait_for_selector(".flash:has-text('stories.json is queued for import')")
    page.wait_for_selector(".import-job[data-status='queued']")
    run_import_worker(app)  # what `marginalia worker` does: the dashboard's polling shows it
    page.wait_for_selector(".import-job:has-text('Imported 2 documents (6 segments)')")
    wait_field(page, "documents", "2")
    page.wait_for_function("() => document.querySelectorAll('.doc-grid .doc').length === 2")
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
        worker.goto(
            f"{base}/s/lighthouse?PROLIFIC_PID=60a1b2c3d4e5f6&STUDY_ID=st-9&SESSION_ID=sess-77"
        )
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

    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment))
        assert (row.worker_id, row.platform, row.status) == (
            "60a1b2c3d4e5f6",
            "prolific",
            "submitted",
        )
        assert row.platform_data == {"study_id": "st-9", "session_id": "sess-77"}
    wait_field(page, "slots_submitted", "1")
    wait_field(page, "assignments.active", "0")
    page.wait_for_selector("#worker-table td:has-text('60a1b2c3d4e5f6')")
    page.wait_for_selector("#charts svg.chart")
    assert field(page, "percent") == "25"
    assert page.locator(".doc-grid .pip.done").count() == 1
    page.screenshot(path=str(artifacts / "researcher-dashboard.png"), full_page=True)
    page.click("a:has-text('Studies')")
    page.wait_for_selector("a.study-link:has-text('Coherence of short stories')")
    page.screenshot(path=str(artifacts / "researcher-studies.png"))
    page.goto(f"{base}/admin/studies/lighthouse")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.screenshot(path=str(artifacts / "researcher-dashboard-top.png"))
