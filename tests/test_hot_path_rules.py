"""The actions' rules, each defined once (app/annotation/hot_sql.py), hold through the
worker API, on SQLite and Postgres:

- no write lands on an assignment that is no longer active (the claim's ``status =
  'active'``, :data:`app.annotation.hot_sql.LIVE`);
- stored active time never exceeds the wall-clock time since the assignment opened plus
  one slack, however the reports are split (the attack: 25 reports of 5 s within 0.1 s
  stored 125 s and cleared the speeder flag);
- a refused add's body is checked once.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update

from app.annotation import timing
from app.db import session_scope
from app.models import Annotation, Assignment, SegmentTime, Study
from app.quality.time_on_task import worker_times
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, api_add, db_snapshot, open_token


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def set_status(app, token: str, status: str) -> None:
    with app.app_context(), session_scope() as session:
        session.execute(update(Assignment).where(Assignment.token == token).values(status=status))


def test_no_write_lands_on_an_assignment_that_is_no_longer_active(app, client):
    """Submitted, rejected or abandoned: an add or a remove is a 409 naming the status, a
    position or a heartbeat is ignored (204), and not a row changes, the activity stamp
    included. Each token first served a write while active, so the fast path's caches
    know it."""
    make_study(app, documents=DOCUMENTS, annotators_per_doc=3)
    for worker, status in (("w-s", "submitted"), ("w-r", "rejected"), ("w-a", "abandoned")):
        token = open_token(client, worker=worker)
        base = f"/api/assignments/{token}"
        stored = api_add(client, token, annotation_body(0, "Zoë", "CharE")).get_json()["id"]
        assert client.post(f"{base}/position", json={"segment": 1}).status_code == 204
        if status == "submitted":
            assert client.post(f"{base}/submit").status_code == 200
        else:
            set_status(app, token, status)
        before = db_snapshot(app)
        add = api_add(client, token, annotation_body(1, "brother", "CharE"))
        assert add.status_code == 409, (status, add.get_json())
        assert status in add.get_json()["error"]
        removed = client.delete(f"{base}/annotations/{stored}")
        assert removed.status_code == 409, (status, removed.get_json())
        moved = client.post(f"{base}/position", json={"segment": 2, "active": {"1": 1.0}})
        assert moved.status_code == 204
        assert client.post(f"{base}/heartbeat", json={}).status_code == 204
        assert db_snapshot(app) == before, status


def test_active_time_split_into_many_reports_cannot_exceed_the_wall_clock(app, client):
    """The attack: 25 position reports of 5 s each, sent at once. The slack
    is one budget for the assignment, not one per report: the stored total stays within
    the time since the assignment opened plus one slack, and the speeder flag stays."""
    make_study(app, documents=DOCUMENTS)
    with app.app_context(), session_scope() as session:
        session.scalar(select(Study)).settings = {"min_seconds_per_segment": 10.0}
    token = open_token(client)
    base = f"/api/assignments/{token}"
    for n in range(25):
        report = {"segment": n % 4, "active": {str(n % 4): 5.0}}
        assert client.post(f"{base}/position", json=report).status_code == 204
    after = datetime.now(UTC)
    with app.app_context(), session_scope() as session:
        assignment = session.scalar(select(Assignment).where(Assignment.token == token))
        opened = assignment.created_at.replace(tzinfo=UTC)
        stored = sum(
            session.scalars(
                select(SegmentTime.active_seconds).where(SegmentTime.assignment_id == assignment.id)
            )
        )
    assert stored <= (after - opened).total_seconds() + timing.SLACK_SECONDS + 1e-6
    assert client.post(f"{base}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        times = worker_times(session, session.scalar(select(Study)))
    assert times["w1"]["speeder"] is True, times


def test_a_refused_add_is_checked_once(app, client, monkeypatch):
    """One check of the body per add, refused or stored: answered once,
    not a second and third pass over the same body."""
    from app.annotation import values

    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    calls = []
    check = values._span  # the span check every add's body goes through, once per span
    monkeypatch.setattr(values, "_span", lambda *args: calls.append(1) or check(*args))
    refused = api_add(client, token, {**annotation_body(0, "Zoë", "CharE"), "text": "Zoe"})
    assert refused.status_code == 400 and "does not match" in refused.get_json()["error"]
    assert len(calls) == 1
    stored = api_add(client, token, annotation_body(0, "Zoë", "CharE"))
    assert stored.status_code == 201 and len(calls) == 2
    with app.app_context(), session_scope() as session:
        assert [a.text for a in session.scalars(select(Annotation))] == ["Zoë"]


def test_a_client_id_reused_for_another_mark_is_refused_by_name(app, client):
    """A retry returns the first mark (200); the same client_id with other content is a 409
    that says so, and nothing is stored."""
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    first = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="k"))
    again = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="k"))
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.get_json() == first.get_json()
    before = db_snapshot(app)
    other = api_add(client, token, annotation_body(0, "Paris", "CharE", client_id="k"))
    assert other.status_code == 409
    assert other.get_json() == {"error": "client_id was already used for a different annotation"}
    duplicate = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="j"))
    assert (duplicate.status_code, duplicate.get_json()) == (
        409,
        {
            "error": "you have already marked this span with this category",
            "existing_id": first.get_json()["id"],
        },
    )
    assert db_snapshot(app) == before


def test_a_token_whose_assignment_was_deleted_is_unknown(app, client):
    """The token's keys are cached after its first request; once its assignment is gone (its
    study deleted while the page was open) every action is the unknown token's 404."""
    from sqlalchemy import delete

    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    base = f"/api/assignments/{token}"
    assert client.post(f"{base}/heartbeat", json={}).status_code == 204  # keys cached
    with app.app_context(), session_scope() as session:
        session.execute(delete(Assignment).where(Assignment.token == token))
    answers = [
        client.post(f"{base}/heartbeat", json={}),
        client.post(f"{base}/position", json={"segment": 1}),
        api_add(client, token, annotation_body(0, "Zoë", "CharE")),
        client.delete(f"{base}/annotations/1"),
    ]
    assert [(a.status_code, a.get_json()) for a in answers] == [
        (404, {"error": "no assignment with this token"})
    ] * 4
