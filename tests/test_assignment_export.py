"""The assignment-level export (CSV and JSONL: platform IDs, times, events,
scores, flags, review status, the column registry) and the annotation export's optional
``category_label`` / ``segment_text`` columns, on SQLite and Postgres, through the library,
the admin download and the CLI."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from app.crowd import platforms
from app.db import session_scope
from app.formats import assignment_rows
from app.models import Assignment, SegmentTime, Study, Suggestion, SuggestionEvent
from tests.conftest import BACKENDS, REPO, make_database_url, make_study
from tests.helpers import DOCUMENTS, SEGMENTS, annotation_body, api_add, export_text, open_token

MARGINALIA = str(Path(sys.executable).parent / "marginalia")
PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d", "STUDY_ID": "st77", "SESSION_ID": "sess1"}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def study(app, client):
    """A Prolific worker with measured time and suggestion events, and a generic worker whose
    ID a spreadsheet would run as a formula."""
    make_study(app, documents=DOCUMENTS, suggestions="shown")
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        platforms.configure_study(study, platform="prolific")
        session.add_all(
            Suggestion(
                document_id=study.documents[0].id,
                segment=0,
                start=s,
                end=s + 4,
                text="Anna",
                category="CharE",
                detector="rules",
                detector_version="v1",
            )
            for s in (0, 1, 2)
        )
    answer = client.get("/s/demo", query_string=PROLIFIC)
    token = answer.headers["Location"].split("/a/")[1].split("/")[0]
    assert api_add(client, token, annotation_body(0, "only child", "CharE")).status_code == 201
    with app.app_context(), session_scope() as session:
        aid = session.scalar(select(Assignment.id).where(Assignment.token == token))
        ids = session.scalars(select(Suggestion.id).order_by(Suggestion.id)).all()
        session.add_all(
            [SuggestionEvent(assignment_id=aid, suggestion_id=i, event="shown") for i in ids]
            + [SuggestionEvent(assignment_id=aid, suggestion_id=ids[0], event="accepted")]
            + [SuggestionEvent(assignment_id=aid, suggestion_id=ids[1], event="dismissed")]
            + [
                SegmentTime(assignment_id=aid, segment=0, active_seconds=12.5),
                SegmentTime(assignment_id=aid, segment=1, active_seconds=7.5),
            ]
        )
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    formula = open_token(client, worker="=HYPERLINK(1)", document="doc-2")
    return token, formula


def test_assignments_jsonl_has_every_column_typed(app, client, study):
    token, formula = study
    rows = [json.loads(line) for line in export_text(app, fmt="assignments-jsonl").splitlines()]
    assert [r["assignment"] for r in rows] == [token, formula]
    first = rows[0]
    assert list(first) == list(assignment_rows.columns())
    assert first["prolific_pid"] == "5f1a2b3c4d"
    assert (first["prolific_study_id"], first["prolific_session_id"]) == ("st77", "sess1")
    assert first["mturk_worker_id"] is None
    assert first["status"] == "submitted" and first["submitted_at"] and first["opened_at"]
    assert first["active_seconds"] == 20.0
    assert first["segment_seconds"] == {"0": 12.5, "1": 7.5}
    assert first["segments"] == len(SEGMENTS)
    assert first["annotations"] == 1
    assert (
        first["suggestions_shown"],
        first["suggestions_accepted"],
        first["suggestions_dismissed"],
    ) == (3, 1, 1)
    assert first["speeder"] is False and first["review_status"] is None
    assert first["check_catch_rate"] is None and first["questionnaire"] is None
    second = rows[1]
    assert second["platform"] == "generic" and second["prolific_pid"] is None
    assert second["status"] == "active" and second["active_seconds"] is None


def test_assignments_csv_is_spreadsheet_safe_and_matches(app, client, study):
    token, formula = study
    text = export_text(app, fmt="assignments-csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(assignment_rows.columns())
    assert rows[0]["segment_seconds"] == '{"0":12.5,"1":7.5}'
    assert rows[0]["speeder"] == "false"
    assert rows[1]["worker_id"] == "'=HYPERLINK(1)"


def test_review_status_shows(app, client, study):
    """(Catch rates from real attention checks: tests/test_training.py.)"""
    with app.app_context(), session_scope() as session:
        from app.annotation.reviews import act

        act(session, session.scalar(select(Study)), "5f1a2b3c4d", "approve", "me@x.org")
    rows = [json.loads(x) for x in export_text(app, fmt="assignments-jsonl").splitlines()]
    assert rows[0]["review_status"] == "approved" and rows[1]["review_status"] is None
    assert list(rows[0]) == list(assignment_rows.columns())


def test_annotation_export_optional_columns(app, client, study):
    from app.documents.studies import get_study
    from app.formats import iter_export

    default = export_text(app)
    assert default.splitlines()[0].endswith("completion_code,created_at,paired_end_segment")
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        try:
            text = "".join(
                iter_export(
                    session,
                    get_study(session, "demo"),
                    "csv",
                    extra_columns=("segment_text", "category_label"),
                )
            )
            lines = "".join(
                iter_export(
                    session, get_study(session, "demo"), "jsonl", extra_columns=("category_label",)
                )
            )
            with pytest.raises(Exception, match="unknown export column"):
                study = get_study(session, "demo")
                "".join(iter_export(session, study, "csv", extra_columns=("password",)))
        finally:
            session.close()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0])[-2:] == ["category_label", "segment_text"]  # fixed order
    marked = [r for r in rows if r["span_text"]]
    assert marked[0]["category_label"] == "New character without introduction"
    assert marked[0]["segment_text"] == SEGMENTS[0]
    assert [r for r in rows if not r["span_text"]] == []  # doc-2 is not submitted
    assert (
        json.loads(lines.splitlines()[0])["category_label"] == "New character without introduction"
    )


def test_admin_download_and_cli(app, client, study, database_url, tmp_path):
    from tests.test_worker_management import ADMIN, create_researcher, logged_in

    create_researcher(app, ADMIN, admin=True)
    ada = logged_in(app, ADMIN)
    answer = ada.get("/admin/studies/demo/export.assignments-csv")
    assert answer.status_code == 200 and answer.mimetype == "text/csv"
    assert 'filename="demo.assignments.csv"' in answer.headers["Content-Disposition"]
    assert answer.get_data(as_text=True) == export_text(app, fmt="assignments-csv")
    answer = ada.get("/admin/studies/demo/export.csv?columns=category_label")
    assert answer.get_data(as_text=True).splitlines()[0].endswith(",category_label")
    bad = ada.get("/admin/studies/demo/export.csv?columns=nope")
    assert bad.status_code == 400 and b"unknown export column" in bad.data
    env = {**os.environ, "DATABASE_URL": database_url}
    done = subprocess.run(
        [MARGINALIA, "export", "demo", "--format", "assignments-jsonl"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == export_text(app, fmt="assignments-jsonl")
    done = subprocess.run(
        [MARGINALIA, "export", "demo", "--columns", "segment_text,oops"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: unknown export column 'oops'")
    assert len(done.stderr.strip().splitlines()) == 1
