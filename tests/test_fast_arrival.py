"""Issue 31: the common arrival (``POST /api/assignments`` naming its document, no
researcher's key) is answered by the fast lane (app/web/fast_arrival.py) before Flask. The
same arrivals, with the lane on and off, must give the same statuses, bodies and headers on
SQLite and Postgres; what the lane declines must reach the route intact and be counted once
in the arrival limit; the limit's refusal must be the route's."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, Document, Study
from tests.conftest import BACKENDS, make_database_url, make_study

DOCUMENTS = [(f"doc-{n}", ["Anna lives in Paris.", "She has a brother."]) for n in (1, 2, 3)]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def arrivals_seen(app):
    """The arrivals that reached Flask (the lane answered the others), by worker ID."""
    import flask

    seen: list[str] = []

    @app.before_request
    def _seen():
        if flask.request.path == "/api/assignments":
            body = flask.request.get_json(silent=True)
            seen.append(str(body.get("worker_id")) if isinstance(body, dict) else "?")

    return seen


def arrivals(client, study: str) -> list[tuple]:
    """Arrivals happy and not, each as (status, body without the token, headers)."""

    def named(worker, document="doc-1", **extra):
        body = {"study": study, "worker_id": worker, "document": document}
        return client.post("/api/assignments", json={**body, **extra})

    answers = [
        client.post(  # the lane's: 201 (over HTTPS: HSTS)
            "/api/assignments",
            json={"study": study, "worker_id": "w1", "document": "doc-1"},
            base_url="https://localhost",
        ),
        named("w1"),  # declined (w1 holds doc-1): the policy's 409
        named("w2"),  # declined (doc-1 full): the policy takes over w1's unengaged hold
        named("w3", "doc-9"),  # declined: no such document, 404
        named("", "doc-2"),  # declined: no worker ID, 400
        named("w3", 2),  # declined: a number naming no document, 404
        client.post(
            "/api/assignments", json={"study": "nope", "worker_id": "w3", "document": "doc-1"}
        ),  # declined: no such study, 404
        named("w3", "doc-\u0000"),  # not storable: the route's 400
        client.post("/api/assignments", json={"study": study, "worker_id": "w4"}),  # crowd
        client.post("/api/assignments", json=[study]),  # not an object: 400
        client.post("/api/assignments", data="{}", content_type="text/plain"),  # 400
        client.post("/api/assignments", data=b'{"study": ', content_type="application/json"),
        client.post("/api/assignments", json={"study": 5, "document": "doc-1"}),  # 400
        client.post(  # a researcher's (bad) key: 401
            "/api/assignments",
            json={"study": study, "worker_id": "w5", "document": "doc-2"},
            headers={"Authorization": "Bearer nonsense"},
        ),
    ]
    return [
        (
            answer.status_code,
            {  # the study's slug (of one length in both runs) named as <study>
                k: v.replace(study, "<study>") if isinstance(v, str) else v
                for k, v in (answer.get_json(silent=True) or {}).items()
                if k != "token"
            },
            sorted(answer.headers.items()),
        )
        for answer in answers
    ]


def held(app, study: str) -> list[tuple]:
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(Assignment.worker_id, Document.external_id, Assignment.status)
            .join(Document, Assignment.document_id == Document.id)
            .join(Study, Assignment.study_id == Study.id)
            .where(Study.slug == study)
        ).all()
    return sorted(
        (worker, external if worker != "w4" else "?", status) for worker, external, status in rows
    )


def test_the_lane_and_the_route_open_alike(app, client, arrivals_seen):
    app.config["ARRIVAL_RATE_LIMIT"] = "1000 per minute"
    for slug in ("by-route", "by-lanes"):
        make_study(app, slug, documents=DOCUMENTS, annotators_per_doc=1)
    app.config["FAST_LANE"] = False
    by_route = arrivals(client, "by-route")
    route_saw = list(arrivals_seen)
    arrivals_seen.clear()
    app.config["FAST_LANE"] = True
    by_lane = arrivals(client, "by-lanes")

    for step, (route, lane) in enumerate(zip(by_route, by_lane, strict=True)):
        assert route == lane, f"request {step}: route {route} != lane {lane}"
    assert [status for status, _body, _headers in by_lane] == [
        201, 409, 201, 404, 400, 404, 404, 400, 201, 400, 400, 400, 400, 401
    ]  # fmt: skip
    assert by_lane[0][1] == {"segments": 2, "resume_segment": 0}
    assert dict(by_lane[0][2])["Strict-Transport-Security"].startswith("max-age=")
    assert held(app, "by-route") == held(app, "by-lanes")
    assert held(app, "by-lanes") == [
        ("w1", "doc-1", "abandoned"),
        ("w2", "doc-1", "active"),
        ("w4", "?", "active"),
    ]
    assert "already has work in progress" in by_lane[1][1]["error"]
    # The route saw all 14; the lane answered the first itself and handed the others to
    # the route with their bodies (the answers above name what the bodies said).
    assert len(route_saw) == 14
    assert arrivals_seen == route_saw[1:]


def test_a_failure_in_the_lane_writes_nothing_and_the_route_answers(app, client):
    """The database fails the lane's insert once, after the row went in (a trigger): the
    locks and the insert are one transaction, rolled back whole, and the route serves the
    arrival, so the worker holds one assignment, not two, and is answered 201."""
    engine = app.extensions["db_engine"]
    if engine.dialect.name != "postgresql":
        pytest.skip("on SQLite the lane's arrival is one session transaction (Postgres: two)")
    make_study(app, documents=DOCUMENTS)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE SEQUENCE failing; CREATE FUNCTION fail_once() RETURNS trigger AS $$ "
            "BEGIN IF nextval('failing') = 1 THEN RAISE EXCEPTION 'the insert failed'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql; CREATE TRIGGER fail_once AFTER INSERT ON "
            "assignments FOR EACH ROW EXECUTE FUNCTION fail_once()"
        )
    body = {"study": "demo", "worker_id": "w1", "document": "doc-2"}
    answer = client.post("/api/assignments", json=body)
    assert answer.status_code == 201, answer.get_json()
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT last_value FROM failing").scalar() == 2
    assert held(app, "demo") == [("w1", "doc-2", "active")]
    assert answer.get_json()["segments"] == 2


def over_the_limit(client, address: str) -> list:
    """Three arrivals from ``address`` (the limit is 3 a minute): two the lane takes and one
    it declines (counted once), then a fourth, refused."""
    environ = {"REMOTE_ADDR": address}

    def arrive(worker, document="doc-1"):
        body = {"study": "demo", "worker_id": f"{address}-{worker}", "document": document}
        return client.post("/api/assignments", json=body, environ_base=environ)

    return [arrive("a1"), arrive("a1"), arrive("a2", "doc-2"), arrive("a3")]


def test_the_arrival_limit_holds_through_the_lane(app, client, arrivals_seen):
    make_study(app, documents=DOCUMENTS, annotators_per_doc=10)
    app.config["ARRIVAL_RATE_LIMIT"] = "3 per minute"
    app.config["FAST_LANE"] = False
    by_route = over_the_limit(client, "10.0.0.1")
    app.config["FAST_LANE"] = True
    arrivals_seen.clear()
    by_lane = over_the_limit(client, "10.0.0.2")

    assert [answer.status_code for answer in by_lane] == [201, 409, 201, 429]
    assert arrivals_seen == ["10.0.0.2-a1"]  # the declined one; the lane answered the others
    for route, lane in zip(by_route, by_lane, strict=True):
        assert route.status_code == lane.status_code
    refused_by_route, refused_by_lane = by_route[-1], by_lane[-1]
    assert refused_by_lane.get_json() == {"error": "3 per 1 minute"}
    assert refused_by_lane.data == refused_by_route.data
    assert sorted(refused_by_lane.headers.items()) == sorted(refused_by_route.headers.items())


def test_a_flask_limiter_without_the_lanes_internals_leaves_the_count_to_the_route(
    app, client, arrivals_seen, monkeypatch
):
    """The lane reads private flask-limiter attributes; a release without them must not turn
    arrivals into errors: the route counts and answers, the limit still holds."""
    from types import SimpleNamespace

    from app.web import limits

    make_study(app, documents=DOCUMENTS, annotators_per_doc=10)
    app.config["ARRIVAL_RATE_LIMIT"] = "3 per minute"
    # what the lane sees of flask-limiter: enabled, none of the private names it reads
    monkeypatch.setattr(limits, "limiter", SimpleNamespace(enabled=True, initialized=True))
    arrivals_seen.clear()
    answers = over_the_limit(client, "10.0.0.9")
    assert [answer.status_code for answer in answers] == [201, 409, 201, 429]
    assert len(arrivals_seen) == 4  # every arrival reached the route


def test_the_lane_and_the_routes_count_in_one_bucket(app, client):
    """The lane counts in flask-limiter's own store under the routes' key and scope: the
    entry page (GET /s/<slug>) and the lane's arrivals share the one limit."""
    make_study(app, documents=DOCUMENTS, annotators_per_doc=10)
    app.config["ARRIVAL_RATE_LIMIT"] = "3 per minute"
    environ = {"REMOTE_ADDR": "10.0.0.3"}

    def named(worker):
        body = {"study": "demo", "worker_id": worker, "document": "doc-1"}
        return client.post("/api/assignments", json=body, environ_base=environ).status_code

    def entry(worker):
        return client.get(f"/s/demo?worker_id={worker}", environ_base=environ).status_code

    assert [named("b1"), entry("b2"), named("b3"), named("b4"), entry("b5")] == [
        201, 302, 201, 429, 429
    ]  # fmt: skip
    # another address has its own count
    assert (
        client.get("/s/demo?worker_id=b6", environ_base={"REMOTE_ADDR": "10.0.0.4"}).status_code
        == 302
    )


def test_behind_a_proxy_the_lane_counts_the_forwarded_address(database_url):
    """``BEHIND_PROXY``'s fix wraps the lane: the lane counts the client's address from the
    proxy's header, as the routes do, not the proxy's own."""
    from app import create_app

    app = create_app(
        {
            "DATABASE_URL": database_url,
            "TESTING": True,
            "SECRET_KEY": "test",
            "BEHIND_PROXY": 1,
            "ARRIVAL_RATE_LIMIT": "2 per minute",
        }
    )
    try:
        make_study(app, documents=DOCUMENTS, annotators_per_doc=10)
        client = app.test_client()

        def arrive(worker, forwarded_for):
            body = {"study": "demo", "worker_id": worker, "document": "doc-1"}
            headers = {"X-Forwarded-For": forwarded_for}
            return client.post("/api/assignments", json=body, headers=headers).status_code

        assert [
            arrive("p1", "203.0.113.1"),
            arrive("p2", "203.0.113.1"),
            arrive("p3", "203.0.113.2"),
            arrive("p4", "203.0.113.1"),
            arrive("p5", "203.0.113.2"),
            arrive("p6", "203.0.113.2"),
        ] == [201, 201, 201, 429, 201, 429]
    finally:
        app.extensions["db_engine"].dispose()


@pytest.mark.parametrize("lane", [True, False])
def test_the_open_counts_segments_and_leaves_the_document_to_the_get(app, client, lane):
    """The arrival's answer gives the segment count from one count (or the cached part); the
    document's part is read by the page's GET, not by the arrival."""
    from app.web.page_cache import cache_of

    make_study(app, documents=[("long", [f"Segment {n}." for n in range(7)]), *DOCUMENTS])
    app.config["FAST_LANE"] = lane
    cache = cache_of(app)

    def open_(worker):
        body = {"study": "demo", "worker_id": worker, "document": "long"}
        answer = client.post("/api/assignments", json=body)
        assert answer.status_code == 201, answer.get_json()
        return answer.get_json()

    first = open_("w1")
    assert first["segments"] == 7 and len(cache.documents._items) == 0
    assert client.get(f"/api/assignments/{first['token']}").status_code == 200
    assert len(cache.documents._items) == 1  # the GET read it
    assert open_("w2")["segments"] == 7  # from the cached part


def test_on_postgres_the_lanes_arrival_is_two_round_trips(app, client):
    """The target's read, then the locks and the conditional insert sent together with no
    ``BEGIN`` (Postgres commits them as they run): two query strings, whatever the page cache
    holds; the pool's connections are back idle afterwards."""
    import psycopg2.extensions
    from sqlalchemy import event

    engine = app.extensions["db_engine"]
    if engine.dialect.name != "postgresql":
        pytest.skip("the hot path's driver is Postgres's")
    make_study(app, documents=DOCUMENTS)
    sent: list[str] = []

    class Counting(psycopg2.extensions.cursor):
        def execute(self, query, params=None):
            sent.append(query if isinstance(query, str) else query.decode())
            return super().execute(query, params)

    def count(dbapi_connection, _record, _proxy):
        dbapi_connection.cursor_factory = Counting

    event.listen(engine, "checkout", count)
    try:
        for worker, document in (("w1", "doc-1"), ("w2", "doc-2"), ("w1", "doc-3")):
            sent.clear()
            body = {"study": "demo", "worker_id": worker, "document": document}
            answer = client.post("/api/assignments", json=body)
            if worker == "w1" and document == "doc-3":  # w1 works on doc-1: the policy's 409
                assert answer.status_code == 409
                continue
            assert answer.status_code == 201, answer.get_json()
            assert len(sent) == 2, sent
            assert "named_target(" in sent[0]  # prepared on the connection's first
            assert "arrival_locks(" in sent[1] and "arrival_insert(" in sent[1]
            assert not any("BEGIN" in query or "COMMIT" in query for query in sent), sent
    finally:
        event.remove(engine, "checkout", count)
    assert held(app, "demo") == [("w1", "doc-1", "active"), ("w2", "doc-2", "active")]
