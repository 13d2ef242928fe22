"""Issue 17: the fast lane (app/web/fast_lane.py) answers the annotate page's frequent writes
before Flask, refusals included (issue 25: the route's own action, run once). The same
conversation, with the lane on and off, must give the same statuses, bodies, headers and
stored rows, on SQLite and Postgres; the lane must really have served what it takes (Flask
never saw those requests)."""

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
        client.post("/api/assignments/a'b;--/submit"),  # 404 (the route's)
        client.post("/api/assignments/a%00b/submit"),  # 404 (the route's)
    ]
    return [
        (
            answer.status_code,
            _without_ids(answer.get_json(silent=True)),
            # A 204 has no body: Flask still names text/html, the lane names nothing.
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


def test_the_lane_and_the_route_answer_alike(app, client, flask_saw):
    make_study(app, documents=DOCUMENTS)
    app.config["FAST_LANE"] = False
    route_token = open_token(client, worker="route")
    flask_saw.clear()
    by_route = conversation(client, route_token)
    route_saw = list(flask_saw)

    app.config["FAST_LANE"] = True
    lane_token = open_token(client, worker="lane")
    flask_saw.clear()
    by_lane = conversation(client, lane_token)

    for step, (route, lane) in enumerate(zip(by_route, by_lane, strict=True)):
        assert route == lane, f"request {step}: route {route} != lane {lane}"
    assert [status for status, _body, _headers in by_lane] == [
        201, 200, 409, 400, 400, 400, 204, 400, 400, 204, 204, 204, 404, 200, 200, 409, 204, 404,
        404, 404, 404, 404
    ]  # fmt: skip
    assert stored_rows(app, route_token) == stored_rows(app, lane_token)
    assert stored_rows(app, lane_token)["annotations"] == [("c1", 0, 36, 39, "Zoë", True)]
    assert stored_rows(app, lane_token)["times"] == [(0, 2.5), (1, 0.0)]
    # The route saw all 22 requests but the one with a NUL in its path (refused before the
    # recording hook); the lane answered every one it takes, refusals included (the same
    # action, app/annotation/fast.py, api.submitted): Flask saw only the two bodies it could
    # not read and the submit of a token no token can be.
    assert len(route_saw) == 21
    assert flask_saw == ["POST annotations", "POST annotations", "POST submit"]


def test_the_lane_submits_as_the_route(app, client, flask_saw):
    """A submit answered by the lane stores what the route's stores; again, the same code."""
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    first = client.post(f"/api/assignments/{token}/submit")
    again = client.post(f"/api/assignments/{token}/submit")
    assert flask_saw == []  # the lane answered both
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


def test_the_lane_answers_with_the_security_headers_over_https(app, client, flask_saw):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    answer = client.post(
        f"/api/assignments/{token}/annotations",
        json=annotation_body(0, "Zoë", "CharE"),
        base_url="https://localhost",
    )
    assert answer.status_code == 201
    assert flask_saw == []  # the lane answered
    assert answer.headers["Strict-Transport-Security"].startswith("max-age=")
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.get_json()["text"] == "Zoë"


def test_a_body_over_the_limit_goes_to_the_route(app, client, flask_saw):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    app.config["MAX_CONTENT_LENGTH"] = 100
    body = annotation_body(0, "Zoë", "CharE", comment="x" * 200)
    answer = client.post(f"/api/assignments/{token}/annotations", json=body)
    assert answer.status_code == 413
    assert "larger than the limit" in answer.get_json()["error"]
    assert flask_saw == ["POST annotations"]


def test_the_lane_after_the_pools_ping_and_the_route_after_the_lane(
    app, client, flask_saw, monkeypatch
):
    """Every checkout pinged (app/db.py): the lane's driver gets a connection with the
    ping's transaction open; it serves, and gives the connection back as SQLAlchemy expects
    it (the route's transactions after it still roll back)."""
    from app import db as app_db

    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    monkeypatch.setattr(app_db, "PING_AFTER_IDLE_S", -1.0)
    base = f"/api/assignments/{token}"
    added = client.post(f"{base}/annotations", json=annotation_body(0, "Zoë", "CharE"))
    assert added.status_code == 201
    assert client.delete(f"{base}/annotations/{added.get_json()['id']}").status_code == 204
    assert client.post(f"{base}/heartbeat", json={}).status_code == 204
    assert flask_saw == []  # the lane answered all three
    engine = app.extensions["db_engine"]
    if engine.dialect.name == "postgresql":  # the driver's connections are back as they were
        pooled = list(engine.pool._pool.queue)  # noqa: SLF001
        assert pooled and all(record.dbapi_connection.autocommit is False for record in pooled)
    # A refusal (answered by the lane) stores nothing, the stamp included.
    again = client.post(f"{base}/annotations", json=annotation_body(1, "brother", "CharE"))
    assert again.status_code == 201
    before = db_snapshot(app)
    duplicate = annotation_body(1, "brother", "CharE", client_id="another")
    assert client.post(f"{base}/annotations", json=duplicate).status_code == 409
    assert db_snapshot(app) == before
