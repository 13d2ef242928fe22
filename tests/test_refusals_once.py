"""A refusal is answered once: for each worker action, a refused request sends the database
the exact few statements its one function runs (counted where the database receives them,
tests/statements.py: psycopg2's cursor on Postgres, SQLAlchemy's cursor events on SQLite),
nothing is run a second time, nothing is stored, and the answer is the refusal's own body. On
Postgres the refusals of the actions that run alone send no ``BEGIN`` (so no ``ROLLBACK``
either): one round trip per statement or pair.

The caches are warm (the token's keys, the document's texts, the taxonomy), as they are for
every request of a page after its first, so the counts are the design's."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from app.db import session_scope
from app.models import Assignment
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, api_add, db_snapshot, open_token
from tests.statements import recorded, statements

UNKNOWN = "x" * 24


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def world(app, client):
    """A study; an active assignment with a mark, and one submitted, one abandoned; every
    cache warm."""
    make_study(app, documents=DOCUMENTS)
    active, submitted, abandoned = (open_token(client, worker=w) for w in ("w1", "w2", "w3"))
    mark = api_add(client, active, annotation_body(0, "Zoë", "CharE", client_id="z"))
    for token in (active, submitted, abandoned):
        assert client.post(f"/api/assignments/{token}/heartbeat", json={}).status_code == 204
        client.get(f"/api/assignments/{token}")
    assert client.post(f"/api/assignments/{submitted}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        session.execute(
            update(Assignment).where(Assignment.token == abandoned).values(status="abandoned")
        )
    return {
        "active": active,
        "submitted": submitted,
        "abandoned": abandoned,
        "mark": mark.get_json()["id"],
    }


def postgres(app) -> bool:
    return app.extensions["db_engine"].dialect.name == "postgresql"


def refused_once(app, client, method, path, body, status, expected_body, count, *, alone=True):
    """Send the request; assert its answer, the statements the database received, that
    nothing changed; on Postgres, for an action run alone, that no transaction was opened."""
    before = db_snapshot(app)
    with recorded(app) as sent:
        answer = client.open(path, method=method, json=body)
    assert (answer.status_code, answer.get_json()) == (status, expected_body), answer.get_json()
    assert len(statements(sent)) == count, sent
    if postgres(app) and alone:
        assert not any("BEGIN" in query or "ROLLBACK" in query for query in sent), sent
    assert db_snapshot(app) == before


def test_a_refused_add_is_answered_once(app, client, world):
    base = f"/api/assignments/{world['active']}/annotations"
    duplicate = annotation_body(0, "Zoë", "CharE", client_id="other")
    # the claim and the insert (one pair), the state, the client_id's row, the duplicate's id
    refused_once(
        app,
        client,
        "POST",
        base,
        duplicate,
        409,
        {
            "error": "you have already marked this span with this category",
            "existing_id": world["mark"],
        },
        5,
    )
    broken = {**annotation_body(0, "Zoë", "CharE"), "text": "Zoe"}
    # the body refused in Python; the assignment's state read first (its refusal comes first)
    refused_once(
        app,
        client,
        "POST",
        base,
        broken,
        400,
        {"error": "text does not match the segment at 36..39: expected 'Zoë'"},
        1,
    )
    late = f"/api/assignments/{world['submitted']}/annotations"
    message = "this assignment has been submitted and can no longer be changed"
    refused_once(
        app,
        client,
        "POST",
        late,
        annotation_body(1, "brother", "CharE"),
        409,
        {"error": message},
        3,
    )


def test_a_refused_remove_is_answered_once(app, client, world):
    base = f"/api/assignments/{world['active']}/annotations"
    no_such = {"error": "this assignment has no such annotation"}
    refused_once(app, client, "DELETE", f"{base}/999999", None, 404, no_such, 3)
    refused_once(app, client, "DELETE", f"{base}/{2**40}", None, 404, no_such, 1)
    gone = f"/api/assignments/{world['abandoned']}/annotations/{world['mark']}"
    abandoned = {"error": "this assignment is abandoned and can no longer be changed"}
    refused_once(app, client, "DELETE", gone, None, 409, abandoned, 3)


def test_a_refused_position_or_heartbeat_is_answered_once(app, client, world):
    base = f"/api/assignments/{world['active']}"
    out = {"error": "segment 9 is out of range (0..3)"}
    refused_once(app, client, "POST", f"{base}/position", {"segment": 9}, 400, out, 1)
    unknown = {"error": "no assignment with this token"}
    refused_once(app, client, "POST", f"/api/assignments/{UNKNOWN}/heartbeat", {}, 404, unknown, 1)
    refused_once(
        app, client, "POST", f"/api/assignments/{UNKNOWN}/position", {"segment": 0}, 404, unknown, 1
    )


def test_a_refused_edit_is_answered_once(app, client, world):
    mark = world["mark"]
    body = {"category": "RefE", "client_id": "e1"}
    late = f"/api/assignments/{world['abandoned']}/annotations/{mark}/edit"
    abandoned = {"error": "this assignment is abandoned and can no longer be changed"}
    # the live row's lock finds none; the state words why
    refused_once(app, client, "POST", late, body, 409, abandoned, 2, alone=False)
    base = f"/api/assignments/{world['active']}/annotations/{mark}/edit"
    unknown = {
        "error": "unknown field 'colour' (an edit takes attributes, categories, category, "
        "client_id, comment)"
    }
    refused_once(app, client, "POST", base, {**body, "colour": 1}, 400, unknown, 2, alone=False)


def test_a_refused_submit_is_answered_once(app, client, world):
    gone = f"/api/assignments/{world['abandoned']}/submit"
    abandoned = {"error": "this assignment is abandoned and can no longer be changed"}
    refused_once(app, client, "POST", gone, None, 409, abandoned, 1)
    unknown = {"error": "no assignment with this token"}
    refused_once(app, client, "POST", f"/api/assignments/{UNKNOWN}/submit", None, 404, unknown, 1)


def test_a_refused_arrival_is_answered_once(app, client, world):
    # the target's read, the locks (Postgres) and the conditional insert (one pair), the state
    # read back
    pair = 2 if postgres(app) else 1
    body = {"study": "demo", "worker_id": "w1", "document": "doc-2"}
    in_progress = (
        "this worker ID already has work in progress in another browser. Continue in the "
        "browser where you started; if you did not start this study, check the ID you were "
        "given"
    )
    refused_once(
        app, client, "POST", "/api/assignments", body, 409, {"error": in_progress}, 2 + pair
    )
    had = {"study": "demo", "worker_id": "w3", "document": "doc-1"}
    once = {"error": "this worker ID has already had this document; each worker gets it once"}
    refused_once(app, client, "POST", "/api/assignments", had, 409, once, 2 + pair)
    bad = {"study": "demo", "worker_id": " ", "document": "doc-1"}
    no_id = {"error": "worker_id must be non-empty text"}
    refused_once(app, client, "POST", "/api/assignments", bad, 400, no_id, 1)


def test_a_refused_read_is_answered_once(app, client, world):
    unknown = {"error": "no assignment with this token"}
    refused_once(app, client, "GET", f"/api/assignments/{UNKNOWN}", None, 404, unknown, 1)
    refused_once(app, client, "GET", "/api/assignments/a'b", None, 404, unknown, 0)


def test_refused_practice_checks_and_events_are_answered_once(app, client, world):
    base = f"/api/assignments/{world['active']}"
    unknown = {"error": "no assignment with this token"}
    # not a practice document: the 404 of a token that does not exist, after the locked read
    refused_once(app, client, "POST", f"{base}/practice/0", {}, 404, unknown, 1, alone=False)
    events = {"event": "shown", "suggestions": [1]}
    path = f"/api/assignments/{UNKNOWN}/suggestions/events"
    refused_once(app, client, "POST", path, events, 404, unknown, 1)
    bad = {"error": "event must be one of shown, accepted, dismissed"}
    refused_once(app, client, "POST", f"{base}/suggestions/events", {"event": "liked"}, 400, bad, 0)
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Assignment.status).where(Assignment.token == UNKNOWN)) is None
