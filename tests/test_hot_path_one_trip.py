"""On Postgres an add and a remove are one round trip that commits (``LOCK``, then the write
that stamps the activity only when it stored: app/annotation/hot_sql.py), so a refusal is
committed too; it must still change nothing, the activity stamp included, and a retry must
stamp it as a claim does. On SQLite and Postgres, with the clock moved between steps so a
stamp shows. The round trips themselves are counted on psycopg2's cursor (the form
``BEGIN; claim; insert`` then ``COMMIT`` fails there)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, select

from app.annotation import assignments
from app.models import Annotation, Assignment
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, api_add, db_snapshot, open_token

START = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def clock(monkeypatch):
    moment = {"now": START}
    monkeypatch.setattr(assignments, "now", lambda: moment["now"])
    return moment


def last_seen(app, token: str) -> datetime:
    with app.extensions["db_engine"].connect() as connection:
        seen = connection.scalar(select(Assignment.last_seen_at).where(Assignment.token == token))
    return seen.replace(tzinfo=UTC)


def test_refusals_change_nothing_and_a_retry_stamps(app, client, clock):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    base = f"/api/assignments/{token}"
    first = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="a"))
    assert first.status_code == 201, first.get_json()
    assert last_seen(app, token) == START

    clock["now"] = START + timedelta(seconds=5)  # the outbox's retry: 200, and stamped
    retry = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="a"))
    assert (retry.status_code, retry.get_json()["id"]) == (200, first.get_json()["id"])
    assert last_seen(app, token) == clock["now"]

    clock["now"] = START + timedelta(seconds=10)
    before = db_snapshot(app)
    duplicate = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="b"))
    assert duplicate.status_code == 409
    reused = api_add(client, token, annotation_body(1, "brother", "CharE", client_id="a"))
    assert reused.status_code == 409  # the client_id names another annotation
    missing = client.delete(f"{base}/annotations/99999")
    assert missing.status_code == 404
    assert db_snapshot(app) == before

    clock["now"] = START + timedelta(seconds=15)
    assert client.delete(f"{base}/annotations/{first.get_json()['id']}").status_code == 204
    assert last_seen(app, token) == clock["now"]
    clock["now"] = START + timedelta(seconds=20)
    assert client.post(f"{base}/heartbeat", json={}).status_code == 204
    assert last_seen(app, token) == clock["now"]


@pytest.mark.postgres
def test_the_round_trips_on_postgres(postgres_cluster, request, tmp_path):
    """The design, counted where it is sent (each ``execute`` on psycopg2's cursor is one
    round trip): once the caches are warm, an add and a remove are one query string each with
    neither ``BEGIN`` nor ``COMMIT``, a heartbeat one, a position three (the claim, the time
    budget's read, then its writes with the ``COMMIT``)."""
    import psycopg2.extensions

    from app import create_app

    sent: list[str] = []

    class Counting(psycopg2.extensions.cursor):
        def execute(self, query, params=None):
            sent.append(query.decode() if isinstance(query, bytes) else query)
            return super().execute(query, params)

    url = make_database_url("postgres", request, tmp_path)
    web = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "t"})
    engine = web.extensions["db_engine"]
    event.listen(engine, "checkout", lambda dbapi, *_: setattr(dbapi, "cursor_factory", Counting))
    try:
        make_study(web, documents=DOCUMENTS)
        client = web.test_client()
        token = open_token(client)
        base = f"/api/assignments/{token}"
        api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="warm"))
        client.post(f"{base}/position", json={"segment": 0})

        def trips(call) -> list[str]:
            sent.clear()
            call()
            return list(sent)

        add = trips(lambda: api_add(client, token, annotation_body(1, "brother", "CharE")))
        assert len(add) == 1 and "BEGIN" not in add[0] and "COMMIT" not in add[0], add
        added = stored_id(web, "brother")
        remove = trips(lambda: client.delete(f"{base}/annotations/{added}"))
        assert len(remove) == 1 and "BEGIN" not in remove[0], remove
        beat = trips(lambda: client.post(f"{base}/heartbeat", json={}))
        assert len(beat) == 1 and "BEGIN" not in beat[0], beat
        move = {"segment": 1, "active": {"0": 1.5, "1": 0.5}}
        moved = trips(lambda: client.post(f"{base}/position", json=move))
        assert len(moved) == 3 and moved[-1].endswith("COMMIT"), moved
    finally:
        engine.dispose()


def stored_id(app, text: str) -> int:
    with app.extensions["db_engine"].connect() as connection:
        return connection.scalar(select(Annotation.id).where(Annotation.text == text))
