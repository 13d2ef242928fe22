"""A Thresh document's source texts show in a collapsed panel on the annotate page, as
inert text; documents without them show no panel."""

from __future__ import annotations

import json

import pytest

from tests.browser.helpers import open_assignment
from tests.conftest import REPO

pytestmark = pytest.mark.browser

ARTICLE = 'The <b>club</b> won.\n<img src=x onerror="window.__xss = 1">'


def test_thresh_context_and_source_show_collapsed_as_text(app, live_server, pw_page, tmp_path):
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.formats import parse_documents

    entries = [
        {
            "id": "t1",
            "context": ARTICLE,
            "source": "A reference.",
            "target": "Anna won.",
            "edits": [],
        },
        {"id": "t2", "source": "", "target": "Nothing else.", "edits": []},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    with app.app_context(), session_scope() as session:
        # one annotator per document: w1 gets t1, w2 (arriving next) t2
        study, _ = create_study(
            session, "src", REPO / "taxonomies" / "snac.yaml", annotators_per_doc=1
        )
        import_documents(session, study, parse_documents(path, "thresh"))

    page = pw_page
    open_assignment(page, live_server.url, "src", "w1")
    assert page.locator(".cur-text .seg-text").inner_text() == "Anna won."
    panel = page.locator("#sources")
    assert panel.is_visible() and panel.get_attribute("open") is None
    page.click("#sources summary")
    assert page.locator("#sources h3").all_inner_texts() == ["Context", "Source"]
    assert page.locator("#sources .source-text").first.inner_text() == ARTICLE
    assert page.locator("#sources img, #sources b").count() == 0
    assert page.evaluate("() => window.__xss") is None

    open_assignment(page, live_server.url, "src", "w2")
    assert page.locator(".cur-text .seg-text").inner_text() == "Nothing else."
    assert page.locator("#sources").is_hidden()
