"""Attacks on the worker's way around the documents, replayed on SQLite and Postgres:

* consent skipped through the API: a study with a consent form gave ``POST /api/assignments``
  a token, work and a completion code with no consent on record;
* consent given for someone else: anyone could fetch the consent form for a victim's worker
  ID and agree; the victim was never asked;
* required questions skipped: the done page withheld the code until the required answers
  were stored, but the submit's JSON and ``GET /api/assignments/TOKEN`` already carried it.

Each test states what must hold (docs/SECURITY.md, "Consent" and "Completion codes").
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, Consent
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import annotation_body
from tests.test_journey import _study, _token

CONSENT_ONLY = "consent: |\n  You are invited to take part.\n"
REQUIRED_AFTER_DOCUMENT = """\
after_document:
  - id: difficulty
    type: likert
    prompt: The text was easy to follow.
"""
REQUIRED_AFTER_STUDY = """\
after_document:
  - id: remark
    type: text
    prompt: Anything about this text?
    required: false
after_study:
  - id: device
    type: choice
    options: [Computer, Phone]
    prompt: Which device did you use?
"""
CONSENT_TOKEN = re.compile(r'name="consent_token" value="([^"]+)"')
TEXTS = ["First segment.", "Second segment.", "Third one."]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def assignments(app) -> list[tuple[str, str]]:
    with app.app_context(), session_scope() as session:
        rows = session.execute(select(Assignment.worker_id, Assignment.status)).all()
        return [tuple(row) for row in rows]


def agreements(app) -> list[str]:
    with app.app_context(), session_scope() as session:
        return list(session.scalars(select(Consent.worker_id).where(Consent.agreed)))


# --- consent skipped through the API ------------------------------------------------------------


def test_the_api_gives_no_assignment_without_consent(app, client):
    make_study(app)
    _study(app, questionnaire=CONSENT_ONLY)
    answer = client.post("/api/assignments", json={"study": "demo", "worker_id": "w"})
    assert answer.status_code == 403, answer.get_json()
    assert "consent" in answer.get_json()["error"]
    named = {"study": "demo", "worker_id": "w", "document": "doc-1"}
    assert client.post("/api/assignments", json=named).status_code == 403
    forged = client.post("/api/assignments", json={**named, "consent": "made-up"})
    assert forged.status_code == 403
    assert assignments(app) == [] and agreements(app) == []


def test_a_consent_proof_opens_work_once_recorded_with_it(app, client):
    """The value the consent post hands back is what an arrival needs: through the link or
    the API, for the arrival it was given to only."""
    make_study(app, documents=[("doc-1", TEXTS), ("doc-2", TEXTS)])
    _study(app, questionnaire=CONSENT_ONLY)
    page = client.get("/s/demo", query_string={"worker_id": "w"}).get_data(as_text=True)
    form = {"worker_id": "w", "decision": "agree", "consent_token": CONSENT_TOKEN.search(page)[1]}
    agreed = client.post("/s/demo/consent", data=form)
    assert agreed.status_code == 302
    proof = re.search(r"[?&]consent=([^&]+)", agreed.headers["Location"])[1]
    assert assignments(app) == [] and agreements(app) == []  # recorded with the work only
    other = client.post(
        "/api/assignments", json={"study": "demo", "worker_id": "someone", "consent": proof}
    )
    assert other.status_code == 403  # another worker ID's arrival
    opened = client.post(
        "/api/assignments", json={"study": "demo", "worker_id": "w", "consent": proof}
    )
    assert opened.status_code == 201, opened.get_json()
    assert assignments(app) == [("w", "active")] and agreements(app) == ["w"]


# --- consent given for someone else -------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"worker_id": "victim"},
        {"PROLIFIC_PID": "victim", "STUDY_ID": "st1", "SESSION_ID": "attacker-session"},
    ],
)
def test_agreeing_for_another_worker_id_does_not_consent_for_them(app, params):
    make_study(app)
    _study(app, questionnaire=CONSENT_ONLY)
    attacker = app.test_client()
    page = attacker.get("/s/demo", query_string=params).get_data(as_text=True)
    token = CONSENT_TOKEN.search(page)[1]
    forged = attacker.post(
        "/s/demo/consent", data={**params, "decision": "agree", "consent_token": token}
    )
    assert forged.status_code == 302  # the attacker's own browser may go on
    victim = app.test_client()
    mine = {"worker_id": "victim"}
    if "PROLIFIC_PID" in params:
        mine = {**params, "SESSION_ID": "victims-own-session"}
    arrival = victim.get("/s/demo", query_string=mine)
    assert arrival.status_code == 200 and 'name="consent_token"' in arrival.get_data(as_text=True)
    assert assignments(app) == [] and agreements(app) == []


# --- required questions skipped -----------------------------------------------------------------


@pytest.mark.parametrize("questionnaire", [REQUIRED_AFTER_DOCUMENT, REQUIRED_AFTER_STUDY])
def test_no_code_reaches_the_worker_before_the_required_answers(app, client, questionnaire):
    make_study(app)
    _study(app, questionnaire=questionnaire)
    token = _token(client.get("/s/demo", query_string={"worker_id": "w"}))
    body = annotation_body(0, "First", "CharE", texts=TEXTS)
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    submitted = client.post(f"/api/assignments/{token}/submit").get_json()
    assert submitted["completion_code"] is None and submitted["redirect_url"] is None
    assert client.get(f"/api/assignments/{token}").get_json()["completion_code"] is None
    again = client.post(f"/api/assignments/{token}/submit").get_json()
    assert again["completion_code"] is None
    done = client.get(f"/a/{token}/done").get_data(as_text=True)
    assert "MG-" not in done and 'id="questionnaire"' in done
    url = f"/a/{token}/questionnaire"
    if "difficulty" in questionnaire:
        assert client.post(url, data={"stage": "document", "difficulty": "4"}).status_code == 302
    else:
        assert client.post(url, data={"stage": "document"}).status_code == 302
        # the optional stage answered, the required one still pending: still no code
        assert client.get(f"/api/assignments/{token}").get_json()["completion_code"] is None
        assert client.post(url, data={"stage": "study", "device": "Phone"}).status_code == 302
    code = client.get(f"/api/assignments/{token}").get_json()["completion_code"]
    assert code and code.startswith("MG-")
    assert client.post(f"/api/assignments/{token}/submit").get_json()["completion_code"] == code
    assert code in client.get(f"/a/{token}/done").get_data(as_text=True)
