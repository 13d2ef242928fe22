"""MTurk in Chromium: an MTurk preview URL shows read-only text and an accepted
assignment posts back, through a real form POST, to a local stand-in for MTurk's
externalSubmit (AWS closed Mechanical Turk on 2026-09-30)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.db import session_scope
from app.models import Assignment
from tests.browser.helpers import wait_loaded
from tests.browser.test_researcher_flow import DOCUMENTS
from tests.conftest import make_study
from tests.test_platforms import StandIn, configure

pytestmark = pytest.mark.browser


@pytest.fixture
def stand_in():
    server = StandIn()
    yield server
    server.close()


def test_mturk_preview_and_post_back_to_a_stand_in(app, live_server, pw_page, stand_in, artifacts):
    app.config["MTURK_SUBMIT_ORIGINS"] = [stand_in.url]
    make_study(app, slug="hits", documents=[(k, v) for k, v in DOCUMENTS.items()])
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
    page.goto(
        f"{base}/s/hits?assignmentId=3XYZASSIGN&hitId=HIT9&workerId=A2WORKER"
        f"&turkSubmitTo={stand_in.url}"
    )
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
