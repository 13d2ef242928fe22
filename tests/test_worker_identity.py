"""Issue #10, worker side: a token is a capability, one assignment policy for every way in,
slots are not hoarded, paired spans are strictly earlier, token answers are not cached.

Each test reproduces an attack that worked before the fix (SQLite and Postgres)."""

from __future__ import annotations

import re
import threading

import pytest

from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, api_add, count_rows, db_snapshot, span


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def arrive(client, worker: str | None = None, slug: str = "demo", ip: str = "10.0.0.1", **extra):
    """GET /s/<slug> as ``worker`` from client address ``ip``; (answer, token or None)."""
    params = dict(extra)
    if worker is not None:
        params["worker_id"] = worker
    answer = client.get(f"/s/{slug}", query_string=params, environ_base={"REMOTE_ADDR": ip})
    location = answer.headers.get("Location", "")
    token = location.split("/a/")[1].split("/")[0].split("#")[0] if "/a/" in location else None
    return answer, token


# --- row 14: a paired span must be strictly earlier ------------------------------------------


def test_paired_span_equal_to_or_overlapping_the_annotated_span_is_refused(app, client):
    from app.models import Annotation

    make_study(app, documents=DOCUMENTS)
    _, token = arrive(client, "w1")
    before = db_snapshot(app)
    same = span(2, "Anna is an only child")
    equal = api_add(client, token, annotation_body(2, "Anna is an only child", "RepE", paired=same))
    assert equal.status_code == 400, equal.get_json()
    assert "before" in equal.get_json()["error"]
    # same start, ending after the annotated span ("Anna" annotated, paired "Anna is ...")
    longer = api_add(client, token, annotation_body(2, "Anna", "RepE", paired=same))
    assert longer.status_code == 400
    # starting earlier but overlapping the annotated span
    overlapping = {
        "segment": 2,
        "start": same["start"] - 3,
        "end": same["start"] + 4,
        "text": "",
    }
    from tests.helpers import SEGMENTS

    overlapping["text"] = SEGMENTS[2][overlapping["start"] : overlapping["end"]]
    cut = api_add(
        client, token, annotation_body(2, "Anna is an only child", "RepE", paired=overlapping)
    )
    assert cut.status_code == 400
    assert db_snapshot(app) == before
    # ending exactly where the annotated span starts is earlier, and accepted
    touching = span(2, "aside. ")
    ok = api_add(
        client, token, annotation_body(2, "Anna is an only child", "RepE", paired=touching)
    )
    assert ok.status_code == 201, ok.get_json()
    assert count_rows(app, Annotation) == 1


# --- row 15: token-bearing answers are not cached --------------------------------------------


def test_token_bearing_answers_are_not_stored_by_caches(app, client):
    make_study(app, documents=DOCUMENTS)
    answer, token = arrive(client, "w1")
    assert token
    token_answers = [
        answer,
        client.get(f"/a/{token}"),
        client.get(f"/api/assignments/{token}"),
        client.post(f"/api/assignments/{token}/position", json={"segment": 1}),
        client.post(f"/api/assignments/{token}/submit"),
        client.get(f"/a/{token}/done"),
        client.post("/api/assignments", json={"study": "demo", "worker_id": "w2"}),
    ]
    for response in token_answers:
        assert "no-store" in response.headers.get("Cache-Control", ""), response.request.path
        assert response.headers["Referrer-Policy"] in ("same-origin", "no-referrer")


# --- row 1: a worker ID is not a capability --------------------------------------------------


def _assignments(app) -> list[tuple[str, str, str]]:
    """(worker, document, status) of every assignment, in id order."""
    from sqlalchemy import select

    from app.db import session_scope
    from app.models import Assignment

    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(Assignment).order_by(Assignment.id))
        return [(a.worker_id, a.document.external_id, a.status) for a in rows]


def _age(app, token: str, minutes: float, *, engaged: bool = True) -> None:
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import update

    from app.db import session_scope
    from app.models import Assignment

    moment = datetime.now(UTC) - timedelta(minutes=minutes)
    with app.app_context(), session_scope() as session:
        session.execute(
            update(Assignment)
            .where(Assignment.token == token)
            .values(last_seen_at=moment, engaged_at=moment if engaged else None)
        )


def test_knowing_a_worker_id_does_not_hand_over_their_work(app):
    make_study(app, documents=DOCUMENTS)
    victim, attacker = app.test_client(), app.test_client()
    _, token = arrive(victim, "victim", ip="10.0.0.1")
    note = annotation_body(0, "Zoë", "CharE", comment="my private note")
    note_id = api_add(victim, token, note).get_json()["id"]
    before = db_snapshot(app)

    # the study link with the victim's ID: a clear page, not the victim's work
    page, stolen = arrive(attacker, "victim", ip="10.6.6.6")
    assert page.status_code == 409 and stolen is None
    text = page.get_data(as_text=True)
    assert "already has work in progress in another browser" in text
    assert token not in text and "my private note" not in text
    # the API without a key, with or without the document
    for body in ({"worker_id": "victim"}, {"worker_id": "victim", "document": "doc-1"}):
        answer = attacker.post("/api/assignments", json={"study": "demo", **body})
        assert answer.status_code == 409 and "token" not in answer.get_json()
        assert token not in answer.get_data(as_text=True)
    # presenting some other token as proof does not work either
    _, own = arrive(attacker, "attacker", ip="10.6.6.6")
    assert arrive(attacker, "victim", ip="10.6.6.6", resume=own)[0].status_code == 409
    snapshot = db_snapshot(app)
    snapshot["assignments"] = [row for row in snapshot["assignments"] if own not in row]
    snapshot["work_sessions"] = [r for r in snapshot["work_sessions"] if "attacker" not in r]
    assert snapshot == before

    # the victim's own browser still resumes (it presents the token it kept)
    assert arrive(victim, "victim", ip="10.0.0.1", resume=token)[1] == token
    # after the victim submits, their ID gets new work at most, never their done page
    code = victim.post(f"/api/assignments/{token}/submit").get_json()["completion_code"]
    later, other = arrive(attacker, "victim", ip="10.6.6.6")
    assert other != token and code not in later.get_data(as_text=True)
    payload = victim.get(f"/api/assignments/{token}").get_json()
    assert [a["id"] for a in payload["annotations"]] == [note_id]


def test_an_abandoned_assignment_is_not_reopened_for_a_worker_id_alone(app):
    make_study(app, documents=DOCUMENTS)
    victim, attacker = app.test_client(), app.test_client()
    _, token = arrive(victim, "victim")
    api_add(victim, token, annotation_body(0, "Zoë", "CharE", comment="private"))
    _age(app, token, 120)
    _, taken = arrive(attacker, "victim", ip="10.6.6.6")
    assert taken != token  # new work under the policy, not the victim's old assignment
    assert "private" not in attacker.get(f"/api/assignments/{taken}").get_data(as_text=True)
    # the browser that kept the token gets it back (its document has a free slot)
    victim.post(f"/api/assignments/{taken}/submit")
    assert arrive(victim, "victim", resume=token)[1] == token


PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d", "STUDY_ID": "st-77", "SESSION_ID": "sess-1"}


def test_prolific_pid_without_its_session_id_does_not_resume(app):
    make_study(app, documents=DOCUMENTS)
    victim, attacker = app.test_client(), app.test_client()
    _, token = arrive(victim, **PROLIFIC)
    for params in (
        {"PROLIFIC_PID": PROLIFIC["PROLIFIC_PID"]},
        {**PROLIFIC, "SESSION_ID": "made-up"},
    ):
        answer, stolen = arrive(attacker, ip="10.6.6.6", **params)
        assert answer.status_code == 409 and stolen is None
        assert token not in answer.get_data(as_text=True)
    # the same Prolific session resumes from any browser
    assert arrive(attacker, ip="10.6.6.6", **PROLIFIC)[1] == token
    assert len(_assignments(app)) == 1


def test_mturk_worker_id_with_a_made_up_assignment_id_does_not_resume(app):
    from sqlalchemy import select

    from app.crowd import platforms
    from app.db import session_scope
    from app.models import Study

    make_study(app, documents=DOCUMENTS)
    with app.app_context(), session_scope() as session:
        platforms.configure_study(session.scalar(select(Study)), platform="mturk")
    accepted = {
        "assignmentId": "ASG-1",
        "hitId": "HIT-1",
        "workerId": "A2WORKER",
        "turkSubmitTo": "https://workersandbox.mturk.com",
    }
    _, token = arrive(app.test_client(), **accepted)
    answer, stolen = arrive(app.test_client(), ip="10.6.6.6", **{**accepted, "assignmentId": "X"})
    assert answer.status_code == 409 and stolen is None
    assert arrive(app.test_client(), ip="10.6.6.7", **accepted)[1] == token


# --- row 2: one assignment policy for every way in -------------------------------------------


def test_document_parameter_is_a_researchers_read_only_preview(app, client):
    from app.db import session_scope
    from app.researchers.accounts import create_researcher

    make_study(app, documents=DOCUMENTS, annotators_per_doc=1)
    arrive(client, "w1")  # doc-1 now has its one annotator
    before = db_snapshot(app)
    answer, token = arrive(client, "w2", document="doc-1")
    assert answer.status_code == 403 and token is None
    assert "log in" in answer.get_data(as_text=True)
    assert db_snapshot(app) == before
    with app.app_context(), session_scope() as session:
        create_researcher(session, "outsider@example.org", "a long enough password")
        create_researcher(session, "preview@example.org", "a long enough password", role="admin")

    def log_in(browser, email: str) -> None:
        form = browser.get("/admin/login").get_data(as_text=True)
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
        credentials = {"email": email, "password": "a long enough password"}
        answer = browser.post("/admin/login", data={**credentials, "csrf_token": csrf})
        assert answer.status_code == 302

    # a researcher without access to the study sees no more than a worker does
    outsider = app.test_client()
    log_in(outsider, "outsider@example.org")
    before = db_snapshot(app)
    refused, token = arrive(outsider, "w2", document="doc-1")
    assert refused.status_code == 403 and token is None
    assert "Zoë" not in refused.get_data(as_text=True)
    assert db_snapshot(app) == before
    log_in(client, "preview@example.org")  # an admin: the study has no owner
    before = db_snapshot(app)
    preview, token = arrive(client, "w2", document="doc-1")
    assert preview.status_code == 200 and token is None
    text = preview.get_data(as_text=True)
    assert "Researcher preview" in text and "Zoë&#39;s old flat" in text
    assert db_snapshot(app) == before
    assert arrive(client, document="doc-9")[0].status_code == 404


def test_the_api_without_a_key_keeps_the_per_document_limit_and_draws_the_condition(app, client):
    from sqlalchemy import select

    from app.crowd import platforms
    from app.db import session_scope
    from app.models import Assignment, Study

    make_study(app, documents=DOCUMENTS, annotators_per_doc=1)
    with app.app_context(), session_scope() as session:
        platforms.configure_study(session.scalar(select(Study)), randomise_conditions=True)
    first = client.post(
        "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": "w1"}
    )
    assert first.status_code == 201
    heartbeat = f"/api/assignments/{first.get_json()['token']}/heartbeat"
    assert client.post(heartbeat, json={}).status_code == 204  # w1's page is open: engaged
    before = db_snapshot(app)
    over = client.post(
        "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": "w2"}
    )
    assert over.status_code == 409 and "all the annotators" in over.get_json()["error"]
    assert db_snapshot(app) == before
    chosen = client.post("/api/assignments", json={"study": "demo", "worker_id": "w2"})
    assert chosen.status_code == 201
    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(Assignment).order_by(Assignment.id)).all()
        assert [r.document.external_id for r in rows] == ["doc-1", "doc-2"]
        assert all(r.condition in ("assisted", "unassisted") for r in rows)


def test_the_api_without_a_key_keeps_the_qualification(app, client):
    from sqlalchemy import select

    from app.crowd import platforms
    from app.db import session_scope
    from app.formats import DocumentInput, GoldSpan
    from app.models import Study

    make_study(app, documents=DOCUMENTS)
    gold = DocumentInput(
        "gold-1",
        ["Anna is an only child."],
        gold=[GoldSpan(segment=0, text="Anna", category="CharE", votes=1)],
    )
    with app.app_context(), session_scope() as session:
        from app.documents.studies import import_documents

        study = session.scalar(select(Study))
        import_documents(session, study, [gold], gold=True)
        platforms.configure_study(study, qualification_f1=0.5)
    before = db_snapshot(app)
    body = {"study": "demo", "document": "doc-1", "worker_id": "unqualified"}
    refused = client.post("/api/assignments", json=body)
    assert refused.status_code == 409 and "qualification" in refused.get_json()["error"]
    assert db_snapshot(app) == before
    practice = client.post("/api/assignments", json={"study": "demo", "worker_id": "unqualified"})
    assert practice.status_code == 201
    assert _assignments(app) == [("unqualified", "gold-1", "active")]


# --- row 3: slots are not hoarded ---------------------------------------------------------------

SMALL = [(f"doc-{i}", [f"Document {i}, first segment.", "Second segment."]) for i in range(3)]


def test_fifty_made_up_arrivals_do_not_keep_a_real_worker_out(app):
    make_study(app, documents=SMALL, annotators_per_doc=3)
    for i in range(50):  # from 50 addresses: the per-client limit does not stop this
        arrive(app.test_client(), f"fake-{i}", ip=f"10.1.{i // 200}.{i % 200}")
    real = app.test_client()
    answer, token = arrive(real, "real-worker", ip="192.0.2.7")
    assert answer.status_code == 302 and token
    # the page loads and says the worker is there: the slot is now theirs
    assert real.post(f"/api/assignments/{token}/heartbeat", json={}).status_code == 204
    for i in range(50, 100):
        arrive(app.test_client(), f"fake-{i}", ip=f"10.2.{i // 200}.{i % 200}")
    assert real.get(f"/api/assignments/{token}").get_json()["status"] == "active"
    assert (
        api_add(
            real, token, annotation_body(0, "first", "CharE", texts=[s for s in SMALL[0][1]])
        ).status_code
        == 201
    )
    taken = [row for row in _assignments(app) if row[2] == "active"]
    assert len(taken) == 9  # never more than 3 per document


def test_arrivals_are_rate_limited_per_client(app):
    make_study(app, documents=SMALL, annotators_per_doc=100)
    client = app.test_client()
    statuses = [arrive(client, f"w{i}", ip="10.9.9.9")[0].status_code for i in range(31)]
    assert statuses[:30] == [302] * 30 and statuses[30] == 429
    api = client.post(
        "/api/assignments",
        json={"study": "demo", "worker_id": "x"},
        environ_base={"REMOTE_ADDR": "10.9.9.9"},
    )
    assert api.status_code == 429 and api.get_json()["error"]
    assert arrive(app.test_client(), "elsewhere", ip="10.9.9.10")[0].status_code == 302
    assert len(_assignments(app)) == 31


def test_an_unengaged_hold_lapses_after_minutes_an_engaged_slot_after_the_abandon_timeout(app):
    make_study(app, documents=SMALL[:1], annotators_per_doc=1)
    idle, busy = app.test_client(), app.test_client()
    _, held = arrive(idle, "idle")
    _age(app, held, 6, engaged=False)
    _, token = arrive(busy, "busy", ip="10.0.0.2")
    assert token and _assignments(app)[0][2] == "abandoned"
    assert busy.post(f"/api/assignments/{token}/heartbeat", json={}).status_code == 204
    _age(app, token, 30)
    assert arrive(app.test_client(), "late", ip="10.0.0.3")[0].status_code == 409
    _age(app, token, 46)
    assert arrive(app.test_client(), "late", ip="10.0.0.3")[0].status_code == 302


def test_a_heartbeat_needs_a_json_body(app, client):
    """A cross-site form (or an <img>) cannot keep a slot: only the page's JSON request can."""
    make_study(app, documents=SMALL[:1], annotators_per_doc=1)
    _, token = arrive(client, "w1")
    form = client.post(f"/api/assignments/{token}/heartbeat", data="{}", content_type="text/plain")
    assert form.status_code == 400
    # still unengaged: the next arrival takes the slot over
    _, other = arrive(app.test_client(), "w2", ip="10.0.0.2")
    assert other and _assignments(app)[0][2] == "abandoned"


def test_racing_arrivals_never_put_more_than_n_on_a_document(app):
    """Takeovers of unengaged holds keep the limit under concurrency (SQLite and Postgres)."""
    make_study(app, documents=SMALL[:2], annotators_per_doc=2)
    answers = _race(app, 10, lambda c: arrive(c, f"racer-{id(c)}", ip=f"10.3.0.{id(c) % 250}"))
    assert all(answer.status_code in (302, 409) for answer, _ in answers)
    active = [row for row in _assignments(app) if row[2] == "active"]
    per_document = {doc: sum(1 for row in active if row[1] == doc) for doc in ("doc-0", "doc-1")}
    assert per_document == {"doc-0": 2, "doc-1": 2}


def test_a_worker_whose_browser_is_gone_gets_new_work_after_the_timeout(app):
    """Without the kept token a worker ID waits out the abandon timeout, then starts afresh."""
    make_study(app, documents=DOCUMENTS)
    _, token = arrive(app.test_client(), "w1")
    api_add(app.test_client(), token, annotation_body(0, "Zoë", "CharE"))
    new_browser = app.test_client()
    assert arrive(new_browser, "w1")[0].status_code == 409
    _age(app, token, 46)
    answer, fresh = arrive(new_browser, "w1")
    assert answer.status_code == 302 and fresh not in (None, token)
    assert [row[2] for row in _assignments(app)] == ["abandoned", "active"]


def _race(app, count: int, send) -> list:
    """Run ``send(client)`` from ``count`` threads at once, each with its own client."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def worker(i: int) -> None:
        client = app.test_client()
        barrier.wait()
        results[i] = send(client)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results
