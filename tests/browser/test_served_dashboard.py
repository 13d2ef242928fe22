"""A big study's dashboard in Chromium (app/quality/served.py): it opens on "not computed yet",
and when the worker has stored the report the polling page shows its figures and how old they
are without a reload by hand; after a submit it says the figures are being recomputed."""

from __future__ import annotations

import pytest

from app.db import session_scope
from tests.browser.helpers import log_in
from tests.test_served_report import DOCUMENTS, THIRD, make_study, run_jobs, work

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "served@example.org", "researcher password 3"


def test_the_dashboard_follows_the_served_report(app, live_server, pw_page):
    from app.researchers.accounts import create_researcher

    app.config.update(REPORT_INLINE_ANNOTATIONS=0, REPORT_REFRESH_SECONDS=0, ADMIN_POLL_MS=300)
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    make_study(app, documents=[*DOCUMENTS, THIRD], annotators_per_doc=3)
    work(app, "w1")
    work(app, "w2", "Paris")
    log_in(pw_page, live_server.url, EMAIL, PASSWORD)
    pw_page.goto(f"{live_server.url}/admin/studies/demo")
    state = pw_page.locator("#report-state")
    assert "not computed yet · queued" in state.inner_text()
    assert pw_page.locator("#report-pending").is_visible()
    run_jobs(app)
    pw_page.wait_for_selector("#worker-table", timeout=10_000)  # the page reloaded itself
    assert "ago · up to date" in state.inner_text()
    assert state.get_attribute("data-state") == "current"
    work(app, "w3", "Zoë")
    # the submit changes the polled fingerprint: the sections and the state line are swapped
    pw_page.wait_for_selector('#report-state[data-state="stale"]', timeout=10_000)
    assert "ago · recomputation queued" in state.inner_text()
