"""The dashboard's agreement and worker views with γ, unitizing α and the worker models
computed, in Chromium: two SNaC dev documents with their three annotators as
workers; the figures job's numbers on the dashboard (the γ table, the pair heat map, the
worker models' line and the consensus link), on the Workers page and on a worker's page;
auto-accept by posterior from the review list, counted then confirmed;
screenshots at 1440, 1024 and 390 px (tests/.artifacts/), no sideways scroll on a phone."""

from __future__ import annotations

import pytest

from app.db import session_scope
from app.documents.studies import get_study
from app.quality.reporting import study_report
from tests.browser.helpers import log_in
from tests.test_compare_snac import import_snac_dev_workers

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "agreement@example.org", "researcher password 32"
DOCS = ("book_6b108", "tripod2")  # three annotators each (tests/test_unitizing_snac.py)
WIDTHS = (1440, 1024, 390)


def seed(app) -> dict:
    """The two documents with each annotator's spans as a submitted worker; the figures
    computed as the worker's job computes them; the report."""
    from app.researchers.accounts import create_researcher

    import_snac_dev_workers(app, "agree", only=set(DOCS))
    with app.app_context(), session_scope() as session:
        get_study(session, "agree").title = "SNaC dev: unitized agreement"
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    with app.app_context(), session_scope() as session:
        return study_report(session, get_study(session, "agree"), compute_figures=True)


def shoot(page, artifacts, name: str, *sections: str) -> None:
    """The whole page and each of ``sections`` (CSS ids) at each width."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)
        for section in sections:
            shot = artifacts / f"{name}-{section}-{width}.png"
            page.locator(f"#{section}").screenshot(path=str(shot))
        scroll = page.evaluate("() => document.documentElement.scrollWidth")
        assert scroll <= width, (name, width, scroll)


def test_agreement_and_worker_views(app, live_server, pw_page, artifacts):
    report = seed(app)
    agreement = report["agreement"]
    assert agreement["unitized"]["state"] == "current"
    page = pw_page
    log_in(page, live_server.url, EMAIL, PASSWORD)
    page.goto(f"{live_server.url}/admin/studies/agree")
    assert page.get_attribute("#unitized-state", "data-state") == "current"
    every = page.locator("#unitized-table tbody tr").last.inner_text()
    assert f"{agreement['gamma']['all']['gamma']:.2f}" in every
    assert page.locator("#pair-heat tbody tr").count() == 3
    assert "Consensus" in page.inner_text("#worker-models") or "consensus" in page.inner_text(
        "#worker-models"
    )
    competence = {row["worker_id"]: row["reliability"]["competence"] for row in report["workers"]}
    # with three workers MACE settles on the most conservative (docs/METRICS.md, "With few
    # workers"): worker-2 marks only the errors all three marked
    consensus = {row["worker_id"]: row["reliability"]["consensus_f1"] for row in report["workers"]}
    assert competence["worker-0"] < competence["worker-1"] < competence["worker-2"]
    assert consensus["worker-0"] < consensus["worker-1"] < consensus["worker-2"]
    assert consensus["worker-2"] > 0.99  # 0.995
    expected = {row["worker_id"]: row["reliability"]["expected_f1"] for row in report["workers"]}
    # the expected F1 ranks (its cell: the rank, then the figure); MACE's competence is on
    # the Workers page, as agreement with the majority
    row = page.locator('#worker-table tr[data-worker="worker-0"]')
    assert row.locator("td.ranking").inner_text().startswith(f"#2 {expected['worker-0']:.2f}")
    ranked = sorted(expected, key=lambda w: (-expected[w], w))
    rows = page.locator("#worker-table tbody tr").all()
    assert [r.get_attribute("data-worker") for r in rows] == ranked
    shoot(page, artifacts, "dashboard", "agreement", "workers")
    page.goto(f"{live_server.url}/admin/studies/agree/workers")
    row = page.locator('#workers-table tr[data-worker="worker-1"]')
    assert row.locator(".expected-f1").inner_text() == f"{expected['worker-1']:.2f}"
    cell = row.locator("td.competence").inner_text()
    assert cell == f"{competence['worker-1']:.2f} · {consensus['worker-1']:.2f}", cell
    rows = page.locator("#workers-table tbody tr").all()
    assert [r.get_attribute("data-worker") for r in rows] == ranked
    shoot(page, artifacts, "workers-models")
    page.goto(f"{live_server.url}/admin/studies/agree/worker?id=worker-2")
    assert page.inner_text("#mace-competence") == f"{competence['worker-2']:.2f}"
    assert page.inner_text("#expected-f1") == f"{expected['worker-2']:.2f}"
    shoot(page, artifacts, "worker-models")
    # auto-accept by posterior from the review list: counted and shown first, then confirmed
    page.goto(f"{live_server.url}/admin/studies/agree/review")
    page.fill("#auto-accept-posterior-form input[name=min_posterior]", "0.9")
    page.click("#auto-accept-posterior-form button")
    page.wait_for_selector("#auto-accept-confirm")
    assert "MACE posterior is at least 0.9" in page.inner_text("#auto-accept-confirm")
    shoot(page, artifacts, "review-posterior", "auto-accept")
    page.click("#auto-accept-yes")
    page.wait_for_selector("text=the consensus holds")
