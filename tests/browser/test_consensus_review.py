"""Consensus review in Chromium: one document's auto-accept by the consensus posterior on its review
page (counted first, the researcher's confirmation, then written), on the five-sentence case
of tests/test_consensus_cli.py; the page screenshotted at 1440, 1024 and 390 px."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import AdjudicatedError
from tests.browser.helpers import log_in
from tests.test_consensus_cli import BOUNDS, five_sentences

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "reviewer@example.org", "reviewer password 32"


def test_auto_accept_one_document_by_posterior(app, client, live_server, pw_page, artifacts):
    from app.researchers.accounts import create_researcher

    five_sentences(app, client, pause={"after": 1, "min_expected_f1": 0.5})
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    page, base = pw_page, live_server.url
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, base, EMAIL, PASSWORD)
    page.goto(f"{base}/admin/studies/demo/review/document?document=d")
    page.wait_for_selector("#review[data-ready]")
    asked: list[str] = []
    answer = {"yes": False}

    def reply(dialog) -> None:
        asked.append(dialog.message)
        dialog.accept() if answer["yes"] else dialog.dismiss()

    page.on("dialog", reply)
    # a posterior above 1 is refused by the form itself, before any question
    page.fill("#auto-min-workers", "1")
    page.fill("#auto-min-posterior", "1.5")
    page.click("#auto-accept-document button")
    assert page.eval_on_selector("#auto-min-posterior", "e => e.validity.rangeOverflow")
    assert not asked
    # by votes alone (1): all five; held by the consensus at 0.9: the first two. Dismissed
    # first (nothing written), then accepted.
    page.fill("#auto-min-posterior", "")
    page.click("#auto-accept-document button")
    page.fill("#auto-min-posterior", "0.9")
    page.click("#auto-accept-document button")
    assert asked[0].startswith("Accept 5 candidates of this document (d) marked by at least 1")
    assert asked[1].startswith(
        "Accept 2 candidates of this document (d) marked by at least 1 workers and held by "
        "the consensus (MACE posterior at least 0.9)"
    )
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(AdjudicatedError.id)) is None
    answer["yes"] = True
    page.click("#auto-accept-document button")
    page.wait_for_function(
        "() => document.getElementById('review-summary').textContent.includes('2 decided')"
    )
    with app.app_context(), session_scope() as session:
        accepted = session.execute(select(AdjudicatedError.start, AdjudicatedError.end)).all()
    assert sorted(accepted) == BOUNDS[:2]

    for width in (1440, 1024, 390):  # the review page with its posterior control
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"review-document-posterior-{width}.png"))
