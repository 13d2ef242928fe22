"""The dashboard of a busy study in Chromium: several sources, workers, suggestions and a gold
document; the charts, worker table and agreement render, and a screenshot is kept."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.formats import DocumentInput, GoldSpan
from app.models import Document, Study, Suggestion
from tests.browser.helpers import log_in
from tests.conftest import make_study

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "busy@example.org", "researcher password 2"
SEGMENTS = [
    "Captain Ruiz sails the Marisol out of Cadiz at dawn with twelve sailors.",
    "The storm tears the mainsail, and the sailors sails the ship to a small island.",
    "On the island, Ruiz finds a letter from his brother, who he never had.",
]
# (segment, text, category) that workers may mark
CANDIDATES = [
    (0, "Captain Ruiz", "CharE"),
    (1, "the sailors sails", "GramE"),
    (1, "a small island", "RefE"),
    (2, "his brother, who he never had", "CharE"),
    (2, "On the island", "SceneE"),
    (2, "who he never had", "GramE"),
]
SOURCES = ("bart", "pegasus", "human")


def seed(app) -> None:
    documents = [(f"{src}-{i}", SEGMENTS) for src in SOURCES for i in range(1, 3)]
    make_study(app, slug="voyage", documents=documents, suggestions="shown", annotators_per_doc=3)
    gold = DocumentInput(
        "gold-1",
        SEGMENTS,
        gold=[
            GoldSpan(segment=1, text="the sailors sails", category="GramE", votes=3),
            GoldSpan(segment=2, text="his brother, who he never had", category="CharE", votes=2),
        ],
    )
    with app.app_context(), session_scope() as session:
        from app.documents.studies import import_documents

        study = session.scalar(select(Study).where(Study.slug == "voyage"))
        study.title = "Voyage summaries: coherence pilot"
        study.settings = {"randomise_conditions": True}
        import_documents(session, study, [gold], gold=True)
        for doc in session.scalars(select(Document).where(Document.study_id == study.id)):
            for segment, text, category in CANDIDATES[:4]:
                start = SEGMENTS[segment].index(text)
                session.add(
                    Suggestion(
                        document_id=doc.id,
                        segment=segment,
                        start=start,
                        end=start + len(text),
                        text=text,
                        category=category,
                        score=0.8,
                        detector="rules",
                        detector_version="1",
                    )
                )


def work(client, worker: str, rng: random.Random, *, submit: bool = True) -> None:
    token = client.get(f"/s/voyage?worker_id={worker}").headers["Location"].split("/a/")[1]
    for segment, text, category in rng.sample(CANDIDATES, rng.randint(2, 5)):
        start = SEGMENTS[segment].index(text)
        body = {
            "segment": segment,
            "start": start,
            "end": start + len(text),
            "text": text,
            "category": category,
        }
        assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    if submit:
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200


@pytest.fixture
def busy_study(app):
    from app.researchers.accounts import create_researcher

    seed(app)
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")  # the seeded study has no owner
    client = app.test_client()
    rng = random.Random(7)
    for worker in ("anna-k", "ben-o", "chen-l", "dee-w"):
        for _ in range(3):
            work(client, worker, rng)
    work(client, "eli-p", rng, submit=False)


def test_busy_dashboard_renders_and_is_readable(app, busy_study, live_server, pw_page, artifacts):
    page = pw_page
    log_in(page, live_server.url, EMAIL, PASSWORD)
    page.click("a.study-link")
    page.wait_for_selector("h1:has-text('Voyage summaries')")
    assert page.locator("#worker-table tbody tr").count() == 5
    assert page.locator("#charts svg.chart").count() == 2
    assert page.locator("#workers svg.chart").count() == 1  # recall per worker
    sources = page.locator("#charts svg.chart").nth(1).inner_html()
    for src in (*SOURCES, "gold"):
        assert f">{src}<" in sources
    assert page.locator("#agreement tbody tr").count() >= 7
    conditions = page.locator("#condition-table tbody tr").all_inner_texts()
    assert [row.split()[0] for row in conditions] == ["assisted", "unassisted"]
    assert page.locator("[data-field='assignments.active']").inner_text() == "1"
    page.screenshot(path=str(artifacts / "researcher-dashboard-busy.png"), full_page=True)
    page.locator("#charts").screenshot(path=str(artifacts / "researcher-dashboard-charts.png"))
    page.locator("#workers").screenshot(path=str(artifacts / "researcher-dashboard-workers.png"))

    # On a phone (390 px) the header wraps instead of overflowing; wide tables and charts
    # scroll inside their own box, the page itself does not scroll sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "researcher-dashboard-390.png"))
    header = page.evaluate(
        "() => { const t = document.querySelector('.topbar');"
        " return [t.scrollWidth, t.clientWidth, t.getBoundingClientRect().right]; }"
    )
    assert header[0] <= header[1] and header[2] <= 390, header
    wide = page.evaluate(
        """() => [...document.querySelectorAll('.page *')]
            .filter((e) => e.getBoundingClientRect().right > 391)
            .map((e) => e.tagName + '.' + e.className + '#' + e.id).slice(0, 8)"""
    )
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, wide
