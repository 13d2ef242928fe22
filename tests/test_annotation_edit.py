"""A worker changes an annotation's category or comment in place: ``POST
/api/assignments/<token>/annotations/<id>/edit`` keeps the span, stores the change as the old
row removed and the same span added (history), is idempotent on its client_id, and refuses
what an add or a remove would refuse. Real HTTP on SQLite and Postgres."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Annotation
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, export_rows, open_token


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def marked(app, client) -> tuple[str, dict]:
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    body = annotation_body(0, "Anna", "CharE", comment="first thought", client_id="c-1")
    answer = client.post(f"/api/assignments/{token}/annotations", json=body)
    assert answer.status_code == 201
    return token, answer.get_json()


def edit(client, token: str, annotation_id: int, body: dict):
    return client.post(f"/api/assignments/{token}/annotations/{annotation_id}/edit", json=body)


def rows(app) -> list[tuple]:
    with app.app_context(), session_scope() as session:
        return [
            (a.client_id, a.category, a.comment, a.start, a.end, a.removed_at is not None)
            for a in session.scalars(select(Annotation).order_by(Annotation.id))
        ]


def test_an_edit_keeps_the_span_and_the_history(app, client, marked):
    token, first = marked
    answer = edit(client, token, first["id"], {"category": "RefE", "client_id": "c-2"})
    assert answer.status_code == 201, answer.get_json()
    new = answer.get_json()
    assert (new["category"], new["comment"], new["start"], new["end"], new["text"]) == (
        "RefE",
        "first thought",
        first["start"],
        first["end"],
        "Anna",
    )
    assert new["id"] != first["id"] and new["client_id"] == "c-2"
    # a retry (the answer was lost) returns the same row
    again = edit(client, token, first["id"], {"category": "RefE", "client_id": "c-2"})
    assert again.status_code == 200 and again.get_json()["id"] == new["id"]
    # the comment alone
    third = edit(
        client, token, new["id"], {"comment": "a reference, not a character", "client_id": "c-3"}
    )
    assert third.status_code == 201
    assert rows(app) == [
        ("c-1", "CharE", "first thought", 0, 4, True),
        ("c-2", "RefE", "first thought", 0, 4, True),
        ("c-3", "RefE", "a reference, not a character", 0, 4, False),
    ]
    live = client.get(f"/api/assignments/{token}").get_json()["annotations"]
    assert [(a["client_id"], a["category"]) for a in live] == [("c-3", "RefE")]
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    exported = [(r["category"], r["comment"]) for r in export_rows(app)]
    assert exported == [("RefE", "a reference, not a character")]


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"category": "RefE"}, 400, "client_id"),
        ({"category": "Nope", "client_id": "x"}, 400, "unknown category"),
        ({"category": "InconE", "client_id": "x"}, 400, "paired"),
        ({"client_id": "x"}, 400, "changes nothing"),
        ({"category": "RefE", "client_id": "x", "start": 0}, 400, "unknown field"),
        ({"comment": 5, "client_id": "x"}, 400, "comment"),
        ({"comment": "x" * 5001, "client_id": "x"}, 400, "longer"),
    ],
)
def test_bad_edits_change_nothing(app, client, marked, body, status, words):
    token, first = marked
    before = rows(app)
    answer = edit(client, token, first["id"], body)
    assert answer.status_code == status and words in answer.get_json()["error"]
    assert rows(app) == before


def test_edits_of_what_cannot_change_are_refused(app, client, marked):
    token, first = marked
    assert edit(client, token, 999_999, {"comment": "x", "client_id": "x"}).status_code == 404
    other = open_token(client, "w2")
    assert edit(client, other, first["id"], {"comment": "x", "client_id": "x"}).status_code == 404
    assert client.delete(f"/api/assignments/{token}/annotations/{first['id']}").status_code == 204
    gone = edit(client, token, first["id"], {"comment": "x", "client_id": "x"})
    assert gone.status_code == 409 and "removed or edited meanwhile" in gone.get_json()["error"]
    kept = client.post(
        f"/api/assignments/{token}/annotations", json=annotation_body(1, "Anna's", "CharE")
    ).get_json()
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    late = edit(client, token, kept["id"], {"comment": "x", "client_id": "y"})
    assert late.status_code == 409 and "submitted" in late.get_json()["error"]
