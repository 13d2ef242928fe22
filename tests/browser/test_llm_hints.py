"""LLM hints end to end: an ExtEval study, the LLM backend against a local stand-in
chat-completions server, hints with their reasons on the annotate page (text, never HTML),
and the recall against suggestions in the study report."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.detection.worker import work
from app.models import Study
from app.quality.reporting import format_report, study_report
from model_server.llm import LLMDetector
from model_server.llm_client import ClientSettings
from tests.browser.helpers import annotation_texts, log_in, open_assignment, wait_saved
from tests.conftest import make_study
from tests.llm_standin import errors, standin

pytestmark = pytest.mark.browser

SEGMENTS = [
    "The board met on Monday. The chairman left early.",
    "However, she refused to sign. As a result, the deal collapsed.",
]
SHE = "<img src=x onerror=alert(1)> 'she' has no antecedent: no woman is mentioned."
RESULT = "Nothing before it is a cause."


def script(segment: str, number: int):
    if segment != SEGMENTS[1]:
        return errors()
    return errors(
        {"category": "IncomCoref", "span": "she", "context": "However, she refused", "reason": SHE},
        {"category": "IncomDisco", "span": "As a result", "reason": RESULT},
        {"category": "NotACategory", "span": "deal", "reason": "dropped"},
    )


def test_llm_hints_show_their_reasons_and_feed_the_recall_in_the_report(
    app, live_server, pw_page, artifacts
):
    make_study(
        app,
        slug="exteval",
        taxonomy="taxonomies/exteval.yaml",
        documents=[("summary", SEGMENTS)],
        suggestions="shown",
    )
    settings = ClientSettings(model="stand-in", backoff=0.01, cache_dir=None)
    with standin(script) as server:
        settings.base_url = server.url
        stats = work(app.extensions["db_sessionmaker"], LLMDetector(settings), once=True)
    assert (stats["done"], stats["suggestions"], stats["dropped"]) == (1, 2, 1)

    page = pw_page
    open_assignment(page, live_server.url, "exteval", "w1")
    assert page.locator("#hints").is_hidden()  # nothing flagged in the first segment
    page.click("#next-button")
    items = page.locator("#hint-list .hint-item")
    assert items.count() == 2
    assert items.locator(".hint-text").all_inner_texts() == ["she", "As a result"]
    assert items.locator(".hint-reason").all_inner_texts() == [SHE, RESULT]
    assert items.locator("img").count() == 0  # the reason is text, never markup
    page.screenshot(path=str(artifacts / "annotate-llm-hints-1280x800.png"))

    items.filter(has_text="she").get_by_role("button", name="Use").click()
    page.click("#add-button")
    assert annotation_texts(page) == ["she"]
    wait_saved(page)
    page.click("#submit-button")
    page.wait_for_url("**/done")

    with app.app_context(), session_scope() as session:
        report = study_report(session, session.scalar(select(Study)))
    (worker,) = report["workers"]
    assert worker["suggestion_recall"]["caught"] == 1
    assert worker["suggestion_recall"]["total"] == 2
    assert worker["suggestion_recall"]["recall"] == pytest.approx(0.5)
    assert "0.50 (1/2)" in format_report(report)
    # the recall estimate for an uncalibrated backend (no gold documents here): the share of
    # its suggestions marked, stated as uncalibrated (docs/METRICS.md)
    sure = worker["confident_recall"]
    assert (sure["basis"], sure["caught"], sure["total"]) == ("uncalibrated", 1, 2)
    assert sure["recall"] == pytest.approx(0.5)
    confident = report["detector"]["confident"]
    assert confident["IncomCoref"]["basis"] == "uncalibrated"
    assert "0.50 (1/2) uncalibrated" in format_report(report)

    # ... and the researcher sees it on the dashboard
    with app.app_context(), session_scope() as session:
        from app.researchers.accounts import create_researcher

        create_researcher(session, "lead@example.org", "llm hints password 1", role="admin")
    log_in(page, live_server.url, "lead@example.org", "llm hints password 1")
    page.goto(f"{live_server.url}/admin/studies/exteval")
    cell = page.locator("#worker-table tbody tr").first.locator("td.confident-recall")
    assert cell.inner_text().split() == ["50%", "1/2", "uncalibrated"]
    listed = page.locator("#confident-thresholds").inner_text()
    assert "IncomCoref: all its suggestions, uncalibrated" in listed
    assert "IncomDisco: all its suggestions, uncalibrated" in listed
    for width in (1440, 1024, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.locator("#workers-heading").scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / f"dashboard-llm-recall-{width}.png"))
