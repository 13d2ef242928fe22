"""The named-document arrival's short path (app/annotation/named_arrival.py) against the whole
policy (app/annotation/assigning.py): from any state of a study, an arrival through the short
path (falling back to the policy when it declines, as the route does) ends exactly as the
policy alone would, on SQLite and Postgres. And a stale hold whose release the short path
skipped (released by this process moments ago) never makes an arrival refused."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from app.annotation import named_arrival
from app.annotation.assigning import assign, release_abandoned
from app.db import begin_write
from app.documents.studies import find_document, get_study
from app.errors import Conflict
from app.models import Assignment, Document, Study, WorkerReview
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.test_arrivals_lean import race

DOCS = [(f"doc-{i}", [f"Document {i}.", "Its second segment."]) for i in range(3)]
N = 2
ROWS = st.lists(
    st.tuples(
        st.integers(0, 3),  # worker
        st.integers(0, 2),  # document
        st.sampled_from(["active", "submitted", "abandoned"]),
        st.booleans(),  # engaged
        st.sampled_from([0, 10, 60]),  # minutes since last seen (hold 5, abandon 45)
    ),
    max_size=8,
)
studies = itertools.count()


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def _state(session, slug: str, rows, blocked: set[int]) -> None:
    study = session.scalar(select(Study).where(Study.slug == slug))
    documents = list(
        session.scalars(select(Document).where(Document.study_id == study.id).order_by(Document.id))
    )
    moment = datetime.now(UTC)
    seen = set()
    for worker, document, status, engaged, minutes in rows:
        if (worker, document) in seen:  # one assignment per (document, worker)
            continue
        seen.add((worker, document))
        at = moment - timedelta(minutes=minutes)
        session.add(
            Assignment(
                token=f"t-{slug}-{worker}-{document}",
                study_id=study.id,
                document_id=documents[document].id,
                worker_id=f"w{worker}",
                status=status,
                last_seen_at=at,
                engaged_at=at if engaged else None,
            )
        )
    for worker in blocked:
        session.add(WorkerReview(study_id=study.id, worker_id=f"w{worker}", blocked=True))
    session.flush()


def _arrive(session, slug: str, worker: str, document: str, *, short: bool):
    """What the route does (short path first, its transaction rolled back when it declines)
    or the policy alone, inside a savepoint; the outcome and the rows."""
    nested = session.begin_nested()
    try:
        opened = named_arrival.open_named(session, slug, worker, document) if short else None
        if short and opened is None:
            nested.rollback()
            nested = session.begin_nested()
        if opened is not None and opened.release is not None:  # the route's, after its answer
            release_abandoned(session, opened.release)
        if opened is None:
            study = get_study(session, slug)
            assign(session, study, worker, document=find_document(session, study, document))
        outcome: tuple = ("opened",)
    except Conflict as refusal:
        outcome = ("refused", type(refusal).__name__, str(refusal))
    session.flush()
    rows = session.execute(
        select(Assignment.worker_id, Assignment.document_id, Assignment.status).order_by(
            Assignment.worker_id, Assignment.document_id
        )
    ).all()
    nested.rollback()
    return outcome, [tuple(row) for row in rows]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rows=ROWS,
    blocked=st.sets(st.integers(0, 3), max_size=1),
    worker=st.integers(0, 3),
    document=st.integers(0, 2),
    due=st.booleans(),
)
def test_the_short_path_ends_as_the_policy_would(app, rows, blocked, worker, document, due):
    slug = f"named-{next(studies)}"
    make_study(app, slug, documents=DOCS, annotators_per_doc=N)
    with app.app_context():
        session = begin_write(app.extensions["db_sessionmaker"]())
        try:
            _state(session, slug, rows, blocked)
            study_id = session.scalar(select(Study.id).where(Study.slug == slug))
            released = named_arrival._released.setdefault(session.get_bind(), {})
            if due:
                released.pop(study_id, None)
            else:  # this process released the study's stale holds a moment ago
                released[study_id] = named_arrival.time.monotonic()
            short = _arrive(session, slug, f"w{worker}", f"doc-{document}", short=True)
            whole = _arrive(session, slug, f"w{worker}", f"doc-{document}", short=False)
        finally:
            session.rollback()
            session.close()
    assert short[0] == whole[0]
    if due:  # the stale holds released by both
        assert short[1] == whole[1]
    else:  # the same new assignment; stale holds maybe not yet marked abandoned
        assert {r[:2] for r in short[1]} == {r[:2] for r in whole[1]}


def test_a_skipped_release_never_refuses_an_arrival(app, client):
    make_study(app, documents=DOCS[:1], annotators_per_doc=1)
    app.config["ARRIVAL_RATE_LIMIT"] = "1000 per minute"
    first = client.post(
        "/api/assignments", json={"study": "demo", "worker_id": "slow", "document": "doc-0"}
    )
    assert first.status_code == 201
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        stale = datetime.now(UTC) - timedelta(minutes=10)  # a hold older than 5 minutes
        session.execute(Assignment.__table__.update().values(last_seen_at=stale, engaged_at=None))
        session.commit()
        study_id = session.scalar(select(Study.id))
        # this process released the study's stale holds a moment ago: not due on the short path
        named_arrival._released.setdefault(session.get_bind(), {})[study_id] = (
            named_arrival.time.monotonic()
        )
        session.close()
    answer = client.post(
        "/api/assignments", json={"study": "demo", "worker_id": "next", "document": "doc-0"}
    )
    assert answer.status_code == 201, answer.get_json()
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        statuses = dict(session.execute(select(Assignment.worker_id, Assignment.status)).all())
        session.close()
    assert statuses == {"slow": "abandoned", "next": "active"}


def test_named_and_crowd_arrivals_racing_over_stale_holds(app, monkeypatch):
    """Every slot held by a stale hold, the release due on every arrival: named arrivals (short
    path) and crowd arrivals (the policy) at once lock in one order, so none deadlocks (a 500),
    and no document gets more than N."""
    monkeypatch.setattr(named_arrival, "RELEASE_EVERY_S", 0.0)
    make_study(app, documents=DOCS, annotators_per_doc=N)
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        _state(session, "demo", [(i, i % 3, "active", False, 10) for i in range(4)], set())
        _state(session, "demo", [(i, i % 3, "active", False, 10) for i in range(4, 6)], set())
        session.commit()
        session.close()
    bodies = [{"study": "demo", "worker_id": f"n{i}", "document": f"doc-{i % 3}"} for i in range(6)]
    bodies += [{"study": "demo", "worker_id": f"c{i}"} for i in range(6)]
    answers = race(app, bodies)
    assert {a.status_code for a in answers} <= {201, 409}, [a.get_json() for a in answers]
    # every stale slot freed (a later arrival may take over a new, unengaged hold: more 201s)
    assert sum(a.status_code == 201 for a in answers) >= len(DOCS) * N
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        taken = session.execute(
            select(Assignment.document_id, func.count())
            .where(Assignment.status.in_(("active", "submitted")))
            .group_by(Assignment.document_id)
        ).all()
        session.close()
    assert sorted(count for _, count in taken) == [N] * len(DOCS)


@pytest.mark.parametrize("lane", [True, False])
def test_a_due_release_runs_after_the_answer(app, client, lane):
    """The arrival that finds the release due answers, then releases the study's stale holds
    in a transaction of its own (the lane's and the route's answer alike)."""
    make_study(app, documents=DOCS, annotators_per_doc=N)
    app.config["FAST_LANE"] = lane
    with app.app_context():
        session = begin_write(app.extensions["db_sessionmaker"]())
        _state(session, "demo", [(0, 1, "active", False, 10)], set())  # a stale hold on doc-1
        session.commit()
        named_arrival._released.setdefault(session.get_bind(), {}).clear()  # due
        session.close()
    body = {"study": "demo", "worker_id": "next", "document": "doc-0"}
    answer = client.post("/api/assignments", json=body)
    assert answer.status_code == 201, answer.get_json()
    answer.close()
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        statuses = dict(session.execute(select(Assignment.worker_id, Assignment.status)).all())
        session.close()
    assert statuses == {"w0": "abandoned", "next": "active"}
