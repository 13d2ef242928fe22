"""The duplicate guard is written twice: in SQL, where it decides (app/annotation/hot_sql.py,
the add's ``NOT EXISTS`` and ``duplicate_of``), and in the annotate page
(``findDuplicate`` of static/js/annotate/state.js), which flashes the existing mark instead of
sending a request the server would refuse. One table of cases feeds both: for each, the marks
are stored through the worker API (some removed again), the candidate is sent to the API
(409 naming the existing mark, or 201), and the page's guard, loaded in Chromium with the
marks as the API's own payload gives them, must name the same mark (or none). On SQLite and
Postgres."""

from __future__ import annotations

import itertools
import re

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Study
from tests.conftest import BACKENDS, REPO, make_database_url, make_study
from tests.helpers import DOCUMENTS, span

pytestmark = pytest.mark.browser

ORIGIN = "http://marginalia.test"
ANNA_0 = span(0, "Anna")
ANNA_2 = span(2, "Anna")
CHILD_2 = span(2, "an only child")


def mark(where: dict, category, *, paired=None, comment: str = "") -> dict:
    """A mark's body: one category, or several (a list)."""
    labels = {"categories": category} if isinstance(category, list) else {"category": category}
    return {**where, **labels, "paired": paired, "comment": comment}


# name: (marks stored first, the indexes of those removed again, the candidate, the index of
# the mark the candidate repeats or None)
CASES = {
    "same span and category": ([mark(ANNA_0, "CharE")], [], mark(ANNA_0, "CharE"), 0),
    "another category": ([mark(ANNA_0, "CharE")], [], mark(ANNA_0, "RefE"), None),
    "a comment changes nothing": (
        [mark(ANNA_0, "CharE", comment="first")],
        [],
        mark(ANNA_0, "CharE", comment="second"),
        0,
    ),
    "one character longer": (
        [mark(ANNA_0, "CharE")],
        [],
        mark(span(0, "Anna "), "CharE"),
        None,
    ),
    "the same offsets in another segment": (
        [mark(ANNA_0, "CharE")],
        [],
        mark(ANNA_2, "CharE"),
        None,
    ),
    "removed again": ([mark(ANNA_0, "CharE")], [0], mark(ANNA_0, "CharE"), None),
    "the second of two": (
        [mark(ANNA_0, "RefE"), mark(ANNA_0, "CharE")],
        [],
        mark(ANNA_0, "CharE"),
        1,
    ),
    "one category of a multi-label mark": (
        [mark(ANNA_0, ["CharE", "RefE"])],
        [],
        mark(ANNA_0, "RefE"),
        0,
    ),
    "a multi-label candidate sharing one": (
        [mark(ANNA_0, "CharE")],
        [],
        mark(ANNA_0, ["GramE", "CharE"]),
        0,
    ),
    "multi-label marks sharing none": (
        [mark(ANNA_0, ["CharE", "RefE"])],
        [],
        mark(ANNA_0, ["GramE", "CorefE"]),
        None,
    ),
    "the same pair": (
        [mark(ANNA_2, "InconE", paired=ANNA_0)],
        [],
        mark(ANNA_2, "InconE", paired=ANNA_0),
        0,
    ),
    "another earlier span": (
        [mark(ANNA_2, "InconE", paired=ANNA_0)],
        [],
        mark(ANNA_2, "InconE", paired=span(0, "Paris")),
        None,
    ),
    "a pair against none": (
        [mark(CHILD_2, "InconE", paired=span(0, "an only child"))],
        [],
        mark(CHILD_2, "RepE", paired=span(0, "an only child")),
        None,
    ),
}
_workers = itertools.count()


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def guard(pw_page):
    """annotate/state.js loaded as an ES module on a stand-in page; ``find(marks, body)``
    runs its ``findDuplicate`` with ``marks`` as the page's annotations."""
    page = pw_page
    module = (REPO / "static/js/annotate/state.js").read_text("utf-8")
    handles = "".join(  # every element the module looks up when it loads
        f'<div id="{name}"></div>'
        for name in sorted(set(re.findall(r'byId\("([\w-]+)"\)', module)) - {"annotate"})
    )

    def serve(route):
        path = route.request.url.removeprefix(ORIGIN)
        if path.startswith("/static/"):
            file = REPO / path.lstrip("/")
            route.fulfill(body=file.read_text("utf-8"), content_type="text/javascript")
        else:
            route.fulfill(
                body='<!doctype html><title>guard</title><div id="annotate" '
                f'data-api="/api/assignments/t" data-token="t"></div>{handles}',
                content_type="text/html",
            )

    page.route(f"{ORIGIN}/**", serve)
    page.goto(f"{ORIGIN}/")
    page.evaluate(
        """async () => { window.stateModule = await import('/static/js/annotate/state.js'); }"""
    )

    def find(marks: list[dict], body: dict):
        return page.evaluate(
            """([marks, body]) => {
                 const { state, findDuplicate } = window.stateModule;
                 state.annotations = marks;
                 const twin = findDuplicate(body);
                 return twin ? twin.id : null;
               }""",
            [marks, body],
        )

    return find


def test_the_pages_guard_and_the_servers_agree_on_every_case(app, client, guard):
    make_study(app, documents=DOCUMENTS, annotators_per_doc=1000)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.taxonomy = {**study.taxonomy, "multi_label": True}
    for name, (marks, removed, candidate, repeats) in CASES.items():
        worker = f"w{next(_workers)}"
        opened = client.post(
            "/api/assignments", json={"study": "demo", "worker_id": worker, "document": "doc-1"}
        )
        token = opened.get_json()["token"]
        base = f"/api/assignments/{token}"
        ids = []
        for n, body in enumerate(marks):
            stored = client.post(f"{base}/annotations", json={**body, "client_id": f"m{n}"})
            assert stored.status_code == 201, (name, stored.get_json())
            ids.append(stored.get_json()["id"])
        for n in removed:
            assert client.delete(f"{base}/annotations/{ids[n]}").status_code == 204
        shown = client.get(base).get_json()["annotations"]  # what the page holds
        by_page = guard(shown, {**candidate, "client_id": "candidate"})
        answer = client.post(f"{base}/annotations", json={**candidate, "client_id": "candidate"})
        by_server = answer.get_json().get("existing_id") if answer.status_code == 409 else None
        assert answer.status_code in (201, 409), (name, answer.get_json())
        expected = None if repeats is None else ids[repeats]
        assert by_server == expected, (name, "server", answer.get_json())
        assert by_page == expected, (name, "page")
