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
from app.db import session_scope
from app.models import Assignment, SegmentTime, Study
from app.quality.pay import time_and_pay
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import export_text
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
    from app.documents.studies import get_study, import_documents
    from app.formats import DocumentInput, GoldSpan
    from tests.helpers import api_add, open_token
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
