"""Arrivals without the study's lock on the common path, on Postgres.

An arrival locks its worker ID and then only the document it takes
(app/annotation/arrival_sql.py), so arrivals on different documents do not wait for each
other, while the policy holds: never more than N taken slots on a document, never a worker ID
twice on a document, never two active assignments for one worker ID. Checked three ways:

* an arrival whose transaction is still open (holding its document) does not make another
  worker's arrival wait (``lock_timeout``): it takes the next document by the policy's order
  (on the study-lock code this timed out);
* a burst of arrivals released at once on a study of several documents fills every slot
  exactly, with the invariants above, and (measured, printed, not asserted tightly) the time
  the burst took against the same arrivals one after another;
* the policy's property (tests/test_assignment_policy.py's actions: study-link arrivals,
  keyless opens with and without a named document, heartbeats, submits) played by hypothesis
  as rounds of actions sent at the same moment from several threads, the invariants checked
  after every round.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, text

from app.annotation.arrive import arrive as arrive_policy
from app.annotation.assigning import NoDocumentsLeft
from app.annotation.connect import handle_of
from app.db import session_scope
from app.models import Assignment, Document, Study
from tests.conftest import make_database_url, make_study
from tests.test_assignment_policy import check_invariants, play

pytestmark = pytest.mark.postgres
DOCS = [(f"doc-{i}", [f"Document {i}.", "Its second segment."]) for i in range(6)]
N = 2
studies = itertools.count()


@pytest.fixture
def database_url(request, tmp_path):
    return make_database_url("postgres", request, tmp_path)


def in_threads(calls: list) -> list:
    """Run every call at the same moment, one thread each; their results (or exceptions)."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as error:  # noqa: BLE001 - the test asserts on it
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def policy_holds(app, study_id: int) -> dict[str, int]:
    """The invariants, asserted; the taken slots per document."""
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(Assignment.document_id, Assignment.worker_id, Assignment.status).where(
                Assignment.study_id == study_id
            )
        ).all()
        names = dict(session.execute(select(Document.id, Document.external_id)).all())
    pairs = [(d, w) for d, w, _ in rows]
    assert len(pairs) == len(set(pairs)), "a worker ID had a document twice"
    active = [w for _, w, s in rows if s == "active"]
    assert len(active) == len(set(active)), "a worker ID holds two active assignments"
    taken: dict[str, int] = {}
    for document, _, status in rows:
        if status in ("active", "submitted"):
            taken[names[document]] = taken.get(names[document], 0) + 1
    assert all(n <= N for n in taken.values()), taken
    return taken


def assign(session, study, worker_id: str) -> str:
    """The policy's arrival (app/annotation/arrive.py) in ``session``'s transaction: the
    external ID of the document it gave."""
    document = arrive_policy(handle_of(session), study, worker_id).document
    return session.get(Document, document.id).external_id


def arrive(app, study_id: int, worker_id: str):
    def call():
        with app.app_context(), session_scope() as session:
            return assign(session, session.get(Study, study_id), worker_id)

    return call


def test_an_open_arrival_does_not_make_another_wait(app):
    study_id = make_study(app, documents=DOCS, annotators_per_doc=1)
    with app.app_context(), session_scope() as first:
        taken_first = assign(first, first.get(Study, study_id), "w-first")
        # w-first's transaction is still open, holding doc-0; another arrival must not wait
        with session_scope() as second:
            second.execute(text("SET LOCAL lock_timeout = '2s'"))
            started = time.perf_counter()
            other = assign(second, second.get(Study, study_id), "w-second")
            waited = time.perf_counter() - started
            assert (taken_first, other) == ("doc-0", "doc-1")
            assert waited < 1.5, waited
    assert policy_holds(app, study_id) == {"doc-0": 1, "doc-1": 1}


def test_the_same_worker_id_waits_for_its_own_open_arrival(app):
    study_id = make_study(app, documents=DOCS, annotators_per_doc=N)
    with app.app_context(), session_scope() as first:
        assign(first, first.get(Study, study_id), "same")
        with session_scope() as second:
            second.execute(text("SET LOCAL lock_timeout = '300ms'"))
            with pytest.raises(Exception, match="lock timeout"):
                assign(second, second.get(Study, study_id), "same")


def test_a_burst_of_arrivals_fills_every_slot_exactly(app):
    study_id = make_study(app, documents=DOCS, annotators_per_doc=N)
    workers = [f"w{i}" for i in range(20)]  # 12 slots: 8 arrive when the study is full
    started = time.perf_counter()
    results = in_threads([arrive(app, study_id, w) for w in workers])
    burst = time.perf_counter() - started
    refused = [r for r in results if isinstance(r, Exception)]
    assert all(isinstance(r, NoDocumentsLeft) for r in refused), refused
    # every slot taken: an arrival finding none free takes over an unengaged hold instead
    assert policy_holds(app, study_id) == {name: N for name, _ in DOCS}
    with app.app_context(), session_scope() as session:
        active = session.scalar(select(func.count()).where(Assignment.status == "active"))
    assert active == len(DOCS) * N

    serial_study = make_study(app, slug="serial", documents=DOCS, annotators_per_doc=N)
    started = time.perf_counter()
    for worker in workers:
        with contextlib.suppress(NoDocumentsLeft):
            arrive(app, serial_study, worker)()
    serial = time.perf_counter() - started
    print(f"\n20 arrivals: at once {burst * 1000:.0f} ms, one after another {serial * 1000:.0f} ms")


ACTIONS = st.tuples(
    st.sampled_from(["link", "api", "api-document", "heartbeat", "submit"]),
    st.integers(0, 5),  # which worker
    st.integers(0, 3),  # which document, for api-document
)


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rounds=st.lists(st.lists(ACTIONS, min_size=2, max_size=6), min_size=1, max_size=4))
def test_the_policy_holds_under_concurrent_rounds(app, rounds):
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    slug = f"concurrent-{next(studies)}"
    make_study(app, slug=slug, documents=DOCS[:4], annotators_per_doc=N)
    tokens: dict[int, str] = {}
    seen: set[str] = set()

    for actions in rounds:
        results = in_threads(
            [lambda a=a: play(app.test_client(), slug, *a, tokens) for a in actions]
        )
        for (_, worker, _), result in zip(actions, results, strict=True):
            assert not isinstance(result, BaseException), result
            if result is not None:
                assert result not in seen, "an existing token was handed out again"
                seen.add(result)
                tokens[worker] = result
        check_invariants(app, slug)
