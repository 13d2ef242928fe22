"""A participant's session of several documents (app/annotation/sessions.py), on SQLite and
Postgres, through the worker pages and the API: consent once, then K documents one after
another, each an assignment under the policy's rules, one completion code at the end (never
before), the same SESSION_ID resuming, a participant who leaves keeping what they submitted
while their open document goes to someone else, a session that runs out of documents ending
early (or sending the worker back, as the study chooses), and the training phase once."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from app.annotation.session_settings import configure_sessions
from app.crowd import platforms
from app.db import session_scope
from app.errors import InvalidInput
from app.models import Assignment, Consent, Document, Study, WorkSession
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.test_journey import _study, consent

TEXTS = ["Anna lives in Paris.", "She has a brother."]
DOCS = [(f"doc-{n}", TEXTS) for n in range(1, 5)]
DONE = "https://app.prolific.com/submissions/complete?cc=DONE3&code={code}"
QUESTIONS = """\
consent: You are invited to take part.
after_document:
  - id: easy
    type: likert
    prompt: The text was easy to follow.
after_study:
  - id: device
    type: choice
    options: [Computer, Phone]
    prompt: Which device did you use?
"""


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def session_study(app, documents=DOCS, per_document: int = 3, **sessions) -> None:
    make_study(app, documents=documents, annotators_per_doc=per_document, suggestions="off")
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        platforms.configure_study(study, platform="prolific", completion_url=DONE)
        configure_sessions(study, **{"documents": 3, **sessions})


def prolific(worker: str) -> dict:
    return {"PROLIFIC_PID": worker, "STUDY_ID": "st1", "SESSION_ID": f"se{worker}"}


def token_of(answer) -> str | None:
    location = answer.headers.get("Location", "")
    found = re.search(r"/a/([^/?]+)$", location)
    return found[1] if found else None


def arrive(client, worker: str) -> str | None:
    return token_of(client.get("/s/demo", query_string=prolific(worker)))


def submit(client, token: str) -> dict:
    seen = {"segment": 1, "active": {"0": 20.0, "1": 40.0}}
    assert client.post(f"/api/assignments/{token}/position", json=seen).status_code == 204
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def next_document(client, token: str) -> str | None:
    answer = client.post(f"/a/{token}/next")
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return token_of(answer)


def rows(app, worker: str) -> list[tuple]:
    with app.app_context(), session_scope() as session:
        found = session.execute(
            select(Document.external_id, Assignment.status, Assignment.completion_code)
            .join(Document, Document.id == Assignment.document_id)
            .where(Assignment.worker_id == worker)
            .order_by(Assignment.id)
        ).all()
        return [tuple(row) for row in found]


def age(app, token: str, minutes: float) -> None:
    """The assignment last seen ``minutes`` ago (a worker who left)."""
    moment = datetime.now(UTC) - timedelta(minutes=minutes)
    with app.app_context(), session_scope() as session:
        session.execute(
            update(Assignment)
            .where(Assignment.token == token)
            .values(last_seen_at=moment, engaged_at=moment)
        )


def test_a_session_is_three_documents_one_consent_one_code(app, client):
    session_study(app)
    _study(app, questionnaire=QUESTIONS)
    agreed = consent(client, prolific("p1"), "agree")
    first = token_of(client.get(agreed.headers["Location"]))
    assert first
    page = client.get(f"/a/{first}").get_data(as_text=True)
    assert 'id="session-progress"' in page and "Document 1 of 3" in page
    tokens = [first]
    for n in (1, 2):
        answer = submit(client, tokens[-1])
        assert answer == {"completion_code": None, "redirect_url": None}
        read = client.get(f"/api/assignments/{tokens[-1]}").get_json()
        assert read["completion_code"] is None
        done = client.get(f"/a/{tokens[-1]}/done").get_data(as_text=True)
        assert 'id="questionnaire"' in done and "Which device" not in done
        # the next document waits for this one's answers
        assert client.post(f"/a/{tokens[-1]}/next").headers["Location"].endswith("/done")
        url = f"/a/{tokens[-1]}/questionnaire"
        assert client.post(url, data={"stage": "document", "easy": "4"}).status_code == 302
        between = client.get(f"/a/{tokens[-1]}/done").get_data(as_text=True)
        assert f"Document {n} of 3 done" in between and "MG-" not in between
        following = next_document(client, tokens[-1])
        assert following and following not in tokens
        again = client.post(f"/a/{tokens[-1]}/next")
        assert token_of(again) == following, (n, again.headers, again.get_data(as_text=True))
        tokens.append(following)
        assert f"Document {n + 1} of 3" in client.get(f"/a/{following}").get_data(as_text=True)
    assert submit(client, tokens[-1])["completion_code"] is None  # the questions come first
    assert client.post(f"/a/{tokens[-1]}/next").headers["Location"].endswith("/done")
    url = f"/a/{tokens[-1]}/questionnaire"
    client.post(url, data={"stage": "document", "easy": "2"})
    assert client.get(f"/api/assignments/{tokens[-1]}").get_json()["completion_code"] is None
    assert "Which device" in client.get(f"/a/{tokens[-1]}/done").get_data(as_text=True)
    client.post(url, data={"stage": "study", "device": "Phone"})
    final = client.get(f"/a/{tokens[-1]}/done")
    code = client.get(f"/api/assignments/{tokens[-1]}").get_json()["completion_code"]
    assert final.status_code == 302 and final.headers["Location"] == DONE.replace("{code}", code)
    assert [(status, stored) for _, status, stored in rows(app, "p1")] == [("submitted", code)] * 3
    # the same SESSION_ID again: the session's end, not new work
    assert (
        client.get("/s/demo", query_string=prolific("p1"))
        .headers["Location"]
        .endswith(f"/a/{tokens[-1]}/done")
    )
    with app.app_context(), session_scope() as session:
        (agreement,) = session.execute(select(Consent.worker_id, Consent.session_id)).all()
        assert agreement == ("p1", session.scalar(select(WorkSession.id)))
        assert session.scalar(select(WorkSession.completion_code)) == code


def test_resume_by_session_and_a_participant_who_leaves(app, client):
    session_study(app, documents=DOCS[:3], per_document=1)
    first = arrive(client, "p2")
    submit(client, first)
    second = next_document(client, first)
    assert arrive(client, "p2") == second  # the same SESSION_ID resumes mid-way
    submit(client, second)
    third = next_document(client, second)
    assert arrive(client, "p2") == third
    age(app, third, 60)  # p2 leaves (or returns the study on Prolific) after 2 of 3
    taken = arrive(client, "p3")  # the abandoned slot goes to someone else
    assert taken and rows(app, "p3")[0][0] == rows(app, "p2")[2][0]
    assert [status for _, status, _ in rows(app, "p2")] == ["submitted", "submitted", "abandoned"]


def test_running_out_of_documents_ends_the_session_early_with_its_code(app, client):
    session_study(app, documents=DOCS[:2], per_document=1)
    first = arrive(client, "p4")
    submit(client, first)
    second = next_document(client, first)
    submit(client, second)
    assert client.post(f"/a/{second}/next").headers["Location"].endswith(f"/a/{second}/done")
    page = client.get(f"/a/{second}/done").get_data(as_text=True)
    assert "ended after 2 of 3 documents" in page and 'id="completion-link"' in page
    code = client.get(f"/api/assignments/{second}").get_json()["completion_code"]
    assert code and [c for _, _, c in rows(app, "p4")] == [code, code]


def test_a_study_that_wants_whole_sessions_sends_the_worker_back(app, client):
    session_study(app, documents=DOCS[:2], per_document=1, shorter=False)
    _study(app, return_codes={"no_places": "NOPLACES"})
    first = arrive(client, "p5")
    submit(client, first)
    second = next_document(client, first)
    submit(client, second)
    answer = client.post(f"/a/{second}/next")
    assert answer.status_code == 409 and "cc=NOPLACES" in answer.get_data(as_text=True)
    assert client.get(f"/api/assignments/{second}").get_json()["completion_code"] is None


def test_one_document_per_session_is_a_study_as_it_always_was(app, client):
    make_study(app, documents=DOCS[:2], suggestions="off")
    token = token_of(client.get("/s/demo", query_string={"worker_id": "g1"}))
    assert "session-progress" not in client.get(f"/a/{token}").get_data(as_text=True)
    code = submit(client, token)["completion_code"]
    assert code.startswith("MG-")
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(WorkSession.completion_code)) == code
    api = client.post("/api/assignments", json={"study": "demo", "worker_id": "g2"})
    assert api.status_code == 201  # an API arrival of a one-document study opens no session
    with app.app_context(), session_scope() as session:
        assert session.query(WorkSession).count() == 1


def test_session_settings_are_checked(app):
    make_study(app)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        for bad in ({"documents": 0}, {"documents": "x"}, {"reward": "-1"}, {"reward": "1.234"}):
            with pytest.raises(InvalidInput):
                configure_sessions(study, **bad)
        with pytest.raises(InvalidInput, match="three letters"):
            configure_sessions(study, reward="2.5", currency="pounds")
        described = configure_sessions(study, documents=3, reward="2.5", currency="usd")
    assert described == {
        "documents_per_session": 3,
        "allow_shorter_session": True,
        "reward": "2.50",
        "currency": "USD",
    }


def test_the_training_phase_comes_once_then_the_sessions_documents(app, client):
    """A generic worker (no platform session: the tokens carry the session) does the practice
    and the qualification once, each Continue posting to the last document's token, then
    three real documents numbered 1 to 3, and one code."""
    from tests.test_training import TEST, TEST_KEY, training_study
    from tests.test_training import span as training_span

    training_study(app)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.annotators_per_doc = 3
        configure_sessions(study, documents=3)
        from app.documents.studies import import_documents
        from app.formats import DocumentInput

        import_documents(session, study, [DocumentInput(f"real-{n}", TEXTS) for n in (2, 3)])
    practice = token_of(client.get("/s/demo", query_string={"worker_id": "g7"}))
    assert "session-progress" not in client.get(f"/a/{practice}").get_data(as_text=True)
    assert client.post(f"/api/assignments/{practice}/submit").get_json()["completion_code"] is None
    assert 'id="continue-link"' in client.get(f"/a/{practice}/done").get_data(as_text=True)
    qualifying = next_document(client, practice)
    for segment, text, category in TEST_KEY:
        body = training_span(segment, text, category, texts=TEST)
        assert (
            client.post(f"/api/assignments/{qualifying}/annotations", json=body).status_code == 201
        )
    client.post(f"/api/assignments/{qualifying}/submit")
    assert "You qualified" in client.get(f"/a/{qualifying}/done").get_data(as_text=True)
    token, codes = next_document(client, qualifying), []
    for n in (1, 2, 3):
        assert f"Document {n} of 3" in client.get(f"/a/{token}").get_data(as_text=True)
        codes.append(submit(client, token)["completion_code"])
        if n < 3:
            token = next_document(client, token)
    assert codes[:2] == [None, None] and codes[2].startswith("MG-")
    statuses = [(document, code) for document, _, code in rows(app, "g7")]
    assert statuses[0] == ("practice-1", None) and statuses[1][1] is None  # training: none
    assert [code for _, code in statuses[2:]] == [codes[2]] * 3
