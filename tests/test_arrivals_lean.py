"""The arrival policy's short critical section (app/annotation/arrive.py: the worker ID's and
the document's locks, then one conditional insert; on a miss, the state read back to word
the refusal) keeps every rule under concurrency, on SQLite and Postgres: named-document opens
racing for the last slots, one worker ID racing for two documents, and the whole policy
property (tests/test_assignment_policy.py) run on Postgres too."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select, update

from app.db import session_scope
from app.models import Assignment
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.test_assignment_policy import (
    test_every_way_in_keeps_the_policy_and_never_returns_an_existing_token as policy,
)

DOCS = [(f"doc-{i}", [f"Document {i}.", "Its second segment."]) for i in range(3)]

test_the_policy_holds_on_every_backend = policy


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def race(app, bodies: list[dict]) -> list:
    """POST every body to /api/assignments at once, one thread and client each."""
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    barrier = threading.Barrier(len(bodies))
    answers: list = [None] * len(bodies)

    def send(i: int) -> None:
        client = app.test_client()
        barrier.wait()
        answers[i] = client.post("/api/assignments", json=bodies[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers


def taken(app) -> dict[tuple[str, str], int]:
    with app.app_context(), session_scope() as session:
        return {
            (row.worker_id, row.status): row.n
            for row in session.execute(
                select(Assignment.worker_id, Assignment.status, func.count().label("n")).group_by(
                    Assignment.worker_id, Assignment.status
                )
            )
        }


def test_named_document_opens_racing_for_the_last_slots(app):
    make_study(app, documents=DOCS, annotators_per_doc=2)
    answers = race(
        app, [{"study": "demo", "document": "doc-0", "worker_id": f"w{i}"} for i in range(8)]
    )
    # an arrival finding every slot taken takes over an unengaged hold (the policy): never
    # more than two active assignments on the document, whoever won
    assert {a.status_code for a in answers} <= {201, 409}, [a.get_json() for a in answers]
    refused = {a.get_json()["error"] for a in answers if a.status_code == 409}
    assert refused <= {"this document already has all the annotators it needs"}
    statuses = taken(app)
    assert sum(n for (_, status), n in statuses.items() if status == "active") == 2
    assert sum(statuses.values()) == sum(a.status_code == 201 for a in answers)
    opened = [a.get_json() for a in answers if a.status_code == 201]
    assert all(o["segments"] == 2 and o["resume_segment"] == 0 for o in opened)


def test_one_worker_racing_for_several_documents_gets_one(app):
    make_study(app, documents=DOCS, annotators_per_doc=5)
    answers = race(
        app,
        [{"study": "demo", "document": f"doc-{i % 3}", "worker_id": "same"} for i in range(6)]
        + [{"study": "demo", "worker_id": "same"}] * 2,
    )
    assert sorted(a.status_code for a in answers) == [201] + [409] * 7
    assert taken(app) == {("same", "active"): 1}


def test_a_blocked_worker_hears_about_work_in_progress_first(app, client):
    """The block is decided by the insert; the refusals keep their order when read back."""
    from app.annotation import reviews
    from app.models import Study

    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    make_study(app, documents=DOCS)
    body = {"study": "demo", "worker_id": "w1"}
    assert client.post("/api/assignments", json=body).status_code == 201
    with app.app_context(), session_scope() as session:
        reviews.act(session, session.scalar(select(Study)), "w1", "block", "test")
    again = client.post("/api/assignments", json=body)
    assert again.status_code == 409 and "work in progress" in again.get_json()["error"]
    with app.app_context(), session_scope() as session:
        session.execute(update(Assignment).values(status="submitted"))
    blocked = client.post("/api/assignments", json=body)
    assert blocked.status_code == 409
    assert blocked.get_json()["error"] == "you cannot take part in this study any more"
