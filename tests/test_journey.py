"""The worker's way around the documents: a paused or closed study, no documents
left, consent, questionnaires; and the lifecycle rules behind them (SQLite and Postgres)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.documents import journey, lifecycle
from app.documents.questionnaires import consent_hash, parse_questionnaire
from app.documents.taxonomy import TaxonomyError
from app.errors import Conflict, InvalidInput
from app.models import Annotation, Assignment, Consent, Document, QuestionnaireAnswer, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import annotation_body, export_text

QUESTIONNAIRE = """\
consent: |
  **Please read.** You will mark errors. <script>alert(1)</script>
after_document:
  - id: difficulty
    type: likert
    prompt: The text was easy to follow.
    scale: 5
    low: Strongly disagree
    high: Strongly agree
  - id: genre
    type: choice
    prompt: What kind of text was it?
    options: [story, summary, other]
    required: false
after_study:
  - id: feedback
    type: text
    prompt: Anything we should know?
    required: false
    max_chars: 50
"""
PROLIFIC = {"PROLIFIC_PID": "p1", "STUDY_ID": "s1", "SESSION_ID": "sess-1"}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def _study(app, **settings):
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "demo"))
        for key, value in settings.items():
            if key == "questionnaire":
                journey.set_definition(study, value, "q.yaml")
            elif key == "status":
                study.status = value
            elif key == "platform":
                study.platform = value
            else:
                study.settings = {**(study.settings or {}), key: value}


def _token(answer) -> str | None:
    location = answer.headers.get("Location", "")
    return location.split("/a/")[1].split("/")[0] if "/a/" in location else None


def test_paused_study_turns_new_arrivals_away_but_lets_started_work_finish(app, client):
    make_study(app)
    first = client.get("/s/demo", query_string=PROLIFIC)
    token = _token(first)
    assert token
    _study(app, status="paused", return_codes={"unavailable": "PAUSED1"})

    arrival = client.get(
        "/s/demo", query_string={**PROLIFIC, "PROLIFIC_PID": "p2", "SESSION_ID": "sess-2"}
    )
    page = arrival.get_data(as_text=True)
    assert arrival.status_code == 200 and "paused" in page
    assert "https://app.prolific.com/submissions/complete?cc=PAUSED1" in page
    assert client.get("/s/demo").status_code == 200  # the ID form is not offered
    assert "Worker ID" not in client.get("/s/demo").get_data(as_text=True)

    # the worker who started goes on: resume, save, submit
    again = client.get("/s/demo", query_string=PROLIFIC)
    assert _token(again) == token
    body = annotation_body(
        0, "First", "CharE", texts=["First segment.", "Second segment.", "Third one."]
    )
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Assignment.worker_id)) == "p1"  # nobody else got work


def test_no_documents_left_is_a_page_returning_the_worker(app, client):
    make_study(app, annotators_per_doc=1)
    _study(app, return_codes={"no_places": "NOPLACES"})
    token = _token(client.get("/s/demo", query_string=PROLIFIC))
    body = annotation_body(0, "First", "CharE", texts=["First segment."])
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    late = client.get(
        "/s/demo", query_string={**PROLIFIC, "PROLIFIC_PID": "p9", "SESSION_ID": "sess-9"}
    )
    page = late.get_data(as_text=True)
    assert late.status_code == 409
    assert "No documents left" in page and "cc=NOPLACES" in page
    generic = client.get("/s/demo", query_string={"worker_id": "g1"}).get_data(as_text=True)
    assert "No documents left" in generic and "NOPLACES" in generic and "<form" not in generic


CONSENT_TOKEN = re.compile(r'name="consent_token" value="([^"]+)"')


def consent(client, params: dict, decision: str):
    """Answer the consent form the arrival with ``params`` is shown (its signed token); an
    agreement's answer redirects to the arrival with its consent proof."""
    page = client.get("/s/demo", query_string=params).get_data(as_text=True)
    token = CONSENT_TOKEN.search(page).group(1)
    data = {**params, "decision": decision, "consent_token": token}
    return client.post("/s/demo/consent", data=data)


def test_consent_is_asked_once_stored_with_the_texts_hash_and_declining_returns(app, client):
    make_study(app)
    _study(app, questionnaire=QUESTIONNAIRE, return_codes={"declined": "NOCONSENT"})
    page = client.get("/s/demo", query_string=PROLIFIC)
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "<strong>Please read.</strong>" in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Assignment.id)) is None  # nothing assigned before consent

    declined = consent(client, PROLIFIC, "decline")
    assert "cc=NOCONSENT" in declined.get_data(as_text=True)
    refused = consent(client, PROLIFIC, "maybe")
    assert refused.status_code == 400
    agreed = consent(client, PROLIFIC, "agree")
    assert agreed.status_code == 302 and "PROLIFIC_PID=p1" in agreed.headers["Location"]
    assert _token(client.get(agreed.headers["Location"]))
    with app.app_context(), session_scope() as session:
        # the agreement is stored by the arrival it let in, with its session (the decline
        # before it stays a record of that answer)
        row = session.scalar(select(Consent).where(Consent.agreed))
        text = journey.consent_text(session.scalar(select(Study)))
        assert (row.worker_id, row.agreed, row.text_hash) == ("p1", True, consent_hash(text))
        assert row.session_id == session.scalar(select(Assignment.session_id))


def test_questionnaires_after_the_document_and_the_study_then_prolific(app, client):
    make_study(app)
    _study(app, questionnaire=QUESTIONNAIRE, platform="prolific")
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.completion_url = "https://app.prolific.com/submissions/complete?cc=DONE1"
    token = _token(client.get(consent(client, PROLIFIC, "agree").headers["Location"]))
    submit = client.post(f"/api/assignments/{token}/submit").get_json()
    assert submit["redirect_url"] is None  # the done page asks the questions first

    done = client.get(f"/a/{token}/done").get_data(as_text=True)
    assert "easy to follow" in done and 'name="stage" value="document"' in done
    url = f"/a/{token}/questionnaire"
    missing = client.post(url, data={"stage": "document"})
    assert missing.status_code == 400 and "please answer" in missing.get_data(as_text=True)
    assert client.post(url, data={"stage": "document", "difficulty": "9"}).status_code == 400
    bad = client.post(url, data={"stage": "document", "difficulty": "2", "genre": "poem"})
    assert bad.status_code == 400
    ok = client.post(url, data={"stage": "document", "difficulty": "2", "genre": "story"})
    assert ok.status_code == 302
    study_page = client.get(f"/a/{token}/done").get_data(as_text=True)
    assert "Anything we should know?" in study_page
    too_long = client.post(url, data={"stage": "study", "feedback": "x" * 51})
    assert too_long.status_code == 400
    client.post(url, data={"stage": "study", "feedback": '=HYPERLINK("x")'})
    final = client.get(f"/a/{token}/done")
    assert final.status_code == 302 and final.headers["Location"].endswith("cc=DONE1")
    # a second post changes nothing (first answers win)
    client.post(url, data={"stage": "document", "difficulty": "5", "genre": "other"})
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        answers = journey.answers_by_assignment(session, study)
        assert list(answers.values()) == [
            {
                "document.difficulty": "2",
                "document.genre": "story",
                "study.feedback": '=HYPERLINK("x")',
            }
        ]
        assert session.query(QuestionnaireAnswer).count() == 3
    # the answers ride in the assignment-level export (CSV: one JSON cell)
    (row,) = [json.loads(line) for line in export_text(app, fmt="assignments-jsonl").splitlines()]
    assert row["questionnaire"]["study.feedback"] == '=HYPERLINK("x")'
    (csv_row,) = csv.DictReader(io.StringIO(export_text(app, fmt="assignments-csv")))
    cell = json.loads(csv_row["questionnaire"])  # JSON, which no spreadsheet evaluates
    assert cell["document.genre"] == "story" and csv_row["questionnaire"].startswith("{")


def test_questionnaire_yaml_errors_name_file_line_and_field() -> None:
    with pytest.raises(TaxonomyError, match=r"^q.yaml:4: after_document\[0\].scale: must be"):
        parse_questionnaire(
            "after_document:\n  - id: a\n    type: likert\n    scale: 40\n    prompt: p\n",
            "q.yaml",
        )
    with pytest.raises(TaxonomyError, match=r"q.yaml:3: after_study\[1\].id: duplicate"):
        parse_questionnaire(
            "after_study:\n  - {id: a, type: text, prompt: p}\n  - {id: a, type: text, prompt: q}\n",
            "q.yaml",
        )
    with pytest.raises(TaxonomyError, match=r"options: does not apply to a text question"):
        parse_questionnaire("after_study:\n  - {id: a, type: text, prompt: p, options: [x]}\n")
    with pytest.raises(TaxonomyError, match=r"no consent text and no questions"):
        parse_questionnaire("consent: ''\n")
    with pytest.raises(TaxonomyError, match=r"anchors and aliases"):
        parse_questionnaire("consent: &a hi\nconsent_button: *a\n")


def test_lifecycle_transitions_and_deleting_needs_the_slug(app) -> None:
    make_study(app)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        assert lifecycle.change_status(study, "pause") == "paused"
        with pytest.raises(Conflict, match="is paused: it cannot pause"):
            lifecycle.change_status(study, "pause")
        assert lifecycle.change_status(study, "archive") == "archived"
        assert lifecycle.change_status(study, "reopen") == "open"
        with pytest.raises(InvalidInput, match="unknown action"):
            lifecycle.change_status(study, "explode")
        with pytest.raises(InvalidInput, match="type the study's slug"):
            lifecycle.delete_study(session, study, "dem")
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study.status)) == "open"


def test_a_document_with_work_cannot_be_removed_one_without_can(app, client) -> None:
    make_study(app, documents=[("doc-1", ["One.", "Two."]), ("doc-2", ["Three.", "Four."])])
    token = _token(client.get("/s/demo", query_string={"worker_id": "w1"}))
    body = annotation_body(0, "One", "CharE", texts=["One.", "Two."])
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    held = _token(client.get("/s/demo", query_string={"worker_id": "w2"}))  # a hold, no work
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        worked = session.scalar(select(Assignment).where(Assignment.token == token))
        other = session.scalar(select(Assignment).where(Assignment.token == held))
        assert worked.document.external_id != other.document.external_id
        worked_id, free_id = worked.document.external_id, other.document.external_id
        with pytest.raises(Conflict, match="annotations a worker saved"):
            lifecycle.remove_document(session, study, worked_id)
        lifecycle.remove_document(session, study, free_id)
    with app.app_context(), session_scope() as session:
        assert session.scalars(select(Document.external_id)).all() == [worked_id]
        assert session.query(Annotation).count() == 1
        study = session.scalar(select(Study))
        counts = lifecycle.delete_study(session, study, "demo")
        assert counts == {"documents": 1, "assignments": 1}
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study.id)) is None
        assert session.query(Annotation).count() == 0


def test_hostile_journey_requests_change_nothing(app, client) -> None:
    make_study(app)
    _study(app, questionnaire=QUESTIONNAIRE)
    bad_id = client.post(
        "/s/demo/consent", data={**PROLIFIC, "PROLIFIC_PID": "p\x00", "decision": "agree"}
    )
    assert bad_id.status_code == 400 and "NUL" in bad_id.get_data(as_text=True)
    assert client.post("/s/nope/consent", data={**PROLIFIC, "decision": "agree"}).status_code == 404
    assert (
        client.post("/a/not-a-token/questionnaire", data={"stage": "document"}).status_code == 404
    )
    token = _token(client.get(consent(client, PROLIFIC, "agree").headers["Location"]))
    early = client.post(f"/a/{token}/questionnaire", data={"stage": "document", "difficulty": "3"})
    assert early.status_code == 302  # not submitted yet: nothing to answer, nothing stored
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    url = f"/a/{token}/questionnaire"
    client.post(url, data={"stage": "document", "difficulty": "3"})
    nul = client.post(url, data={"stage": "study", "feedback": "a\x00b"})
    assert nul.status_code == 400 and "NUL" in nul.get_data(as_text=True)
    wrong_stage = client.post(url, data={"stage": "document", "difficulty": "1"})
    assert wrong_stage.status_code == 302
    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(QuestionnaireAnswer)).all()
        assert [(r.stage, r.question, r.answer) for r in rows] == [
            ("document", "difficulty", "3"),
            ("document", "genre", ""),
        ]
        assert session.scalar(select(Consent.worker_id)) == "p1"


def test_questionnaire_limits() -> None:
    with pytest.raises(TaxonomyError, match=r"consent: is longer than 20000"):
        parse_questionnaire("consent: " + "x" * 20_001 + "\n")
    many = "after_study:\n" + "".join(
        f"  - {{id: q{i}, type: text, prompt: p}}\n" for i in range(31)
    )
    with pytest.raises(TaxonomyError, match=r"after_study: has more than 30 questions"):
        parse_questionnaire(many)
    with pytest.raises(TaxonomyError, match=r"unknown field"):
        parse_questionnaire("consent: hi\nredirect: https://evil.example\n")
