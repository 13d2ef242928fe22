"""Imported vote ranks in Chromium (docs/METRICS.md, "Vote ranks"): the dashboard's agreement
card warns that agreement among vote ranks is not inter-annotator agreement, its Workers card
says so, the Compare page says its vote-rank documents count at every K; the download links
cover every format; screenshots at 1440, 1024 and 390 px (no sideways scroll on a phone)."""

from __future__ import annotations

import pytest

from app.db import session_scope
from app.documents.studies import create_study, import_documents
from app.formats import EXPORT_FORMATS, parse_documents
from tests.browser.helpers import log_in
from tests.conftest import REPO
from tests.test_vote_ranks import snac_file

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "votes@example.org", "researcher password votes"


def test_vote_ranks_are_labelled_on_the_dashboard_and_compare_page(
    app, live_server, pw_page, artifacts, tmp_path
):
    from app.researchers.accounts import create_researcher

    documents = parse_documents(snac_file(tmp_path), "snac", as_work=True)
    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "votes", REPO / "taxonomies" / "snac.yaml")
        study.title = "Vote ranks of a SNaC file"
        import_documents(session, study, documents)
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    page = pw_page
    log_in(page, live_server.url, EMAIL, PASSWORD)
    page.goto(f"{live_server.url}/admin/studies/votes")
    warning = page.inner_text("#vote-ranks")
    assert warning.startswith("Not inter-annotator agreement: vote-1, vote-2, vote-3")
    assert "vote ranks" in page.inner_text("#workers-vote-ranks")
    links = page.locator("nav.exports a[data-format]").evaluate_all(
        "links => links.map(a => a.dataset.format)"
    )
    assert sorted(links) == sorted(EXPORT_FORMATS)
    shots = {"dashboard-votes": page.url}
    page.goto(f"{live_server.url}/admin/studies/votes/compare?min_workers=3")
    page.wait_for_selector("h1:has-text('Compare systems')")
    assert "4 documents imported by vote rank" in page.inner_text("#vote-rank-documents")
    shots["compare-votes"] = page.url
    for name, url in shots.items():
        page.goto(url)
        for width in (1440, 1024, 390):
            page.set_viewport_size({"width": width, "height": 900})
            wide = page.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= width, (name, width, wide)
            page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)
