"""The LLM annotator's pages in Chromium: the Settings page's button queues a run, the
dashboard follows it live while the worker annotates (screenshots mid-run), and the
calibration view shows the model beside the humans on SNaC dev (screenshots); hostile text
from the model shows as text, no CSP violation, no serious accessibility violation, and no
sideways scrolling on a phone."""

from __future__ import annotations

import pytest

from app.db import session_scope
from tests.browser import axe
from tests.browser.helpers import log_in
from tests.llm_annotating import add_annotator
from tests.llm_standin import Reply, standin
from tests.test_llm_calibration import import_dev, noisy_gold, replay_humans

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "llm@example.org", "researcher password 31"
HOSTILE = '<img src=x onerror="alert(1)">'
WIDTHS = (1440, 1024, 390)


def screenshots(page, artifacts, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.set_viewport_size({"width": 1280, "height": 800})


def test_run_progress_and_calibration_view(
    app, client, live_server, pw_page, artifacts, axe_source
):
    from app.llm.steps import run_next
    from app.researchers.accounts import create_researcher

    raw = import_dev(app)
    app.config.update(ARRIVAL_RATE_LIMIT="100000 per minute", FIGURES_GAMMA_SECONDS=0)
    app.config["ADMIN_POLL_MS"] = 300
    replay_humans(client, raw, range(3))
    table, _, _ = noisy_gold(app)
    first = next(iter(table))
    table[first] = [
        *table[first],
        {"category": "CharE", "span": HOSTILE, "context": "", "reason": "x"},
    ]
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")

    def script(segment: str, number: int) -> Reply:
        import json

        return Reply(content=json.dumps({"errors": table.get(segment, [])}))

    page = pw_page
    with standin(script) as server:
        add_annotator(app, "dev", server.url)
        from app.documents.studies import get_study
        from app.llm.annotators import set_costs

        with app.app_context(), session_scope() as session:
            set_costs(get_study(session, "dev"), model="stand-in", input_price=2.5,
                      output_price=10, human_per_hour=12)  # fmt: skip
        log_in(page, live_server.url, EMAIL, PASSWORD)
        page.goto(f"{live_server.url}/admin/studies/dev/settings#llm")
        screenshots(page, artifacts, "llm-settings")
        page.click("#run-llm-gpt")
        page.wait_for_selector(".flash:has-text('Run 1 queued')")
        page.goto(f"{live_server.url}/admin/studies/dev")
        page.wait_for_selector("#llm-runs:has-text('0 / 3 documents')")
        factory = app.extensions["db_sessionmaker"]
        with app.app_context():
            assert run_next(factory, "test-worker")  # one document annotated
        page.wait_for_selector("#llm-runs:has-text('1 / 3 documents')")  # the page's own poll
        screenshots(page, artifacts, "llm-run-progress")
        assert axe.check(page, "llm-dashboard") == []
        with app.app_context():
            while run_next(factory, "test-worker"):
                pass
    page.wait_for_selector("#llm-runs .llm-run[data-stage='done']")
    page.click("#llm-runs a.mono")
    page.wait_for_selector("h1:has-text('Calibration')")
    assert page.locator("#gold-f1 thead th").all_text_contents() == [
        "Category", "llm:gpt", "humans (pooled)", "h0", "h1", "h2",
    ]  # fmt: skip
    assert page.locator("#gold-f1 tbody tr").count() == 8  # seven categories, then all
    assert page.locator("#problems td", has_text=HOSTILE).count() == 1
    assert page.locator("img[onerror]").count() == 0
    assert "2.5 / 10 USD" in page.inner_text("#cost-heading + p")
    screenshots(page, artifacts, "llm-calibration")
    assert axe.check(page, "llm-calibration") == []
