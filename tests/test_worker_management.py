"""The researcher's worker pages and actions. Reject takes a worker's work
out of every export (CSV both paths, JSONL, SNaC, the interchange writers) and out of the
agreement figures, and reopens their slots; block refuses new work; approve gives back what
a reject took; every action is logged with who and when; CSRF and access are checked."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, Study, WorkerAction, WorkerReview
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, SEGMENTS, annotation_body, api_add, export_text, open_token

PASSWORD = "a long enough password"
ADMIN, OUTSIDER = "ada@example.org", "bob@example.org"
TOKEN_PATTERN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def create_researcher(app, email: str, *, admin: bool = False) -> None:
    from app.researchers.accounts import create_researcher as create

    with app.app_context(), session_scope() as session:
        researcher = create(session, email, PASSWORD)
        if admin:
            researcher.role = "admin"


def csrf(client) -> str:
    return TOKEN_PATTERN.search(client.get("/admin/login").get_data(as_text=True)).group(1)


def logged_in(app, email: str):
    client = app.test_client()
    answer = client.post(
        "/admin/login", data={"email": email, "password": PASSWORD, "csrf_token": csrf(client)}
    )
    assert answer.status_code == 302
    return client


def act(researcher, worker: str, action: str, note: str = "", slug: str = "demo"):
    return researcher.post(
        f"/admin/studies/{slug}/workers/action",
        data={"csrf_token": csrf(researcher), "worker": worker, "action": action, "note": note},
    )


@pytest.fixture
def study(app, client):
    """Two documents, two workers per document; w1 and w2 marked the same span of doc-1."""
    make_study(app, documents=DOCUMENTS, annotators_per_doc=2)
    create_researcher(app, ADMIN, admin=True)
    create_researcher(app, OUTSIDER)
    tokens = {}
    for worker, text in (("w1", "only child"), ("w2", "only child")):
        token = open_token(client, worker=worker)
        assert api_add(client, token, annotation_body(0, text, "CharE")).status_code == 201
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
        tokens[worker] = token
    return tokens


def arrive(client, worker: str) -> tuple[int, str | None]:
    """A worker arriving without naming a document: (status, the document they got)."""
    answer = client.post("/api/assignments", json={"study": "demo", "worker_id": worker})
    if answer.status_code != 201:
        return answer.status_code, answer.get_json()["error"]
    token = answer.get_json()["token"]
    return 201, client.get(f"/api/assignments/{token}").get_json()["document"]["id"]


def snac_votes(app) -> list[int]:
    data = json.loads(export_text(app, fmt="snac"))
    return [e["votes"] for seg in data["doc-1"].values() for e in seg["errors"]]


def workers_in(text: str, column: str = "worker_id") -> set[str]:
    return {row[column] for row in csv.DictReader(io.StringIO(text))}


def agreement_workers(app) -> int:
    from app.quality.reporting import study_report

    with app.app_context(), session_scope() as session:
        return study_report(session, session.scalar(select(Study)))["agreement"]["workers"]


def test_reject_removes_work_everywhere_and_reopens_the_slot(app, client, study):
    ada = logged_in(app, ADMIN)
    assert workers_in(export_text(app)) == {"w1", "w2"}
    assert agreement_workers(app) == 2
    assert snac_votes(app) == [2]
    thresh = json.loads(export_text(app, fmt="thresh"))
    assert [e.get("votes") for entry in thresh for e in entry.get("edits", [])] == [2]
    # the document is full: a third worker gets doc-2
    assert arrive(client, "w3") == (201, "doc-2")

    answer = act(ada, "w2", "reject")
    assert answer.status_code == 303
    page = ada.get(answer.headers["Location"]).get_data(as_text=True)
    assert "rejected" in page and "blocked" in page

    assert workers_in(export_text(app)) == {"w1"}
    assert workers_in(ada.get("/admin/studies/demo/export.csv").get_data(as_text=True)) == {"w1"}
    jsonl = [json.loads(line) for line in export_text(app, fmt="jsonl").splitlines()]
    assert {row["worker_id"] for row in jsonl} == {"w1"}
    assert snac_votes(app) == [1]  # only w1's mark is left
    thresh = json.loads(export_text(app, fmt="thresh"))
    edits = [e for entry in thresh for e in entry.get("edits", [])]
    assert [e.get("votes") for e in edits] == [1]
    assert agreement_workers(app) == 1
    # w2's slot of doc-1 is free again: the next worker gets it
    assert arrive(client, "w4") == (201, "doc-1")
    # w2 is blocked: no new document
    status, error = arrive(client, "w2")
    assert status == 409 and "cannot take part" in error
    # ... and at the worker page, the platform's "no places" return page (not the ID form)
    page = client.get("/s/demo?worker_id=w2")
    assert page.status_code == 409 and "No documents left" in page.get_data(as_text=True)
    # the rejected token is read-only
    answer = api_add(client, study["w2"], annotation_body(1, "brother", "CharE"))
    assert answer.status_code == 409

    # approve gives it all back (the slot is now over-full: documented)
    assert act(ada, "w2", "approve").status_code == 303
    assert workers_in(export_text(app)) == {"w1", "w2"}  # w3, w4 have not submitted
    assert agreement_workers(app) == 2
    with app.app_context(), session_scope() as session:
        log = session.execute(
            select(WorkerAction.action, WorkerAction.actor, WorkerAction.worker_id).order_by(
                WorkerAction.id
            )
        ).all()
        assert [tuple(r) for r in log] == [("reject", ADMIN, "w2"), ("approve", ADMIN, "w2")]
        review = session.scalar(select(WorkerReview))
        # the block the reject set is lifted: w2 gets new work again
        assert (review.status, review.blocked) == ("approved", False)
    assert arrive(client, "w2") == (201, "doc-2")


def test_block_refuses_new_work_but_keeps_exports(app, client, study):
    ada = logged_in(app, ADMIN)
    assert act(ada, "w1", "block").status_code == 303
    assert arrive(client, "w1")[0] == 409
    assert workers_in(export_text(app)) == {"w1", "w2"}


def test_note_is_kept_as_text_and_bad_input_changes_nothing(app, client, study):
    ada = logged_in(app, ADMIN)
    note = '<script>alert("x")</script>\r\nfast but careful'
    assert act(ada, "w1", "note", note).status_code == 303
    page = ada.get("/admin/studies/demo/worker?id=w1").get_data(as_text=True)
    assert "&lt;script&gt;" in page and "<script>alert" not in page
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(WorkerReview.note)) == note.replace("\r\n", "\n")
    for bad in ("\x00", "a\x07b", "x" * 2001):
        answer = act(ada, "w1", "note", bad)
        assert answer.status_code == 303
        assert "note" in ada.get(answer.headers["Location"]).get_data(as_text=True)
    assert act(ada, "w1", "explode").status_code == 303
    assert act(ada, "nobody", "reject").status_code == 404
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(WorkerReview.note)) == note.replace("\r\n", "\n")
        assert len(session.scalars(select(WorkerAction)).all()) == 1


def test_csrf_and_access_are_checked(app, client, study):
    ada = logged_in(app, ADMIN)
    answer = ada.post(
        "/admin/studies/demo/workers/action", data={"worker": "w1", "action": "reject"}
    )
    assert answer.status_code == 400
    bob = logged_in(app, OUTSIDER)
    for url in (
        "/admin/studies/demo/workers",
        "/admin/studies/demo/worker?id=w1",
        "/admin/studies/demo/export.assignments-csv",
    ):
        assert bob.get(url).status_code == 404, url
    assert act(bob, "w1", "reject").status_code == 404
    answer = bob.post(
        "/admin/studies/demo/workers/settings",
        data={"csrf_token": csrf(bob), "min_seconds_per_segment": "5"},
    )
    assert answer.status_code == 404
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(WorkerReview)) is None
        assert session.scalar(select(Assignment.status).where(Assignment.worker_id == "w1")) == (
            "submitted"
        )
        assert "min_seconds_per_segment" not in (session.scalar(select(Study)).settings or {})
    assert ada.get("/admin/studies/demo/worker?id=nobody").status_code == 404
    anonymous = app.test_client()
    assert anonymous.get("/admin/studies/demo/workers").status_code in (302, 401)


def test_worker_pages_show_time_flags_and_settings(app, client, study):
    ada = logged_in(app, ADMIN)
    answer = ada.post(
        "/admin/studies/demo/workers/settings",
        data={"csrf_token": csrf(ada), "min_seconds_per_segment": "abc"},
    )
    # refused: the Settings page again, the message above its time section
    assert answer.status_code == 400
    assert 'id="time-error"' in answer.get_data(as_text=True)
    assert "must be a number" in answer.get_data(as_text=True)
    answer = ada.post(
        "/admin/studies/demo/workers/settings",
        data={
            "csrf_token": csrf(ada),
            "min_seconds_per_segment": "30",
            "require_all_segments_seen": "1",
        },
    )
    assert answer.status_code == 303
    assert answer.headers["Location"].endswith("/admin/studies/demo/settings#time")
    with app.app_context(), session_scope() as session:
        settings = session.scalar(select(Study)).settings
        assert settings["min_seconds_per_segment"] == 30
        assert settings["require_all_segments_seen"] is True
    listing = ada.get("/admin/studies/demo/workers").get_data(as_text=True)
    assert "w1" in listing and "w2" in listing
    assert SEGMENTS[0] not in listing  # no document text on the management page
