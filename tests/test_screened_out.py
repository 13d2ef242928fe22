"""A worker's fate is explicit: a worker who used every
qualification attempt without the pass mark is ``screened_out`` on every training assignment
(the practice document and the qualification documents; no completion code anywhere, the
screen-out return instead), tagged on the workers' pages,
listed in a CSV of IDs to screen out, and screened out on Prolific by the command line;
approve after reject unblocks unless the worker was blocked on their own. On SQLite
and Postgres, through the real HTTP API, the worker and admin pages and the command line."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, WorkerReview
from tests.conftest import BACKENDS, make_database_url
from tests.helpers import export_text
from tests.test_admin import csrf, login
from tests.test_training import TEST, TEST_KEY, add, arrive, span, training_study

SCREEN = "https://app.prolific.com/submissions/complete?cc=SCREEN27"


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def admin(app, client):
    from app.researchers.accounts import create_researcher
    from tests.test_admin import EMAIL, PASSWORD

    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    login(client)
    return client


def prolific(worker: str, n: int = 0) -> dict[str, str]:
    """Prolific's arrival parameters of ``worker``'s session ``n`` (IDs are alphanumeric); a
    worker keeps one session through the training phase, as the continue links do."""
    return {"PROLIFIC_PID": worker, "STUDY_ID": "st27", "SESSION_ID": session_id(worker, n)}


def session_id(worker: str, n: int = 0) -> str:
    return "se" + worker.replace("-", "") + str(n)


def submit(client, token: str) -> dict:
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 200, answer.get_json()
    return {**answer.get_json(), "token": token}


def practise(client, worker: str) -> dict:
    """The practice document, submitted untouched (it teaches, never graded)."""
    _, token, _ = arrive(client, worker, **prolific(worker))
    assert token is not None
    return submit(client, token)


def fail_practice(client, worker: str, attempts: int = 2) -> list[dict]:
    """``worker`` arrives from Prolific, does the practice document, and fails every
    qualification attempt (one right mark of two and a wrong one: F1 0.5 < 0.6); the
    submit answers, the practice document's first."""
    answers = [practise(client, worker)]
    for _ in range(attempts):
        _, token, _ = arrive(client, worker, **prolific(worker))
        assert token is not None
        assert add(client, token, span(*TEST_KEY[0], texts=TEST)).status_code == 201
        assert add(client, token, span(0, "Tom", "RefE", TEST)).status_code == 201
        answers.append(submit(client, token))
    return answers


def pass_practice(client, worker: str) -> None:
    practise(client, worker)
    _, token, _ = arrive(client, worker, **prolific(worker))
    for mark in TEST_KEY:
        assert add(client, token, span(*mark, texts=TEST)).status_code == 201
    submit(client, token)


def statuses(app, worker: str) -> list[tuple[str, str, str | None]]:
    with app.app_context(), session_scope() as session:
        rows = session.scalars(
            select(Assignment).where(Assignment.worker_id == worker).order_by(Assignment.id)
        ).all()
        return [(a.document.external_id, a.status, a.completion_code) for a in rows]


def test_a_screened_out_worker_gets_no_completion_code_anywhere(app, client):
    """The submit answer and the assignments CSV gave a screened-out
    worker a completion code, though the done page withheld it."""
    training_study(app, attempts=2, platform="prolific", screen_out_url=SCREEN)
    practice, first, last = fail_practice(client, "p-out")
    assert practice["completion_code"] is None and not practice.get("screened_out")
    assert first["completion_code"] is None and not first.get("screened_out")
    assert last["completion_code"] is None and last["screened_out"] is True
    # a retried submit answers the same
    again = client.post(f"/api/assignments/{last['token']}/submit")
    assert again.status_code == 200 and again.get_json()["completion_code"] is None
    assert sorted(statuses(app, "p-out")) == [
        ("practice-1", "screened_out", None),
        ("test-1", "screened_out", None),
        ("test-2", "screened_out", None),
    ]
    rows = list(csv.DictReader(io.StringIO(export_text(app, "demo", "assignments-csv"))))
    assert [r["status"] for r in rows if r["worker_id"] == "p-out"] == ["screened_out"] * 3
    marks = list(csv.DictReader(io.StringIO(export_text(app, "demo", "csv"))))
    assert not any(r["completion_code"] for r in marks if r["worker_id"] == "p-out")
    # the done page and a later arrival give the screen-out return, never a code
    page = client.get(f"/a/{last['token']}/done")
    assert page.status_code == 200 and b"Thank you for trying" in page.data
    assert b"SCREEN27" in page.data and b"completion-code" not in page.data
    # back on the same Prolific session: to that assignment's done page, the same return
    back = client.get("/s/demo", query_string=prolific("p-out"))
    assert back.status_code == 302 and back.headers["Location"].endswith(f"/a/{last['token']}/done")
    # a new session: no new assignment, the screen-out page
    status, token, body = arrive(client, "p-out", **prolific("p-out", 9))
    assert (status, token) == (200, None) and b"Thank you for trying" in body


def test_a_passing_worker_gets_a_code_on_real_work_only(app, client):
    training_study(app, attempts=2, platform="prolific", screen_out_url=SCREEN)
    pass_practice(client, "p-ok")
    _, real, _ = arrive(client, "p-ok", **prolific("p-ok"))
    answer = client.post(f"/api/assignments/{real}/submit").get_json()
    assert answer["completion_code"] and "screened_out" not in answer
    found = [(doc[:4], status, bool(code)) for doc, status, code in statuses(app, "p-ok")]
    assert found == [
        ("prac", "submitted", False),
        ("test", "submitted", False),
        ("doc-", "submitted", True),
    ]


def test_screened_out_workers_are_tagged_listed_and_filtered(app, client, admin):
    training_study(app, attempts=1, platform="prolific", screen_out_url=SCREEN)
    fail_practice(client, "p-out", attempts=1)
    pass_practice(client, "p-ok")
    page = admin.get("/admin/studies/demo/workers").get_data(as_text=True)
    assert 'data-worker="p-out"' in page and 'data-state="screened_out"' in page
    assert "screened out" in page
    only = admin.get("/admin/studies/demo/workers?state=screened_out").get_data(as_text=True)
    assert 'data-worker="p-out"' in only and 'data-worker="p-ok"' not in only
    worker = admin.get("/admin/studies/demo/worker?id=p-out").get_data(as_text=True)
    assert "screened out" in worker
    listed = admin.get("/admin/studies/demo/workers.csv?state=screened_out")
    assert listed.status_code == 200 and listed.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(listed.get_data(as_text=True))))
    assert [(r["worker_id"], r["state"], r["prolific_session_id"]) for r in rows] == [
        ("p-out", "screened_out", "sepout0")
    ]
    dashboard = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert re.search(r'id="screened-out-count"[^>]*>1<', dashboard)
    assert re.search(r'<tr data-worker="p-out" data-state="screened_out">', dashboard)
    # practice is left out of the report's counts by default, the worker is not: their row
    # counts nothing and says what became of them
    report = admin.get("/admin/studies/demo/report.json").get_json()
    out_row = next(w for w in report["workers"] if w["worker_id"] == "p-out")
    assert out_row["documents_done"] == 0 and out_row["state"] == "screened_out"
    practice = admin.get("/admin/studies/demo/report.json?include_practice=1").get_json()
    # the practice and the qualification document
    assert practice["progress"]["assignments"]["screened_out"] == 2


def test_prolific_screen_out_command_sends_the_screened_out_submissions(
    app, client, database_url, monkeypatch
):
    from app.cli import main

    training_study(app, attempts=1, platform="prolific", screen_out_url=SCREEN)
    fail_practice(client, "p-out", attempts=1)
    fail_practice(client, "p-out2", attempts=1)
    pass_practice(client, "p-ok")
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    result = CliRunner().invoke(main, ["prolific", "screen-out", "demo", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "would screen out 2 submissions in Prolific study st27 (p-out, p-out2)"
    ]
    # a worker who is not screened out is refused by name
    result = CliRunner().invoke(
        main, ["prolific", "screen-out", "demo", "--worker", "p-ok", "--dry-run"]
    )
    assert result.exit_code == 1 and "p-ok is not screened out" in result.output
    # approving a screened-out worker would pay them in full: skipped, with a word
    result = CliRunner().invoke(
        main, ["prolific", "approve", "demo", "--worker", "p-out", "--worker", "p-ok", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert "approve submission sepok0 of p-ok" in result.output
    assert "skip p-out: screened out" in result.output
    assert "submission sepout0" not in result.output


def act(admin, worker: str, action: str):
    return admin.post(
        "/admin/studies/demo/workers/action",
        data={"csrf_token": csrf(admin), "worker": worker, "action": action},
    )


def review(app, worker: str) -> tuple[str | None, bool]:
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(WorkerReview).where(WorkerReview.worker_id == worker))
        return row.status, row.blocked


def test_approve_after_reject_unblocks_unless_blocked_separately(app, client, admin):
    """An approve after a reject showed "approved · blocked", and a new arrival got "No
    documents left"."""
    from tests.conftest import make_study

    make_study(app, documents=[("d1", ["One."]), ("d2", ["Two."])], annotators_per_doc=2)
    _, token, _ = arrive(client, "w1")
    client.post(f"/api/assignments/{token}/position", json={"segment": 0})
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    act(admin, "w1", "reject")
    assert review(app, "w1") == ("rejected", True)
    act(admin, "w1", "approve")
    assert review(app, "w1") == ("approved", False)
    status, token2, _ = arrive(client, "w1")
    assert status == 302 and token2 is not None  # the second document
    page = admin.get("/admin/studies/demo/worker?id=w1").get_data(as_text=True)
    assert "approved" in page and ">blocked<" not in page
    # blocked on their own, then rejected and approved: still blocked
    client.post(f"/api/assignments/{token2}/position", json={"segment": 0})
    act(admin, "w1", "block")
    act(admin, "w1", "reject")
    act(admin, "w1", "approve")
    assert review(app, "w1") == ("approved", True)
    # the page says what each action does
    page = admin.get("/admin/studies/demo/worker?id=w1").get_data(as_text=True)
    assert "unblocks them unless you blocked them yourself" in page
    log = [line for line in page.splitlines() if "worker-log" in line]
    assert log


def test_screened_out_assignments_count_as_attempts_and_leave_agreement(app, client):
    """The status change must not give a screened-out worker new practice attempts."""
    training_study(app, attempts=1, platform="prolific", screen_out_url=SCREEN)
    fail_practice(client, "p-out", attempts=1)
    from app.annotation.qualification import qualification_state
    from app.models import Study

    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        state = qualification_state(session, study, "p-out")
        assert (state.qualified, state.attempts_used, state.can_try_again) == (False, 1, False)
        assert state.best_f1 == pytest.approx(0.5)  # P 1/2, R 1/2
    answers = json.loads(json.dumps(statuses(app, "p-out")))
    assert [(doc[:4], status, code) for doc, status, code in answers] == [
        ("prac", "screened_out", None),
        ("test", "screened_out", None),
    ]


def test_a_rejected_worker_reopening_their_link_is_told_so(app, client, admin):
    """A rejected worker reopening the link saw "Preview: read-only"."""
    training_study(app, attempts=1, platform="prolific", screen_out_url=SCREEN)
    pass_practice(client, "p-ok")
    _, real, _ = arrive(client, "p-ok", **prolific("p-ok"))
    assert real is not None
    act(admin, "p-ok", "reject")
    again = client.get("/s/demo", query_string=prolific("p-ok"))
    page = again.get_data(as_text=True)
    assert again.status_code == 409 and "/a/" not in again.headers.get("Location", "")
    assert 'id="returned"' in page and "No documents left" in page, page
    assert "Preview: read-only" not in page
