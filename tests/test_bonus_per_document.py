"""``marginalia prolific bonus --per-document RATE --by gold-f1|expected-f1`` against the
Prolific stand-in (tests/prolific_standin.py), on SQLite and Postgres: the bonuses are
printed first and nothing is sent; only a run with ``--confirm TOTAL`` naming that total
pays (one bulk bonus per Prolific study); a stale total pays nothing. Amounts by hand."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from app.crowd import platforms
from app.db import session_scope
from app.documents.studies import get_study, import_documents
from app.formats import DocumentInput, GoldSpan
from app.models import Assignment, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.prolific_standin import ProlificStandIn
from tests.test_prolific_cli import run
from tests.test_training import TEST, span


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def gold_study(app, client) -> None:
    """One gold document (CharE "the wrong man", GramE "goed") and one without gold; p1 marks
    CharE "the wrong man" on the gold one (F1 2/3), p2 both gold errors (F1 1); each also does
    the other document (no gold: it pays nothing by gold F1)."""
    make_study(app, documents=[("plain", ["A text without gold."])], annotators_per_doc=2)
    gold = [GoldSpan(0, "the wrong man", "CharE", 1), GoldSpan(1, "goed", "GramE", 1)]
    with app.app_context(), session_scope() as session:
        study = get_study(session, "demo")
        import_documents(session, study, [DocumentInput("g1", TEST, gold=gold)], gold=True)
        platforms.configure_study(study, platform="prolific")
    marks = {
        "p1": [span(0, "the wrong man", "CharE", TEST)],
        "p2": [span(0, "the wrong man", "CharE", TEST), span(1, "goed", "GramE", TEST)],
    }
    for worker, bodies in marks.items():
        for document in ("g1", "plain"):
            body = {"study": "demo", "worker_id": worker, "document": document}
            token = client.post("/api/assignments", json=body).get_json()["token"]
            for mark in bodies if document == "g1" else []:
                answer = client.post(f"/api/assignments/{token}/annotations", json=mark)
                assert answer.status_code == 201
            assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        session.execute(
            update(Assignment).values(
                platform="prolific", platform_data={"study_id": "st9", "session_id": "se9"}
            )
        )


def test_bonus_per_document_from_gold_f1_prints_first_and_pays_the_confirmed_total(
    app, client, database_url
):
    """0.30 per document times gold F1: p1 0.30 × 2/3 = 0.20, p2 0.30 × 1 = 0.30; total 0.50."""
    gold_study(app, client)
    args = ("bonus", "demo", "--per-document", "0.30", "--by", "gold-f1")
    with ProlificStandIn() as standin:
        shown = run(database_url, standin, *args)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines() == [
            "p1: 2 documents (gold-f1 0.67 –) -> 0.20",
            "p2: 2 documents (gold-f1 1.00 –) -> 0.30",
            "total 0.50 in the study's currency",
            "to pay it, run again with --confirm 0.50",
        ]
        stale = run(database_url, standin, *args, "--confirm", "0.40")
        assert stale.returncode == 1 and "the total is now 0.50, not 0.40" in stale.stderr
        assert standin.requests == []  # nothing sent before the confirmed run
        paid = run(database_url, standin, *args, "--confirm", "0.50")
    assert paid.returncode == 0, paid.stderr
    assert standin.problems == []
    assert standin.requests == [
        {
            "path": "/api/v1/submissions/bonus-payments/",
            "body": {"study_id": "st9", "csv_bonuses": "p1,0.20\np2,0.30\n"},
        },
        {"path": "/api/v1/bulk-bonus-payments/bulk1/pay/", "body": {}},
    ]


def test_bonus_per_document_from_expected_f1(app, client, database_url):
    """The five-sentence case (tests/test_consensus_cli.py): expected F1 1 for a, b and c,
    4/7 for *every*, 0 for *none*. 0.20 per document (one each): a, b, c 0.20, every 0.20 ×
    4/7 = 0.11 (to the cent), none nothing (left out); total 0.71."""
    from tests.test_consensus_cli import five_sentences

    five_sentences(app, client)
    with app.app_context(), session_scope() as session:
        platforms.configure_study(session.scalar(select(Study)), platform="prolific")
        session.execute(
            update(Assignment).values(platform="prolific", platform_data={"study_id": "st5"})
        )
    args = ("bonus", "demo", "--per-document", "0.20", "--by", "expected-f1")
    with ProlificStandIn() as standin:
        shown = run(database_url, standin, *args, "--dry-run")
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert lines[:4] == [
            "a: 1 document (expected-f1 1.00) -> 0.20",
            "b: 1 document (expected-f1 1.00) -> 0.20",
            "c: 1 document (expected-f1 1.00) -> 0.20",
            "every: 1 document (expected-f1 0.57) -> 0.11",
        ]
        assert "total 0.71 in the study's currency" in lines
        assert lines[-1] == "would pay 4 bonuses of 0.71 in all in Prolific study st5"
        assert standin.requests == []
        paid = run(database_url, standin, *args, "--confirm", "0.71")
    assert paid.returncode == 0, paid.stderr
    assert standin.requests[0]["body"] == {
        "study_id": "st5",
        "csv_bonuses": "a,0.20\nb,0.20\nc,0.20\nevery,0.11\n",
    }


def test_bonus_needs_one_way_to_count(app, client, database_url):
    gold_study(app, client)
    both = run(database_url, None, "bonus", "demo", "--amount", "1", "--per-document", "0.1")
    assert both.returncode == 1 and "--amount" in both.stderr
    no_figure = run(database_url, None, "bonus", "demo", "--per-document", "0.1")
    assert no_figure.returncode == 1 and "--by" in no_figure.stderr
