"""Attention checks in Chromium, researcher side: a threshold set in the settings form flags
the worker who missed the checks in the dashboard's attention table; screenshots kept."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.documents.studies import import_documents
from app.formats import DocumentInput, GoldSpan
from app.models import GoldError, Study
from tests.browser.helpers import log_in
from tests.conftest import make_study

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "checks@example.org", "researcher password 3"
TEXT = ["Mara fed the cat. The cat was a dog all along.", "Nothing odd here at all."]


def seed(app) -> None:
    make_study(app, slug="att", documents=[("real-1", TEXT)], suggestions="off")
    check = DocumentInput(
        "check-1",
        TEXT,
        gold=[
            GoldSpan(segment=0, text="The cat was a dog", category="CharE", votes=1),
            GoldSpan(segment=1, text="odd here", category="GramE", votes=1),
        ],
    )
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.title = "Attention pilot"
        import_documents(session, study, [check], checks=True)
        assert session.scalar(select(GoldError.is_check)) is True
    client = app.test_client()
    marks = {"careful": [(0, "The cat was a dog", "CharE"), (1, "odd here", "GramE")], "hasty": []}
    for worker, spans in marks.items():
        answer = client.post(
            "/api/assignments", json={"study": "att", "document": "check-1", "worker_id": worker}
        )
        token = answer.get_json()["token"]
        for segment, text, category in spans:
            start = TEXT[segment].index(text)
            body = {"segment": segment, "start": start, "end": start + len(text)}
            body.update(text=text, category=category)
            assert (
                client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
            )
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def test_threshold_flags_a_worker_in_the_dashboard(app, live_server, pw_page, artifacts):
    from app.researchers.accounts import create_researcher

    seed(app)
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    page = pw_page
    log_in(page, live_server.url, EMAIL, PASSWORD)
    page.click("a.study-link")
    page.wait_for_selector("h1:has-text('Attention pilot')")
    rows = page.locator("#attention-table tbody tr")
    assert rows.count() == 2 and page.locator("#attention-table tr.flagged").count() == 0
    page.click("#settings-link")  # the threshold is on the study's Settings page
    page.fill('input[name="min_catch_rate"]', "0.8")
    page.click("#save-settings")
    page.wait_for_selector(".flash-ok")
    assert page.input_value('input[name="min_catch_rate"]') == "0.8"
    page.click("a:has-text('Dashboard')")
    page.wait_for_selector("#attention-table tr.flagged")
    flagged = page.locator("#attention-table tr.flagged")
    assert flagged.get_attribute("data-worker") == "hasty"
    assert "0%" in flagged.inner_text() and "flagged" in flagged.inner_text()
    careful = page.locator('#attention-table tr[data-worker="careful"]').inner_text()
    assert "100%" in careful
    shots = artifacts / "practice"
    shots.mkdir(exist_ok=True)
    for width, height in ((1440, 900), (1024, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate(
            "() => document.getElementById('attention-heading').scrollIntoView({block: 'start'})"
        )
        page.screenshot(path=str(shots / f"dashboard-attention-{width}.png"))
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
