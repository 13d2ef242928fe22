"""The one arrival policy (app/annotation/arrive.py) against the rules as documented
(app/annotation/assigning.py), on SQLite and Postgres: from any state of a study (workers'
assignments active, submitted or abandoned, engaged or not, seen minutes ago or an hour ago;
a blocked worker), an arrival naming its document ends as a plain model of the rules says:
stale holds released first, then work in progress elsewhere, blocked, had before, a full
document's oldest unengaged hold taken over, else full. And a stale hold whose release the
process skipped (released moments ago) never makes an arrival refused; a due release runs
after the answer."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from app.annotation import arrive as policy
from app.annotation.connect import handle_of
from app.db import begin_write
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


def _arrive(session, slug: str, worker: str, document: str):
    """The policy's arrival in a savepoint: its outcome (opened, or the refusal's class and
    message) and the assignments' rows after it (rolled back)."""
    nested = session.begin_nested()
    db = handle_of(session)
    try:
        study, worker_id, target = policy.resolve(db, slug, worker, document)
        opened = policy.arrive(db, study, worker_id, document=target)
        if opened.release is not None:  # what the entry runs after its answer
            policy.release_abandoned(db, opened.release)
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


HOLD, ABANDON = 5, 45  # the study's defaults, in minutes


def expected(rows, blocked: set[int], worker: int, document: int) -> tuple:
    """The documented rules, as a plain model: the outcome of ``worker`` arriving for
    ``document`` in the state ``rows`` (as ``_state`` stores them)."""
    kept: dict[tuple[int, int], tuple[str, bool, int]] = {}
    for w, d, status, engaged, minutes in rows:
        kept.setdefault((w, d), (status, engaged, minutes))
    live = {}
    for (w, d), (status, engaged, minutes) in kept.items():
        stale = status == "active" and (minutes > ABANDON or (not engaged and minutes > HOLD))
        live[(w, d)] = ("abandoned" if stale else status, engaged, minutes)
    if any(w == worker and status == "active" for (w, _d), (status, _e, _m) in live.items()):
        return ("refused", "WorkInProgress")
    if worker in blocked:
        return ("refused", "Blocked")
    if (worker, document) in live:
        return ("refused", "Conflict", "already had")
    taken = [
        (w, engaged, minutes)
        for (w, d), (status, engaged, minutes) in live.items()
        if d == document and status in ("active", "submitted")
    ]
    if len(taken) < N:
        return ("opened",)
    holds = [w for (w, d), (status, engaged, _m) in live.items() if d == document
             and status == "active" and not engaged and w != worker]  # fmt: skip
    # the oldest unengaged hold taken over frees one slot (a document over N, as a study
    # whose N was lowered may have, stays full)
    if holds and len(taken) - 1 < N:
        return ("opened",)
    return ("refused", "Conflict", "all the annotators")


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
# the rules' plain cases, always played: a full document (no hold to take over), the same
# with an unengaged hold, a document had before, work in progress, a stale one of one's own
@example(rows=[(0, 0, "active", True, 0), (1, 0, "submitted", True, 0)], blocked=set(),
         worker=2, document=0, due=False)  # fmt: skip
@example(rows=[(0, 0, "active", False, 0), (1, 0, "submitted", True, 0)], blocked=set(),
         worker=2, document=0, due=False)  # fmt: skip
@example(rows=[(2, 0, "submitted", True, 0)], blocked=set(), worker=2, document=0, due=False)
@example(rows=[(2, 1, "active", True, 0)], blocked=set(), worker=2, document=0, due=False)
@example(rows=[(2, 1, "active", True, 60)], blocked={2}, worker=2, document=0, due=False)
@given(
    rows=ROWS,
    blocked=st.sets(st.integers(0, 3), max_size=1),
    worker=st.integers(0, 3),
    document=st.integers(0, 2),
    due=st.booleans(),
)
def test_an_arrival_ends_as_the_rules_say(app, rows, blocked, worker, document, due):
    slug = f"named-{next(studies)}"
    make_study(app, slug, documents=DOCS, annotators_per_doc=N)
    with app.app_context():
        session = begin_write(app.extensions["db_sessionmaker"]())
        try:
            _state(session, slug, rows, blocked)
            study_id = session.scalar(select(Study.id).where(Study.slug == slug))
            released = policy._released.setdefault(session.get_bind(), {})
            if due:
                released.pop(study_id, None)
            else:  # this process released the study's stale holds a moment ago
                released[study_id] = policy.time.monotonic()
            outcome, after = _arrive(session, slug, f"w{worker}", f"doc-{document}")
        finally:
            session.rollback()
            session.close()
    model = expected(rows, blocked, worker, document)
    assert outcome[: len(model) - (len(model) == 3)] == model[:2], (outcome, model)
    if len(model) == 3:
        assert model[2] in outcome[2], (outcome, model)
    opened = [r for r in after if r[0] == f"w{worker}" and r[2] == "active"]
    assert bool(opened) == (outcome[0] == "opened" or model == ("refused", "WorkInProgress"))
    if outcome[0] == "opened":  # the document it took has at most N taken slots
        [(_w, taken_document, _s)] = [r for r in after if r[0] == f"w{worker}" and r[2] == "active"]
        taken = [r for r in after if r[1] == taken_document and r[2] in ("active", "submitted")]
        assert len(taken) <= N, after


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
        # this process released the study's stale holds a moment ago: not due
        policy._released.setdefault(session.get_bind(), {})[study_id] = policy.time.monotonic()
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
    """Every slot held by a stale hold, the release due on every arrival: named arrivals and
    crowd arrivals at once lock in one order, so none deadlocks (a 500), and no document gets
    more than N."""
    monkeypatch.setattr(policy, "RELEASE_EVERY_S", 0.0)
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


def test_a_due_release_runs_after_the_answer(app, client):
    """The arrival that finds the release due answers, then releases the study's stale holds
    in a transaction of its own."""
    make_study(app, documents=DOCS, annotators_per_doc=N)
    with app.app_context():
        session = begin_write(app.extensions["db_sessionmaker"]())
        _state(session, "demo", [(0, 1, "active", False, 10)], set())  # a stale hold on doc-1
        session.commit()
        policy._released.setdefault(session.get_bind(), {}).clear()  # due
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
