"""What the researcher sees of sessions, on SQLite and Postgres: the dashboard's time and pay
(median minutes per document and per session, the hourly rate the reward implies;
docs/METRICS.md, "Sessions, time and pay", hand-computed here), the Workers page's sessions
with their states, the assignment export's ``session`` column, and gold F1: one figure, one
value, on the dashboard and the Workers page."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from app.annotation.session_settings import configure_sessions
from app.crowd import platforms
from app.db import session_scope
from app.documents.studies import import_documents
from app.formats import DocumentInput
from app.models import Assignment, Document, SegmentTime, Study
from app.quality.pay import time_and_pay
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import annotation_body, api_add, export_text, open_token
from tests.prolific_standin import ProlificStandIn
from tests.test_prolific_cli import run
from tests.test_sessions import next_document, submit, token_of

TEXTS = ["Anna lives in Paris.", "She has a brother."]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def measured(app, token: str, seconds: tuple[float, float]) -> None:
    """The assignment's active seconds per segment, as the page's reports would store them
    (stored directly: the time budget would scale down a report made at once)."""
    with app.app_context(), session_scope() as session:
        assignment = session.scalar(select(Assignment).where(Assignment.token == token))
        session.query(SegmentTime).filter_by(assignment_id=assignment.id).delete()
        for segment, value in enumerate(seconds):
            session.add(
                SegmentTime(assignment_id=assignment.id, segment=segment, active_seconds=value)
            )


def left(app, token: str) -> None:
    moment = datetime.now(UTC) - timedelta(hours=2)
    with app.app_context(), session_scope() as session:
        session.execute(
            update(Assignment)
            .where(Assignment.token == token)
            .values(last_seen_at=moment, submitted_at=moment)
        )


def run_sessions(app, client) -> dict[str, list[str]]:
    """Two documents per session, reward 1.50 GBP. p1 and p2 finish theirs; p3 submits one
    and leaves. Active seconds per document (segments summed): p1 60 and 120, p2 300 and 120,
    p3 60."""
    make_study(app, documents=[(f"doc-{n}", TEXTS) for n in (1, 2, 3)], suggestions="off")
    with app.app_context(), session_scope() as session:
        configure_sessions(session.scalar(select(Study)), documents=2, reward="1.50")
    times = {"p1": [(20, 40), (30, 90)], "p2": [(100, 200), (60, 60)], "p3": [(50, 10)]}
    tokens: dict[str, list[str]] = {}
    for worker, documents in times.items():
        token = token_of(client.get("/s/demo", query_string={"worker_id": worker}))
        tokens[worker] = [token]
        for number, seconds in enumerate(documents):
            submit(client, tokens[worker][-1])
            measured(app, tokens[worker][-1], seconds)
            if number + 1 < len(documents):
                tokens[worker].append(next_document(client, tokens[worker][-1]))
    left(app, tokens["p3"][0])
    return tokens


def test_time_and_pay_by_hand(app, client):
    """Per document: 60, 120, 300, 120, 60 s → sorted 60, 60, 120, 120, 300 → median 120 s =
    2.00 minutes. Per finished session (p3's is returned, not finished): p1 60 + 120 = 180 s,
    p2 300 + 120 = 420 s → median 300 s = 5.00 minutes. Rate: 1.50 / (300 / 3600 h) = 18.00
    an hour."""
    run_sessions(app, client)
    with app.app_context(), session_scope() as session:
        figures = time_and_pay(session, session.scalar(select(Study)))
    assert figures == {
        "documents_per_session": 2,
        "documents": 5,
        "median_minutes_per_document": 2.0,
        "sessions": 2,
        "median_minutes_per_session": 5.0,
        "reward": "1.50",
        "currency": "GBP",
        "hourly_rate": "18.00",
    }


def test_the_researcher_sees_sessions_pay_and_one_gold_f1(app, client, admin):
    tokens = run_sessions(app, admin)
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    pay = page[page.index('id="pay"') :]
    assert re.search(r'id="minutes-per-document">2\.00<', pay)
    assert re.search(r'id="minutes-per-session">5\.00<', pay)
    assert re.search(r'id="hourly-rate">18\.00 GBP<', pay)
    workers = admin.get("/admin/studies/demo/workers").get_data(as_text=True)
    states = dict(
        re.findall(
            r'<tr data-session="\d+" data-session-worker="(\w+)" data-session-state="(\w+)"',
            workers,
        )
    )
    assert states == {"p1": "finished", "p2": "finished", "p3": "returned"}
    counts = re.search(r'id="session-states">(.*?)</p>', workers, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", counts) == (
        "started (0) · finished (2) · returned (1) · screened out (0)"
    )
    rows = [json.loads(line) for line in export_text(app, fmt="assignments-jsonl").splitlines()]
    sessions = {row["assignment"]: row["session"] for row in rows}
    assert sessions[tokens["p1"][0]] == sessions[tokens["p1"][1]] != sessions[tokens["p2"][0]]
    assert all(isinstance(value, int) for value in sessions.values())
    assert export_text(app, fmt="assignments-csv").splitlines()[0].endswith(",expected_f1,session")


@pytest.fixture
def admin(app, client):
    from app.researchers.accounts import create_researcher
    from tests.test_admin import EMAIL, PASSWORD, login

    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    login(client)
    return client


def test_gold_f1_is_one_value_on_the_dashboard_and_the_workers_page(app, client, admin):
    """By hand (the example of tests/test_shown_right.py): gold CharE "the wrong man" and GramE
    "goed"; w1 marks CharE "the wrong man" (P 1, R 1/2, F1 0.67); w2 CharE "wrong man" (a
    match) and RefE "Tom" (P 1/2, R 1/2, F1 0.50). The dashboard's gold F1 and the Workers
    page's best gold F1 show the same value for each (one graded document each)."""
    from app.documents.studies import get_study
    from app.formats import GoldSpan
    from tests.test_training import TEST, span

    make_study(app, documents=[("doc-1", ["A real text."])], annotators_per_doc=2)
    gold = [GoldSpan(0, "the wrong man", "CharE", 1), GoldSpan(1, "goed", "GramE", 1)]
    with app.app_context(), session_scope() as session:
        study = get_study(session, "demo")
        import_documents(session, study, [DocumentInput("g-1", TEST, gold=gold)], gold=True)
    marks = {
        "w1": [span(0, "the wrong man", "CharE", TEST)],
        "w2": [span(0, "wrong man", "CharE", TEST), span(0, "Tom", "RefE", TEST)],
    }
    for worker, bodies in marks.items():
        token = open_token(admin, worker=worker, document="g-1")
        for body in bodies:
            assert api_add(admin, token, body).status_code == 201
        assert admin.post(f"/api/assignments/{token}/submit").status_code == 200
    dashboard = admin.get("/admin/studies/demo").get_data(as_text=True)
    workers = admin.get("/admin/studies/demo/workers").get_data(as_text=True)
    for worker, shown in (("w1", "0.67"), ("w2", "0.50")):
        row = re.search(rf'<tr data-worker="{worker}".*?</tr>', dashboard, re.S).group(0)
        gold_cell = re.search(r'class="num gold-prf">.*?<strong>([^<]+)</strong>', row, re.S)
        assert gold_cell.group(1) == shown, row
        row = re.search(rf'<tr data-worker="{worker}".*?</tr>', workers, re.S).group(0)
        assert f'<td class="num best-gold-f1">{shown}</td>' in row, row


# --- a study with a training phase: its documents are neither paid time nor bonused ----------


def training_sessions(app, client) -> dict[str, list[str]]:
    """A Prolific study with a training phase (``practice-1`` teaches; ``test-1``/``test-2``
    grade, pass mark F1 0.6; tests/test_training.py) and three real documents of two segments,
    two workers each; sessions of two real documents, reward 1.50 GBP. Each worker arrives,
    submits the practice untouched, passes the qualification (p1 and p3 mark both errors of
    the key: F1 1; p2 only CharE "the wrong man": P 1, R 1/2, F1 2/3), then does real
    documents: p1 and p2 two (their sessions finish), p3 one. Active seconds per assignment
    (segments summed), in the order done: p1 practice 600, qualification 240, real 60 and
    120; p2 practice 900, qualification 300, real 300 and 120; p3 practice 420,
    qualification 180, real 60. Each worker's tokens in that order."""
    from tests.test_sessions import prolific
    from tests.test_training import TEST, TEST_KEY, span, training_study

    training_study(app, attempts=2, platform="prolific")
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.annotators_per_doc = 2
        import_documents(session, study, [DocumentInput(f"real-{n}", TEXTS) for n in (2, 3)])
        configure_sessions(study, documents=2, reward="1.50")
    times = {
        "p1": [(300, 300), (100, 140), (20, 40), (30, 90)],
        "p2": [(450, 450), (150, 150), (100, 200), (60, 60)],
        "p3": [(200, 220), (90, 90), (50, 10)],
    }
    keys = {"p1": TEST_KEY, "p2": TEST_KEY[:1], "p3": TEST_KEY}
    tokens: dict[str, list[str]] = {}
    for worker, documents in times.items():
        tokens[worker] = [token_of(client.get("/s/demo", query_string=prolific(worker)))]
        for number, seconds in enumerate(documents):
            token = tokens[worker][-1]
            if number == 1:  # the qualification document
                for segment, text, category in keys[worker]:
                    body = span(segment, text, category, texts=TEST)
                    assert api_add(client, token, body).status_code == 201
            submit(client, token)
            measured(app, token, seconds)
            if number + 1 < len(documents):
                tokens[worker].append(next_document(client, token))
    with app.app_context(), session_scope() as session:
        roles = session.execute(
            select(Assignment.worker_id, Document.external_id, Assignment.status)
            .join(Document, Document.id == Assignment.document_id)
            .order_by(Assignment.id)
        ).all()
    training = [(w, d[:5], s) for w, d, s in roles if not d.startswith(("doc-", "real-"))]
    assert training == [
        (w, d, "submitted") for w in ("p1", "p2", "p3") for d in ("pract", "test-")
    ], roles  # each worker did the practice and passed one qualification document
    return tokens


def test_time_and_pay_leave_the_training_phase_out_of_the_documents(app, client, admin):
    """Per real document (training documents left out): 60, 120, 300, 120, 60 s → sorted 60,
    60, 120, 120, 300 → median 120 s = 2.00 minutes (counted with the eleven training and
    real ones it would be 240 s = 4.00). Per finished session, the training phase included
    (the participant spent that time in it; p3's session is not finished): p1 600 + 240 + 60
    + 120 = 1,020 s, p2 900 + 300 + 300 + 120 = 1,620 s → median 1,320 s = 22.00 minutes.
    Rate: 1.50 / (1,320 / 3,600 h) = 4.0909… → 4.09 GBP an hour."""
    training_sessions(app, admin)
    with app.app_context(), session_scope() as session:
        figures = time_and_pay(session, session.scalar(select(Study)))
    assert figures == {
        "documents_per_session": 2,
        "documents": 5,
        "median_minutes_per_document": 2.0,
        "sessions": 2,
        "median_minutes_per_session": 22.0,
        "reward": "1.50",
        "currency": "GBP",
        "hourly_rate": "4.09",
    }
    pay = admin.get("/admin/studies/demo").get_data(as_text=True)
    pay = pay[pay.index('id="pay"') :]
    assert re.search(r'id="minutes-per-document">2\.00<', pay)
    assert re.search(r'id="minutes-per-session">22\.00<', pay)
    assert re.search(r'id="hourly-rate">4\.09 GBP<', pay)


def test_gold_f1_bonuses_pay_no_training_document(app, client, database_url):
    """By gold F1, 0.30 per document: the real documents carry no gold (with a pass mark every
    gold document is a training one), so nothing is paid; the qualification documents' F1 (p1
    1, p2 2/3, p3 1) would pay 0.30, 0.20 and 0.30 if they counted."""
    training_sessions(app, client)
    args = ("bonus", "demo", "--per-document", "0.30", "--by", "gold-f1")
    with ProlificStandIn() as standin:
        shown = run(database_url, standin, *args)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["no bonus to pay: no document with a figure above 0"]
    assert standin.requests == []


def test_expected_f1_bonuses_pay_the_real_documents_only(app, client, database_url):
    """The five-sentence case (tests/test_consensus_cli.py) behind a training phase: each of
    a, b, c, *every* and *none* first submits the practice and passes a qualification
    document (both errors of the key), then does the real document ``d``. The worker models
    are the real work's: expected F1 1 for a, b and c, 4/7 for *every*, 0 for *none*. 0.20
    per real document (one each): a, b, c 0.20, *every* 0.20 × 4/7 = 0.114… → 0.11, *none*
    nothing (left out); total 0.71. Were the two training documents counted, each worker
    would have three (a 0.60, *every* 0.34: total 2.14)."""
    from app.quality import figure_jobs, figures
    from tests.test_consensus_cli import SENTENCES, TEXT
    from tests.test_training import TEST, TEST_KEY, arrive, span, training_study

    training_study(app, attempts=1)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.annotators_per_doc = 5
        import_documents(session, study, [DocumentInput("d", [TEXT])])
    for worker, marked in (("a", 2), ("b", 2), ("c", 2), ("every", 5), ("none", 0)):
        _, practice, _ = arrive(client, worker)
        assert client.post(f"/api/assignments/{practice}/submit").status_code == 200
        _, qualifying, _ = arrive(client, worker)
        for segment, text, category in TEST_KEY:
            body = span(segment, text, category, TEST)
            assert api_add(client, qualifying, body).status_code == 201
        assert client.post(f"/api/assignments/{qualifying}/submit").status_code == 200
        token = open_token(client, worker=worker, document="d")
        for sentence in SENTENCES[:marked]:
            body = annotation_body(0, sentence, "CharE", texts=[TEXT])
            assert api_add(client, token, body).status_code == 201
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    app.config["FIGURES_GAMMA_SECONDS"] = 0
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        platforms.configure_study(study, platform="prolific")
        figures.enqueue(session, study, False)
        session.execute(
            update(Assignment).values(platform="prolific", platform_data={"study_id": "st5"})
        )
    with app.app_context(), session_scope() as session:
        assert figure_jobs.run_next(session, "test")
    args = ("bonus", "demo", "--per-document", "0.20", "--by", "expected-f1")
    with ProlificStandIn() as standin:
        shown = run(database_url, standin, *args)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "a: 1 document (expected-f1 1.00) -> 0.20",
        "b: 1 document (expected-f1 1.00) -> 0.20",
        "c: 1 document (expected-f1 1.00) -> 0.20",
        "every: 1 document (expected-f1 0.57) -> 0.11",
        "total 0.71 in the study's currency",
        "to pay it, run again with --confirm 0.71",
    ]
    assert standin.requests == []
