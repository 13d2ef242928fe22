"""``POST /api/assignments`` without a researcher's key is answered by the worker API's entry
(app/web/worker_api.py, the one arrival policy of app/annotation/arrive.py) before Flask, on
SQLite and Postgres: every outcome answered once (the new assignment, the policy's refusals,
a body it cannot read), each arrival counted once in the shared arrival limit (the bucket the
study links count in, flask-limiter's), the limit's refusal as the Flask app words it; on
Postgres the common arrival is two round trips."""

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
    """The arrivals that reached Flask (the worker API answered the others), by worker ID."""
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
        client.post(  # 201 (over HTTPS: HSTS)
            "/api/assignments",
            json={"study": study, "worker_id": "w1", "document": "doc-1"},
            base_url="https://localhost",
        ),
        named("w1"),  # w1 holds doc-1: 409
        named("w2"),  # doc-1 full: the policy takes over w1's unengaged hold
        named("w3", "doc-9"),  # no such document, 404
        named("", "doc-2"),  # no worker ID, 400
        named("w3", 2),  # a number naming no document, 404
        client.post(
            "/api/assignments", json={"study": "nope", "worker_id": "w3", "document": "doc-1"}
        ),  # no such study, 404
        named("w3", "doc-\u0000"),  # not storable: 400
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


def test_every_arrival_is_answered_once_by_the_worker_api(app, client, arrivals_seen):
    app.config["ARRIVAL_RATE_LIMIT"] = "1000 per minute"
    make_study(app, "demo", documents=DOCUMENTS, annotators_per_doc=1)
    answers = arrivals(client, "demo")
    assert [status for status, _body, _headers in answers] == [
        201, 409, 201, 404, 400, 404, 404, 400, 201, 400, 400, 400, 400, 401
    ]  # fmt: skip
    assert answers[0][1] == {"segments": 2, "resume_segment": 0}
    headers = dict(answers[0][2])
    assert headers["Strict-Transport-Security"].startswith("max-age=")
    assert headers["Cache-Control"] == "no-store" and headers["X-Frame-Options"] == "DENY"
    assert held(app, "demo") == [
        ("w1", "doc-1", "abandoned"),
        ("w2", "doc-1", "active"),
        ("w4", "?", "active"),
    ]
    assert "already has work in progress" in answers[1][1]["error"]
    assert answers[3][1] == {"error": "study '<study>' has no document 'doc-9'"}
    assert answers[6][1] == {"error": "no study 'nope'"}
    assert answers[9][1] == {"error": "the body must be a JSON object"}
    assert answers[10][1] == {"error": "send a JSON body with Content-Type: application/json"}
    assert answers[11][1] == {"error": "the body is not valid JSON"}
    assert answers[12][1] == {"error": "study must be the study's slug"}
    # Flask saw only the researcher's (bad) key: the entry answered every other arrival
    assert arrivals_seen == ["w5"]


def test_a_failure_in_the_insert_writes_nothing_and_the_retry_is_stored_once(app, client):
    """The database fails the arrival's insert once, after the row went in (a trigger): the
    locks and the insert are one transaction, rolled back whole, and the failure is answered
    (500, nothing stored); the page's retry gets the worker one assignment, not two."""
    engine = app.extensions["db_engine"]
    if engine.dialect.name != "postgresql":
        pytest.skip("a trigger that fails once is Postgres's")
    make_study(app, documents=DOCUMENTS)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE SEQUENCE failing; CREATE FUNCTION fail_once() RETURNS trigger AS $$ "
            "BEGIN IF nextval('failing') = 1 THEN RAISE EXCEPTION 'the insert failed'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql; CREATE TRIGGER fail_once AFTER INSERT ON "
            "assignments FOR EACH ROW EXECUTE FUNCTION fail_once()"
        )
    body = {"study": "demo", "worker_id": "w1", "document": "doc-2"}
    failed = client.post("/api/assignments", json=body)
    assert failed.status_code == 500 and failed.get_json()["error"]
    assert held(app, "demo") == []
    answer = client.post("/api/assignments", json=body)
    assert answer.status_code == 201, answer.get_json()
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT last_value FROM failing").scalar() == 2
    assert held(app, "demo") == [("w1", "doc-2", "active")]
    assert answer.get_json()["segments"] == 2


def over_the_limit(client, address: str) -> list:
    """Three arrivals from ``address`` (the limit is 3 a minute): two taken and one refused
    by the policy (each counted once), then a fourth, refused by the limit."""
    environ = {"REMOTE_ADDR": address}

    def arrive(worker, document="doc-1"):
        body = {"study": "demo", "worker_id": f"{address}-{worker}", "document": document}
        return client.post("/api/assignments", json=body, environ_base=environ)

    return [arrive("a1"), arrive("a1"), arrive("a2", "doc-2"), arrive("a3")]


def test_the_arrival_limit_counts_every_arrival_once(app, client, arrivals_seen):
    make_study(app, documents=DOCUMENTS, annotators_per_doc=10)
    app.config["ARRIVAL_RATE_LIMIT"] = "3 per minute"
    answers = over_the_limit(client, "10.0.0.2")
    assert [answer.status_code for answer in answers] == [201, 409, 201, 429]
    assert arrivals_seen == []  # the entry answered all four
    refused = answers[-1]
    assert refused.get_json() == {"error": "3 per 1 minute"}
    assert refused.headers["Cache-Control"] == "no-store"
    assert refused.headers["Content-Type"] == "application/json"
    assert refused.headers["X-Content-Type-Options"] == "nosniff"
    # another address has its own count
    assert over_the_limit(client, "10.0.0.3")[0].status_code == 201


def test_a_store_that_fails_counts_in_memory(app, client, monkeypatch):
    """The limits' store unreachable (Redis down): arrivals are answered, and the limit
    still holds, counted in the process's memory (flask-limiter's fallback), as the study
    links count."""
    from limits.storage import RedisStorage

    from app.web.limits import limiter

    make_study(app, documents=DOCUMENTS, annotators_per_doc=10)
    app.config["ARRIVAL_RATE_LIMIT"] = "3 per minute"
    monkeypatch.setattr(limiter, "_storage_dead", False)  # restored after the test
    monkeypatch.setattr(limiter, "_storage", RedisStorage("redis://127.0.0.1:1/0"))
    monkeypatch.setattr(limiter, "_limiter", type(limiter._limiter)(limiter._storage))
    answers = over_the_limit(client, "10.0.0.9")
    assert [answer.status_code for answer in answers] == [201, 409, 201, 429]
    assert limiter._storage_dead is True


def test_the_entry_and_the_study_links_count_in_one_bucket(app, client):
    """The worker API counts in flask-limiter's own store under the study links' key and
    scope: the entry page (GET /s/<slug>) and the API's arrivals share the one limit."""
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


def test_behind_a_proxy_the_entry_counts_the_forwarded_address(database_url):
    """``BEHIND_PROXY``'s fix wraps the entry: it counts the client's address from the
    proxy's header, as the study links do, not the proxy's own."""
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


def test_the_open_counts_segments_and_leaves_the_document_to_the_get(app, client):
    """The arrival's answer gives the segment count from its read of the target; the
    document's part is read by the page's GET, not by the arrival."""
    from app.annotation.cache import cache_of

    make_study(app, documents=[("long", [f"Segment {n}." for n in range(7)]), *DOCUMENTS])
    cache = cache_of(app.extensions["db_engine"])

    def open_(worker):
        body = {"study": "demo", "worker_id": worker, "document": "long"}
        answer = client.post("/api/assignments", json=body)
        assert answer.status_code == 201, answer.get_json()
        return answer.get_json()

    first = open_("w1")
    assert first["segments"] == 7 and len(cache.documents) == 0
    assert client.get(f"/api/assignments/{first['token']}").status_code == 200
    assert len(cache.documents) == 1  # the GET read it
    assert open_("w2")["segments"] == 7


def test_on_postgres_the_common_arrival_is_two_round_trips(app, client):
    """The target's read, then the locks and the conditional insert sent together with no
    ``BEGIN`` (Postgres commits them as they run): two query strings, whatever the cache
    holds; the pool's connections are back idle afterwards."""
    import psycopg2.extensions
    from sqlalchemy import event

    engine = app.extensions["db_engine"]
    if engine.dialect.name != "postgresql":
        pytest.skip("round trips are Postgres's")
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
            assert sent[0].count("EXECUTE ") == 1  # the target (prepared on first use)
            assert sent[1].count("EXECUTE ") == 2  # the locks and the insert
            assert not any("BEGIN" in query or "COMMIT" in query for query in sent), sent
    finally:
        event.remove(engine, "checkout", count)
    assert held(app, "demo") == [("w1", "doc-1", "active"), ("w2", "doc-2", "active")]
