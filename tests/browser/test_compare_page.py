"""The Compare page in Chromium: SNaC dev as workers plus two documents whose source is
hostile text; the dashboard links to it, the tables and matplotlib's figure render under the
admin CSP (no violation reported), the hostile name shows as text, and screenshots at 1440,
1024 and 390 px are kept (the page does not scroll sideways on a phone)."""

from __future__ import annotations

import pytest

from app.db import session_scope
from app.documents.records import DocumentInput, ImportedSpan
from app.documents.studies import get_study, import_documents
from tests.browser.helpers import log_in
from tests.test_compare_snac import import_snac_dev_workers

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "compare@example.org", "researcher password 29"
HOSTILE = '<img src=x onerror="alert(1)"> $\\frac{1}{2}$ & co'
TEXT = "Mara opens the door. The stranger smiles at her. She leaves the room."


def seed(app) -> None:
    from app.researchers.accounts import create_researcher

    import_snac_dev_workers(app)
    hostile = []
    for n in range(2):
        doc = DocumentInput(f"hostile-{n}", [TEXT], meta={"source": HOSTILE})
        for worker in ("h1", "h2"):
            doc.work.append(ImportedSpan(worker, 0, 21, 33, "The stranger", "CharE"))
        hostile.append(doc)
    with app.app_context(), session_scope() as session:
        study = get_study(session, "snac-dev")
        study.title = "SNaC dev: three systems"
        import_documents(session, study, hostile)
        create_researcher(session, EMAIL, PASSWORD, role="admin")


def test_compare_page_renders_the_systems_and_the_figure(app, live_server, pw_page, artifacts):
    seed(app)
    page = pw_page
    log_in(page, live_server.url, EMAIL, PASSWORD)
    page.goto(f"{live_server.url}/admin/studies/snac-dev")
    page.click("#compare-link")
    page.wait_for_selector("h1:has-text('Compare systems')")
    systems = page.locator("#system-table tbody th").all_text_contents()
    assert systems == [HOSTILE, "book_175b", "book_6b", "tripod"]
    assert page.locator("img[onerror], #system-table img").count() == 0
    row = page.locator("#system-table tbody tr").nth(2).inner_text()  # book_6b
    assert "\t1.93\n[" in row  # errors per 100 words at K = 2, its interval below
    assert page.locator("#pair-table tbody tr").count() == 6
    loaded = page.evaluate(
        "() => { const i = document.querySelector('.compare-figure img');"
        " return [i.complete, i.naturalWidth]; }"
    )
    assert loaded[0] and loaded[1] > 500, loaded
    for width in (1440, 1024, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"compare-{width}.png"), full_page=True)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390

    page.select_option("select[name=layer]", "adjudicated")
    page.click("#compare-form button")
    page.wait_for_selector("#compare-description")
    assert "adjudicated layer" in page.inner_text("#compare-description")
    assert page.locator(".empty").count() == 1  # no review done yet
    page.goto(f"{live_server.url}/admin/studies/snac-dev/compare?min_workers=zero")
    assert "whole number" in page.inner_text("#compare-error")
