"""The per-action statements (app/annotation/add.py, remove.py, position.py on the handle of
app/annotation/handle.py) and the pool without a ping per request (app/db.py), on SQLite and
Postgres, counted where the database receives them (tests/statements.py).

The statement counts are the design (a claim, then the write), not a timing; the refusals
must change nothing, the claim's activity stamp included; a connection that broke while
pooled gets a 503 the outbox retries, and the retry is stored once.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app import db as app_db
from app.db import get_session, session_scope
from app.models import Annotation, Assignment, SegmentTime
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, api_add, db_snapshot, open_token
from tests.statements import recorded, words


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def token(app, client):
    make_study(app, documents=DOCUMENTS)
    return open_token(client)


def postgres(app) -> bool:
    return app.extensions["db_engine"].dialect.name == "postgresql"


def test_an_add_is_a_claim_and_an_insert(app, client, token):
    with recorded(app) as warm:  # fills the caches, prepares the statements
        api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="warm"))
    with recorded(app) as sent:
        answer = api_add(client, token, annotation_body(1, "brother", "CharE", client_id="two"))
    assert answer.status_code == 201, answer.get_json()
    # SQLite: the claim (with the practice freeze), the insert; Postgres: the row's lock and
    # the insert that stamps the activity when it stored, one round trip
    assert words(sent, warm) == (["SELECT", "WITH"] if postgres(app) else ["UPDATE", "INSERT"])
    if postgres(app):
        assert len(sent) == 1 and "BEGIN" not in sent[0] and "COMMIT" not in sent[0]
    with app.app_context():
        stored = get_session().scalar(
            select(Annotation).where(Annotation.id == answer.get_json()["id"])
        )
        assert (stored.segment, stored.text, stored.client_id) == (1, "brother", "two")


def test_position_is_one_update_plus_its_time_and_remove_two(app, client, token):
    with recorded(app) as warm:
        added = api_add(client, token, annotation_body(0, "Zoë", "CharE")).get_json()["id"]
        client.post(f"/api/assignments/{token}/position", json={"segment": 0})
    move = {"segment": 1, "active": {"0": 1.5}}
    with recorded(app) as moved:
        client.post(f"/api/assignments/{token}/position", json=move)
    with recorded(app) as removed:
        client.delete(f"/api/assignments/{token}/annotations/{added}")
    # the claim, then the time record (app/annotation/timing.py): the last report's time,
    # then one upsert of segment 0's seconds and segment 1 seen (a new row)
    assert words(moved, warm) == ["UPDATE", "SELECT", "INSERT"]
    if postgres(app):  # BEGIN with the claim, the read, the writes with the COMMIT
        assert len(moved) == 3 and moved[0].startswith("BEGIN") and moved[-1].endswith("COMMIT")
        assert words(removed, [*warm, *moved]) == ["SELECT", "WITH"]  # one round trip
        assert len(removed) == 1
    else:
        assert words(removed) == ["UPDATE", "UPDATE"]  # the claim, the removal
    with app.app_context(), session_scope() as session:
        times = dict(session.execute(select(SegmentTime.segment, SegmentTime.active_seconds)).all())
    assert times == {0: 1.5, 1: 0.0}
    again = client.get(f"/api/assignments/{token}").get_json()
    assert again["current_segment"] == 1
    assert again["annotations"] == []


@pytest.mark.parametrize(
    "body",
    [
        annotation_body(0, "Zoë", "NoSuchCategory"),
        {**annotation_body(0, "Zoë", "CharE"), "text": "Zoe"},
        {**annotation_body(0, "Zoë", "CharE"), "segment": 99},
        {**annotation_body(0, "Zoë", "CharE"), "suggestion_id": 2**31},  # no id at all
    ],
)
def test_a_refused_add_changes_nothing_not_even_the_activity_stamp(app, client, token, body):
    before = db_snapshot(app)
    answer = api_add(client, token, body)
    assert answer.status_code == 400, answer.get_json()
    assert db_snapshot(app) == before


def test_a_position_past_the_end_is_refused_and_changes_nothing(app, client, token):
    before = db_snapshot(app)
    answer = client.post(f"/api/assignments/{token}/position", json={"segment": 4})
    assert answer.status_code == 400
    assert "out of range" in answer.get_json()["error"]
    assert db_snapshot(app) == before


def test_the_first_action_engages_the_assignment(app, client, token):
    assert client.post(f"/api/assignments/{token}/heartbeat", json={}).status_code == 204
    with app.app_context():
        row = get_session().scalar(select(Assignment).where(Assignment.token == token))
        assert row.engaged_at is not None
        assert row.last_seen_at >= row.engaged_at


def test_the_pages_read_engages_the_assignment_and_a_finished_ones_read_stamps_nothing(
    app, client, token
):
    """The page's load is its first sign of presence: the read of a live assignment stamps
    the activity (the page sends no heartbeat with it); a submitted one's read changes
    nothing."""
    with app.app_context():
        row = get_session().scalar(select(Assignment).where(Assignment.token == token))
        assert row.engaged_at is None  # arrived, not yet loaded
        arrived = row.last_seen_at
    assert client.get(f"/api/assignments/{token}").status_code == 200
    with app.app_context():
        row = get_session().scalar(select(Assignment).where(Assignment.token == token))
        assert row.engaged_at is not None and row.last_seen_at == row.engaged_at >= arrived
    assert client.post(f"/api/assignments/{token}/submit", json={}).status_code == 200
    before = db_snapshot(app)
    assert client.get(f"/api/assignments/{token}").status_code == 200
    assert db_snapshot(app) == before


@pytest.mark.parametrize("idle_ping_s", [60.0, 0.0])
def test_a_connection_broken_while_pooled(
    monkeypatch, postgres_cluster, request, tmp_path, idle_ping_s
):
    """Postgres restarts between two adds. Without a ping (pooled for less than the idle
    threshold) the add answers 503 try-again, the pool is dropped, and the retry is stored
    once; with a ping the pool replaces the dead connection and the add goes through at
    once."""
    from app import create_app

    monkeypatch.setattr(app_db, "PING_AFTER_IDLE_S", idle_ping_s)
    url = make_database_url("postgres", request, tmp_path)
    web = create_app({"DATABASE_URL": url, "TESTING": False, "SECRET_KEY": "test"})
    try:
        make_study(web, documents=DOCUMENTS)
        client = web.test_client()
        token = open_token(client)
        assert api_add(client, token, annotation_body(0, "Zoë", "CharE")).status_code == 201
        postgres_cluster.restart()
        body = annotation_body(1, "brother", "CharE", client_id="after-restart")
        answer = api_add(client, token, body)
        if idle_ping_s:
            assert answer.status_code == 503, answer.get_data(as_text=True)
            assert answer.headers["Retry-After"] == "1"
            assert "try again" in answer.get_json()["error"]
            answer = api_add(client, token, body)
        assert answer.status_code == 201, answer.get_data(as_text=True)
        assert api_add(client, token, body).status_code == 200  # the outbox's retry
        with web.app_context():
            rows = (
                get_session()
                .scalars(select(Annotation).where(Annotation.client_id == "after-restart"))
                .all()
            )
            assert len(rows) == 1
    finally:
        web.extensions["db_engine"].dispose()


@pytest.mark.parametrize("prepared", [True, False])
def test_prepared_statements_on_postgres_can_be_turned_off(
    postgres_cluster, request, tmp_path, prepared
):
    """PREPARED_STATEMENTS=0 (a PgBouncer in transaction mode cannot keep them): the same
    adds, a retry, a remove and a submit, as plain statements through the same handle; no
    connection holds a prepared statement afterwards."""
    from app import create_app

    url = make_database_url("postgres", request, tmp_path)
    web = create_app(
        {"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "t", "PREPARED_STATEMENTS": prepared}
    )
    try:
        make_study(web, documents=DOCUMENTS)
        client = web.test_client()
        token = open_token(client)
        engine = web.extensions["db_engine"]
        with recorded(web) as sent:
            first = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="c0"))
            again = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="c0"))
            other = api_add(client, token, annotation_body(0, "Paris", "CharE", client_id="c1"))
        assert (first.status_code, again.status_code, other.status_code) == (201, 200, 201)
        assert again.get_json()["id"] == first.get_json()["id"]
        text = "; ".join(sent)
        assert ("EXECUTE" in text) is prepared
        # the first add prepares what it runs once (the token's keys, the texts, the
        # taxonomy, the lock and the insert); the retry its reads back; the third nothing
        assert text.count("PREPARE") == (9 if prepared else 0), sent
        gone = client.delete(f"/api/assignments/{token}/annotations/{first.get_json()['id']}")
        assert gone.status_code == 204
        done = client.post(f"/api/assignments/{token}/submit")  # scored: the default study
        assert done.status_code == 200 and done.get_json()["completion_code"]
        held = []
        connections = [engine.raw_connection() for _ in range(engine.pool.checkedin())]
        for connection in connections:
            cursor = connection.cursor()
            cursor.execute("SELECT name FROM pg_prepared_statements")
            held += [row[0] for row in cursor.fetchall()]
            connection.close()
        assert bool(held) is prepared, held
    finally:
        web.extensions["db_engine"].dispose()
