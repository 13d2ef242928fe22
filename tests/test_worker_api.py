"""The worker API's one entry (app/web/worker_api.py) answers every request of the annotate
page before Flask, on SQLite and Postgres: each action's answer, its refusals, a body it
cannot read, with the headers every answer carries; Flask never sees them."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Annotation, Assignment, SegmentTime
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, db_snapshot, open_token

HEADERS = (
    "Cache-Control",
    "Content-Type",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "Content-Security-Policy",
    "X-Frame-Options",
    "Strict-Transport-Security",
)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def conversation(client, token: str) -> list[tuple]:
    """A worker's requests, happy and not, each as (status, body without ids, headers)."""
    base = f"/api/assignments/{token}"
    zoe = annotation_body(0, "Zoë", "CharE", client_id="c1")
    answers = [
        client.post(f"{base}/annotations", json=zoe),  # stored: 201
        client.post(f"{base}/annotations", json=zoe),  # the outbox's retry: 200, same row
        client.post(f"{base}/annotations", json={**zoe, "client_id": "c2"}),  # duplicate 409
        client.post(f"{base}/annotations", json={**zoe, "category": "Nope", "client_id": "c3"}),
        client.post(f"{base}/annotations", data="{}", content_type="text/plain"),
        client.post(f"{base}/annotations", data=b'{"segment": ', content_type="application/json"),
        client.post(f"{base}/position", json={"segment": 1, "active": {"0": 2.5}}),
        client.post(f"{base}/position", json={"segment": 9}),
        client.post(f"{base}/position", json={"segment": 1, "active": {"0": -1}}),
        client.post(f"{base}/heartbeat", json={}),
    ]
    stored = answers[0].get_json()["id"]
    answers += [
        client.delete(f"{base}/annotations/{stored}"),  # 204
        client.delete(f"{base}/annotations/{stored}"),  # again: 204 (idempotent)
        client.delete(f"{base}/annotations/999999"),  # 404
        client.post(f"{base}/submit"),
        client.post(f"{base}/submit"),  # again: the same code (idempotent)
        client.post(
            f"{base}/annotations", json=annotation_body(1, "brother", "CharE", client_id="c9")
        ),  # 409 submitted
        client.post(f"{base}/heartbeat", json={}),
        client.post(f"/api/assignments/{'x' * 24}/annotations", json=zoe),  # 404
        client.post("/api/assignments/a'b;--/annotations", json=zoe),  # 404
        client.post(f"/api/assignments/{'x' * 24}/submit"),  # 404
        client.post("/api/assignments/a'b;--/submit"),  # 404
        client.post("/api/assignments/a%00b/submit"),  # 404
    ]
    return [
        (
            answer.status_code,
            _without_ids(answer.get_json(silent=True)),
            # A 204 has no body, and names no type.
            {
                name: answer.headers.get(name)
                for name in HEADERS
                if not (answer.status_code == 204 and name == "Content-Type")
            },
        )
        for answer in answers
    ]


def _without_ids(body):
    if isinstance(body, dict):
        return {
            k: v
            for k, v in body.items()
            if k not in ("id", "existing_id", "created_at", "completion_code", "redirect_url")
        }
    return body


def stored_rows(app, token: str) -> dict:
    with app.app_context(), session_scope() as session:
        assignment = session.scalar(select(Assignment).where(Assignment.token == token))
        annotations = session.scalars(
            select(Annotation).where(Annotation.assignment_id == assignment.id)
        ).all()
        times = session.execute(
            select(SegmentTime.segment, SegmentTime.active_seconds).where(
                SegmentTime.assignment_id == assignment.id
            )
        ).all()
        return {
            "status": assignment.status,
            "current_segment": assignment.current_segment,
            "engaged": assignment.engaged_at is not None,
            "annotations": sorted(
                (a.client_id, a.segment, a.start, a.end, a.text, a.removed_at is not None)
                for a in annotations
            ),
            "times": sorted(times),
        }


def test_a_workers_conversation_is_answered_before_flask(app, client, flask_saw):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client, worker="w")
    flask_saw.clear()
    answers = conversation(client, token)
    assert [status for status, _body, _headers in answers] == [
        201, 200, 409, 400, 400, 400, 204, 400, 400, 204, 204, 204, 404, 200, 200, 409, 204, 404,
        404, 404, 404, 404
    ]  # fmt: skip
    bodies = [body for _status, body, _headers in answers]
    assert bodies[2] == {"error": "you have already marked this span with this category"}
    assert bodies[4] == {"error": "send a JSON body with Content-Type: application/json"}
    assert bodies[5] == {"error": "the body is not valid JSON"}
    assert bodies[13] == bodies[14]  # the same code again
    assert "submitted" in bodies[15]["error"]
    assert all(body == {"error": "no assignment with this token"} for body in bodies[17:])
    for status, _body, headers in answers:
        assert headers["Cache-Control"] == "no-store"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Strict-Transport-Security"] is None  # plain HTTP
        assert (headers.get("Content-Type") == "application/json") == (status != 204)
    assert stored_rows(app, token) == {
        "status": "submitted",
        "current_segment": 1,
        "engaged": True,
        "annotations": [("c1", 0, 36, 39, "Zoë", True)],
        "times": [(0, 2.5), (1, 0.0)],
    }
    assert flask_saw == []


def test_a_submit_is_stored_once_and_answered_again(app, client, flask_saw):
    """A submit stores the status, the time and a code; again, the same code."""
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    first = client.post(f"/api/assignments/{token}/submit")
    again = client.post(f"/api/assignments/{token}/submit")
    assert flask_saw == []  # the entry answered both
    assert first.status_code == again.status_code == 200
    assert first.get_json() == again.get_json()
    assert first.get_json()["completion_code"].startswith("MG-")
    with app.app_context(), session_scope() as session:
        assignment = session.scalar(select(Assignment).where(Assignment.token == token))
        assert (assignment.status, assignment.completion_code) == (
            "submitted",
            first.get_json()["completion_code"],
        )
        assert assignment.submitted_at is not None


def test_the_answers_carry_the_security_headers_over_https(app, client, flask_saw):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    answer = client.post(
        f"/api/assignments/{token}/annotations",
        json=annotation_body(0, "Zoë", "CharE"),
        base_url="https://localhost",
    )
    assert answer.status_code == 201
    assert flask_saw == []  # the entry answered
    assert answer.headers["Strict-Transport-Security"].startswith("max-age=")
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.get_json()["text"] == "Zoë"


def test_a_body_over_the_limit_is_a_413_naming_it(app, client, flask_saw):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    app.config["MAX_CONTENT_LENGTH"] = 100
    before = db_snapshot(app)
    body = annotation_body(0, "Zoë", "CharE", comment="x" * 200)
    answer = client.post(f"/api/assignments/{token}/annotations", json=body)
    assert answer.status_code == 413
    assert answer.get_json() == {
        "error": "request body is larger than the limit of 100 bytes (100 bytes)"
    }
    assert db_snapshot(app) == before
    assert flask_saw == []


def test_bodies_it_cannot_read_are_a_400_naming_the_problem(app, client, flask_saw):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    before = db_snapshot(app)
    url = f"/api/assignments/{token}/annotations"
    deep = "[" * 100_000 + "]" * 100_000
    sent = [
        (b"\xff\xfe not text", "the body is not valid JSON"),
        (deep.encode(), "the JSON body is nested too deeply"),
        (b'{"text": "a\\u0000b"}', "text must not contain NUL characters or unpaired surrogates"),
        (b'{"text": "\\ud800"}', "text must not contain NUL characters or unpaired surrogates"),
        (b"null", "the body is not valid JSON"),
        (b"", "the body is not valid JSON"),
    ]
    app.config["MAX_CONTENT_LENGTH"] = 1_000_000
    for raw, message in sent:
        answer = client.post(url, data=raw, content_type="application/json")
        assert (answer.status_code, answer.get_json()) == (400, {"error": message}), raw[:20]
    assert db_snapshot(app) == before
    assert flask_saw == []


def test_another_method_on_a_worker_path_is_a_405(app, client, flask_saw):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    answer = client.get(f"/api/assignments/{token}/annotations")
    assert answer.status_code == 405 and answer.headers["Allow"] == "OPTIONS, POST"
    assert answer.get_json()["error"]
    assert client.put(f"/api/assignments/{token}").headers["Allow"] == "GET, HEAD, OPTIONS"
    head = client.head(f"/api/assignments/{token}")
    assert head.status_code == 200 and head.data == b""
    assert client.get(f"/api/assignments/{token}/nothing").status_code == 404  # Flask's
    assert flask_saw == ["GET nothing"]


def test_the_entry_after_the_pools_ping_gives_connections_back_as_it_found_them(
    app, client, flask_saw, monkeypatch
):
    """Every checkout pinged (app/db.py): the handle gets a connection with the ping's
    transaction open; it serves, and gives the connection back as SQLAlchemy expects it
    (the Flask views' transactions after it still roll back)."""
    from app import db as app_db

    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    monkeypatch.setattr(app_db, "PING_AFTER_IDLE_S", -1.0)
    base = f"/api/assignments/{token}"
    added = client.post(f"{base}/annotations", json=annotation_body(0, "Zoë", "CharE"))
    assert added.status_code == 201
    assert client.delete(f"{base}/annotations/{added.get_json()['id']}").status_code == 204
    assert client.post(f"{base}/heartbeat", json={}).status_code == 204
    assert flask_saw == []  # the entry answered all three
    engine = app.extensions["db_engine"]
    if engine.dialect.name == "postgresql":  # the handle's connections are back as they were
        pooled = list(engine.pool._pool.queue)  # noqa: SLF001
        assert pooled and all(record.dbapi_connection.autocommit is False for record in pooled)
    # A refusal stores nothing, the stamp included.
    again = client.post(f"{base}/annotations", json=annotation_body(1, "brother", "CharE"))
    assert again.status_code == 201
    before = db_snapshot(app)
    duplicate = annotation_body(1, "brother", "CharE", client_id="another")
    assert client.post(f"{base}/annotations", json=duplicate).status_code == 409
    assert db_snapshot(app) == before
