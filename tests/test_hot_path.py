"""Issue 17: the per-action writes on their short path (app/annotation/fast.py) and the pool
without a ping per request (app/db.py), on SQLite and Postgres.

The statement counts are the design (a claim, then the write), not a timing; the refusals
must change nothing, the claim's activity stamp included; a connection that broke while
pooled gets a 503 the outbox retries, and the retry is stored once.
"""

from __future__ import annotations

import pytest
from sqlalchemy import event, select

from app import db as app_db
from app.db import get_session, session_scope
from app.models import Annotation, Assignment, SegmentTime
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, api_add, db_snapshot, open_token


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def token(app, client):
    # The statement counts below are those of the route's short path (the session's
    # connection, where SQLAlchemy's events see them); the fast lane runs the same
    # functions, on Postgres through the driver (tests/test_fast_lane.py checks its answers).
    app.config["FAST_LANE"] = False
    make_study(app, documents=DOCUMENTS)
    return open_token(client)


def statements(app, call) -> list[str]:
    """The first word of every data statement ``call`` sends (BEGIN/COMMIT left out; a
    prepared statement's ``EXECUTE`` counts as the statement it runs, read from
    ``pg_prepared_statements``)."""
    seen: list[str] = []

    def record(_conn, cursor, statement, *_args):
        word = statement.lstrip().split(None, 1)[0].upper()
        if word == "EXECUTE":  # looked up on the driver's cursor: not itself recorded
            lookup = cursor.connection.cursor()
            lookup.execute(
                "SELECT statement FROM pg_prepared_statements WHERE name = %s",
                (statement.split()[1].split("(")[0],),
            )
            prepared = lookup.fetchone()[0]
            word = prepared.split(" AS ", 1)[1].lstrip().split(None, 1)[0].upper()
        if word in ("SELECT", "INSERT", "UPDATE", "DELETE"):
            seen.append(word)

    engine = app.extensions["db_engine"]
    event.listen(engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return seen


def test_an_add_is_a_claim_and_an_insert(app, client, token):
    api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="warm"))  # fills caches
    answers = []
    sent = statements(
        app,
        lambda: answers.append(
            api_add(client, token, annotation_body(1, "brother", "CharE", client_id="second"))
        ),
    )
    assert answers[0].status_code == 201, answers[0].get_json()
    # the claim (which also checks the practice freeze) and the insert
    assert sent == ["UPDATE", "INSERT"]
    with app.app_context():
        stored = get_session().scalar(
            select(Annotation).where(Annotation.id == answers[0].get_json()["id"])
        )
        assert (stored.segment, stored.text, stored.client_id) == (1, "brother", "second")


def test_position_is_one_update_plus_its_time_and_remove_two(app, client, token):
    added = api_add(client, token, annotation_body(0, "Zoë", "CharE")).get_json()["id"]
    client.post(f"/api/assignments/{token}/position", json={"segment": 0})  # fills the cache
    move = {"segment": 1, "active": {"0": 1.5}}
    moved = statements(app, lambda: client.post(f"/api/assignments/{token}/position", json=move))
    removed = statements(
        app, lambda: client.delete(f"/api/assignments/{token}/annotations/{added}")
    )
    # the claim, then the time record (app/annotation/timing.py): the last report's time,
    # then one upsert each for segment 0's seconds and segment 1 seen (a new row)
    assert moved == ["UPDATE", "SELECT", "INSERT", "INSERT"]
    assert removed == ["UPDATE", "UPDATE"]  # the claim (with the practice freeze), the stamp
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
        {**annotation_body(0, "Zoë", "CharE"), "suggestion_id": 12345},
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


@pytest.mark.parametrize(
    ("idle_ping_s", "fast_lane"), [(60.0, False), (0.0, False), (60.0, True), (0.0, True)]
)
def test_a_connection_broken_while_pooled(
    monkeypatch, postgres_cluster, request, tmp_path, idle_ping_s, fast_lane
):
    """Postgres restarts between two adds. On the Flask route without a ping (pooled for
    less than the idle threshold) the add answers 503 try-again and its retry is stored once;
    with a ping the pool replaces the dead connection and the add goes through at once. The
    fast lane's failed attempt (rolled back) invalidates the pool, so the route it hands the
    add to runs on a fresh connection: stored at once, either way."""
    from app import create_app

    monkeypatch.setattr(app_db, "PING_AFTER_IDLE_S", idle_ping_s)
    url = make_database_url("postgres", request, tmp_path)
    web = create_app(
        {"DATABASE_URL": url, "TESTING": False, "SECRET_KEY": "test", "FAST_LANE": fast_lane}
    )
    web.config["PROPAGATE_EXCEPTIONS"] = False
    try:
        make_study(web, documents=DOCUMENTS)
        client = web.test_client()
        token = open_token(client)
        assert api_add(client, token, annotation_body(0, "Zoë", "CharE")).status_code == 201
        postgres_cluster.restart()
        body = annotation_body(1, "brother", "CharE", client_id="after-restart")
        answer = api_add(client, token, body)
        if idle_ping_s and not fast_lane:
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
    adds, as plain statements."""
    from app import create_app

    url = make_database_url("postgres", request, tmp_path)
    web = create_app(
        {
            "DATABASE_URL": url,
            "TESTING": True,
            "SECRET_KEY": "t",
            "PREPARED_STATEMENTS": prepared,
            "FAST_LANE": False,  # the route's statements, seen through SQLAlchemy's events
        }
    )
    try:
        make_study(web, documents=DOCUMENTS)
        client = web.test_client()
        token = open_token(client)
        sent: list[str] = []
        engine = web.extensions["db_engine"]
        event.listen(engine, "before_cursor_execute", lambda *a: sent.append(a[2].split()[0]))
        for n, word in enumerate(("Zoë", "Paris")):
            answer = api_add(client, token, annotation_body(0, word, "CharE", client_id=f"c{n}"))
            assert answer.status_code == 201, answer.get_json()
        assert ("EXECUTE" in sent) is prepared
        assert ("PREPARE" in sent) is prepared
        assert sent.count("PREPARE") == (3 if prepared else 0)  # keys, claim, insert: once
    finally:
        web.extensions["db_engine"].dispose()


@pytest.mark.parametrize("prepared", [True, False])
def test_the_fast_lanes_driver_prepares_nothing_when_turned_off(
    postgres_cluster, request, tmp_path, prepared
):
    """Issue 31: behind a transaction-pooling PgBouncer (PREPARED_STATEMENTS=0) the fast
    lane keeps its driver (its raw cursor: nothing goes through SQLAlchemy's execution, and
    Flask's route is not reached) but sends plain statements: no connection holds a prepared
    statement afterwards. Adds, a retry and a remove answer as they do prepared."""
    from app import create_app

    url = make_database_url("postgres", request, tmp_path)
    web = create_app(
        {"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "t", "PREPARED_STATEMENTS": prepared}
    )
    routed: list[str] = []
    web.before_request(lambda: routed.append(flask_path()))
    try:
        make_study(web, documents=DOCUMENTS)
        client = web.test_client()
        token = open_token(client)
        engine = web.extensions["db_engine"]
        sent: list[str] = []
        event.listen(engine, "before_cursor_execute", lambda *a: sent.append(a[2]))
        first = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="c0"))
        again = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="c0"))
        assert (first.status_code, again.status_code) == (201, 200)
        assert again.get_json()["id"] == first.get_json()["id"]
        gone = client.delete(f"/api/assignments/{token}/annotations/{first.get_json()['id']}")
        assert gone.status_code == 204
        done = client.post(f"/api/assignments/{token}/submit")  # scored: the default study
        assert done.status_code == 200 and done.get_json()["completion_code"]
        assert sent == []  # all on the driver's cursor
        assert not any("/annotations" in path or "/submit" in path for path in routed)
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


def flask_path() -> str:
    import flask

    return flask.request.path
