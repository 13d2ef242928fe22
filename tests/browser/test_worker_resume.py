"""Resume in Chromium: the browser that opened an assignment gets it back from
the study link (the token it kept in localStorage); another browser with the same worker ID
gets the "work in progress in another browser" page, never the token; the annotate page's
heartbeat marks the slot as engaged."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment
from tests.browser.helpers import open_assignment, wait_loaded
from tests.conftest import make_study

pytestmark = pytest.mark.browser

DOCUMENTS = [(f"doc-{i}", [f"Segment one of {i}.", f"Segment two of {i}."]) for i in range(3)]


def engaged(app, token: str) -> bool:
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment).where(Assignment.token == token))
        return row.engaged_at is not None


def test_same_browser_resumes_another_browser_is_told_no(app, live_server, pw_page, pw_browser):
    make_study(app, documents=DOCUMENTS)
    token = open_assignment(pw_page, live_server.url, "demo", "w-resume")
    deadline = time.monotonic() + 10
    while not engaged(app, token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert engaged(app, token), "the page's heartbeat did not reach the server"

    # the same browser, back through the study link: the kept token brings it back
    pw_page.goto(f"{live_server.url}/s/demo?worker_id=w-resume")
    wait_loaded(pw_page)
    assert pw_page.url.endswith(f"/a/{token}")

    # another browser with the same worker ID: a clear page, no token anywhere
    other = pw_browser.new_context()
    try:
        page = other.new_page()
        page.goto(f"{live_server.url}/s/demo?worker_id=w-resume")
        page.wait_for_selector("#resume-message")
        assert "already has work in progress in another browser" in page.content()
        assert token not in page.content() and token not in page.url
        # a wrong token kept in that browser is presented once, refused, and not retried
        page.evaluate("localStorage.setItem('marginalia.resume:demo:w-resume', 'not-the-token')")
        page.goto(f"{live_server.url}/s/demo?worker_id=w-resume")
        page.wait_for_url("**resume=not-the-token**")
        page.wait_for_selector("#resume-message:not([hidden])")
        time.sleep(0.5)
        assert page.url.endswith("resume=not-the-token")
        assert token not in page.content()
    finally:
        other.close()
