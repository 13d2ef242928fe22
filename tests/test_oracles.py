"""What a worker could learn by asking, replayed on SQLite and Postgres: which suggestion
ids a document hides from them (an add's ``suggestion_id`` answered 201 for a hidden id of
the document and 400 for any other: 52 of 52 hidden ids found in 399 requests), and a
qualification document's score (the done page printed its F1: each throwaway worker ID asked
again). Each test is named for the attack it replays; the answers are compared whole
(status and body), never timed."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from app.db import session_scope
from app.models import Annotation, Assignment, Document, Study, Suggestion
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, SEGMENTS, api_add, open_token, span


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def add_suggestion(app, external_id: str, segment: int = 0, score: float = 0.9) -> int:
    with app.app_context(), session_scope() as session:
        document = session.scalar(select(Document).where(Document.external_id == external_id))
        suggestion = Suggestion(
            document_id=document.id,
            segment=segment,
            start=0,
            end=4,
            text="Anna",
            category="CharE",
            score=score,
            detector="test",
            detector_version="1",
        )
        session.add(suggestion)
        session.flush()
        return suggestion.id


def stored_links(app) -> dict[str, int | None]:
    """Each live mark's client_id and the suggestion it is stored as coming from."""
    with app.app_context(), session_scope() as session:
        rows = session.execute(select(Annotation.client_id, Annotation.suggestion_id)).all()
    return dict(rows)


# The fields an add's answer repeats from its own request, and the row's own id and time:
# what is left must be the same, whatever suggestion_id the request gave.
OWN = ("id", "created_at", "client_id", "segment", "start", "end", "text", "category")


def probe(client, token: str, n: int, suggestion_id: int | None) -> tuple[int, dict]:
    """An add on its own span (the ``n``-th word of segment 0) with ``suggestion_id``: the
    answer's status and its body without the fields the request chose."""
    word = SEGMENTS[0].split()[n].strip(".'s")
    body = {**span(0, word), "category": "CharE", "client_id": f"probe-{n}"}
    if suggestion_id is not None:
        body["suggestion_id"] = suggestion_id
    answer = api_add(client, token, body)
    kept = {key: value for key, value in answer.get_json().items() if key not in OWN}
    return answer.status_code, kept


def hidden_ids(app) -> dict[str, int]:
    """A suggestion on doc-1 (the worker's document) and one on doc-2, and an id that no
    suggestion has."""
    mine, other = add_suggestion(app, "doc-1"), add_suggestion(app, "doc-2")
    return {"this document's": mine, "another document's": other, "no one's": other + 1000}


def test_an_adds_suggestion_id_does_not_tell_which_ids_a_hidden_study_has(app, client):
    """The probe: in a study whose suggestions are hidden, an add naming a hidden id of the
    document was a 201 and any other id a 400. Now every id the worker was not shown gets
    the answer of an add without one, and is stored as no suggestion."""
    make_study(app, documents=DOCUMENTS, suggestions="hidden", annotators_per_doc=10)
    ids = hidden_ids(app)
    token = open_token(client)
    plain = probe(client, token, 0, None)
    answers = {name: probe(client, token, n, id_) for n, (name, id_) in enumerate(ids.items(), 1)}
    assert plain[0] == 201 and plain[1]["suggestion_id"] is None
    assert answers == dict.fromkeys(ids, plain), answers
    assert set(stored_links(app).values()) == {None}  # no mark claims a hidden suggestion


def test_an_unassisted_workers_suggestion_id_does_not_tell_which_ids_exist(app, client):
    """The same probe from the unassisted condition of a study that shows suggestions: the
    ids an assisted worker sees are hidden from this one."""
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    ids = hidden_ids(app)
    token = open_token(client)
    with app.app_context(), session_scope() as session:
        session.execute(update(Assignment).values(condition="unassisted"))
    plain = probe(client, token, 0, None)
    answers = {name: probe(client, token, n, id_) for n, (name, id_) in enumerate(ids.items(), 1)}
    assert answers == dict.fromkeys(ids, plain), answers
    assert set(stored_links(app).values()) == {None}


def test_a_shown_suggestion_is_stored_and_one_past_the_hint_limit_is_not(app, client):
    """What the worker is shown is what an add may name: the payload's own rule (score at
    least the study's lowest, at most its hints per segment)."""
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    shown = add_suggestion(app, "doc-1", score=0.9)
    below = add_suggestion(app, "doc-1", score=0.1)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.settings = {**(study.settings or {}), "max_hints_per_segment": 1}
    token = open_token(client)
    payload = client.get(f"/api/assignments/{token}").get_json()
    assert [s["id"] for s in payload["suggestions"]] == [shown]
    assert probe(client, token, 0, shown)[1]["suggestion_id"] == shown
    assert probe(client, token, 1, below)[1]["suggestion_id"] is None
    assert stored_links(app) == {"probe-0": shown, "probe-1": None}


def test_an_edit_keeps_the_suggestion_its_mark_came_from(app, client):
    """An edit is the mark again with new values: the suggestion it was stored from stays,
    even once the study stopped showing it."""
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    shown = add_suggestion(app, "doc-1")
    token = open_token(client)
    body = {**span(0, "Anna"), "category": "CharE", "client_id": "m", "suggestion_id": shown}
    mark = api_add(client, token, body).get_json()
    assert mark["suggestion_id"] == shown
    with app.app_context(), session_scope() as session:
        session.scalar(select(Study)).suggestions = "hidden"
    edited = client.post(
        f"/api/assignments/{token}/annotations/{mark['id']}/edit",
        json={"comment": "on second thought", "client_id": "m2"},
    )
    assert edited.status_code == 201, edited.get_json()
    assert edited.get_json()["suggestion_id"] == shown
    assert stored_links(app) == {"m": shown, "m2": shown}
