"""The annotate page through the production web server (``marginalia web``: granian and the
front of app/web/front.py, as ``make run``, the Procfile and the Docker image start it),
not werkzeug's: a worker adds, removes, moves, reloads and submits in Chromium, and the
database holds exactly what the page was told was saved."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.browser.helpers import (
    annotation_texts,
    category_button,
    drag_select,
    open_assignment,
    progress_text,
    wait_loaded,
    wait_saved,
    wait_value,
)
from tests.conftest import make_study
from tests.test_slow_clients import start_web, stop_web

pytestmark = pytest.mark.browser

SEGMENTS = [
    "Anna Berg runs a bakery in the harbour town of Lisle. She is an only child.",
    "Anna's brother visits her and they argue about the shop. Tomas leaves before dawn.",
    "In the end the the bakery closes and Anna moves to the city.",
]


@pytest.fixture
def web_server(app, tmp_path):
    process, base, _port = start_web(
        tmp_path, {"DATABASE_URL": app.config["DATABASE_URL"], "SECRET_KEY": "test"}
    )
    yield base
    stop_web(process)


def test_a_document_through_marginalia_web(app, web_server, pw_page, artifacts):
    from app.db import session_scope
    from app.models import Annotation, Assignment

    make_study(app, slug="granian", documents=[("granian-1", SEGMENTS)])
    page = pw_page
    token = open_assignment(page, web_server, "granian", "worker-g")
    assert progress_text(page) == "Segment 1 of 3"
    page.click("#next-button")
    drag_select(page, 1, "Tomas")
    wait_value(page, "#span-field", "Tomas")
    category_button(page, "CharE").click()
    page.click("#add-button")
    drag_select(page, 1, "the shop")
    wait_value(page, "#span-field", "the shop")
    category_button(page, "GramE").click()
    page.click("#add-button")
    wait_saved(page)
    page.locator('.annot-item[data-category="GramE"] .remove-btn').click()
    wait_saved(page)
    page.reload()
    wait_loaded(page)
    assert progress_text(page) == "Segment 2 of 3"
    assert annotation_texts(page) == ["Tomas"]
    page.click("#next-button")
    drag_select(page, 2, "the the")
    wait_value(page, "#span-field", "the the")
    category_button(page, "GramE").click()
    page.click("#add-button")
    page.screenshot(path=str(artifacts / "annotate-through-marginalia-web-1280x800.png"))
    page.click("#submit-button")
    page.wait_for_url(f"**/a/{token}/done")
    assert page.locator("#completion-code").inner_text().strip()

    with app.app_context(), session_scope() as session:
        assignment = session.scalars(select(Assignment).where(Assignment.token == token)).one()
        rows = session.scalars(
            select(Annotation).where(Annotation.assignment_id == assignment.id)
        ).all()
        assert assignment.status == "submitted"
        live = sorted((a.segment, a.text, a.category) for a in rows if a.removed_at is None)
        gone = [(a.segment, a.text) for a in rows if a.removed_at is not None]
    assert live == [(1, "Tomas", "CharE"), (2, "the the", "GramE")]
    assert gone == [(1, "the shop")]
