"""What a worker's token (or no token) can send: forged or probing suggestion events in hidden
mode, integers beyond any column, anonymous consent posts, invisible characters in worker
IDs, on SQLite and Postgres, through the worker API. Each test is named for the attack
it replays."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.db import session_scope
from app.models import Document, Suggestion, SuggestionEvent
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, db_snapshot, open_token
from tests.test_journey import CONSENT_TOKEN


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def add_suggestions(app) -> dict[str, int]:
    """One suggestion on each document; their ids by document."""
    ids = {}
    with app.app_context(), session_scope() as session:
        for external_id in ("doc-1", "doc-2"):
            document = session.scalar(select(Document).where(Document.external_id == external_id))
            suggestion = Suggestion(
                document_id=document.id,
                segment=0,
                start=0,
                end=3,
                text="x",
                category="CharE",
                score=0.9,
                detector="test",
                detector_version="1",
            )
            session.add(suggestion)
            session.flush()
            ids[external_id] = suggestion.id
    return ids


def stored_events(app) -> list:
    with app.app_context(), session_scope() as session:
        return session.execute(select(SuggestionEvent.suggestion_id, SuggestionEvent.event)).all()


# --- suggestion events that probe or forge hidden suggestions ------------------------------


def test_hidden_suggestions_cannot_be_probed_or_forged_by_events(app, client):
    make_study(app, documents=DOCUMENTS, suggestions="hidden", annotators_per_doc=10)
    ids = add_suggestions(app)
    token = open_token(client)
    assert client.get(f"/api/assignments/{token}").get_json()["suggestions"] == []
    base = f"/api/assignments/{token}"
    answers = set()
    for suggestion in (ids["doc-1"], ids["doc-2"], ids["doc-2"] + 1000):
        for body in ({"segment": 0, "events": {"shown": [suggestion], "accepted": [suggestion]}},):
            answers.add(client.post(f"{base}/position", json=body).status_code)
        batch = {"event": "accepted", "suggestions": [suggestion]}
        answers.add(client.post(f"{base}/suggestions/events", json=batch).status_code)
        one = client.post(f"{base}/suggestions/{suggestion}/events", json={"event": "shown"})
        answers.add(one.status_code)
    assert answers == {204}  # the same answer whatever the id
    assert stored_events(app) == []  # nothing reaches the export


def test_shown_mode_stores_only_what_the_worker_is_shown(app, client):
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    ids = add_suggestions(app)
    token = open_token(client)
    shown = [s["id"] for s in client.get(f"/api/assignments/{token}").get_json()["suggestions"]]
    assert shown == [ids["doc-1"]]
    body = {"segment": 0, "events": {"shown": [ids["doc-1"], ids["doc-2"]]}}
    assert client.post(f"/api/assignments/{token}/position", json=body).status_code == 204
    assert stored_events(app) == [(ids["doc-1"], "shown")]


# --- integers beyond any column -----------------------------------------------------------

HUGE = st.one_of(
    st.sampled_from([2**31, 2**32, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, -1]),
    st.integers(min_value=2**31, max_value=2**80),
    st.integers(max_value=-1, min_value=-(2**80)),
)
BODY_FIELDS = [
    ("annotations", "segment"),
    ("annotations", "start"),
    ("annotations", "end"),
    ("annotations", "suggestion_id"),
    ("annotations", "paired.segment"),
    ("annotations", "paired.start"),
    ("annotations", "paired.end"),
    ("annotations", "paired.end_segment"),
    ("position", "segment"),
    ("position", "active.value"),
    ("position", "events.shown"),
    ("suggestions/events", "suggestions"),
]
PATH_FIELDS = ["annotations/{}", "annotations/{}/edit", "practice/{}", "suggestions/{}/events"]
PATH_BODIES = {"edit": {"comment": "x", "client_id": "edit-1"}}


def body_with(endpoint: str, field: str, value: int) -> dict:
    if endpoint == "annotations":
        body = {"segment": 0, "start": 0, "end": 4, "text": "Anna", "category": "CharE"}
        if field.startswith("paired."):
            body["category"] = "RepE"
            body = {**body, "segment": 1, "start": 0, "end": 6, "text": "Anna's"}
            body["paired"] = {"segment": 0, "start": 0, "end": 4, "text": "Anna"}
            body["paired"][field.split(".")[1]] = value
        else:
            body[field] = value
        return body
    if endpoint == "position":
        if field == "active.value":
            return {"segment": 0, "active": {"0": value}}
        if field == "events.shown":
            return {"segment": 0, "events": {"shown": [value]}}
        return {"segment": value}
    return {"event": "shown", "suggestions": [value]}


@pytest.fixture
def worker(app, client):
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    return open_token(client)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    where=st.one_of(st.sampled_from(BODY_FIELDS), st.sampled_from(PATH_FIELDS)),
    value=HUGE,
)
@example(where=("annotations", "segment"), value=2**63)  # the probe's request
@example(where=("annotations", "paired.segment"), value=2**63)
@example(where="annotations/{}", value=2**64)
@example(where="annotations/{}/edit", value=2**63)
def test_an_integer_beyond_any_column_is_a_400_with_a_message(app, client, worker, where, value):
    """``segment: 2**63`` on an add was a 500 on SQLite (OverflowError in the practice
    freeze's query); every integer of every endpoint is walked here."""
    before = db_snapshot(app)
    base = f"/api/assignments/{worker}"
    if isinstance(where, tuple):
        endpoint, field = where
        answer = client.post(f"{base}/{endpoint}", json=body_with(endpoint, field, value))
    else:
        path = where.format(value)
        removal = path.startswith("annotations/") and not path.endswith("/edit")
        method = client.delete if removal else client.post
        body = PATH_BODIES.get(path.rsplit("/", 1)[-1], {"event": "shown"})
        answer = method(f"{base}/{path}", json=body)
    if where == ("position", "active.value"):  # seconds are clamped (timing.py), not refused
        assert answer.status_code < 500, (where, value, answer.status_code)
        return
    assert 400 <= answer.status_code < 500, (where, value, answer.status_code)
    assert answer.get_json()["error"]
    assert db_snapshot(app) == before


# --- consent posted from anywhere ---------------------------------------------------------

GENERIC = {"worker_id": "victim"}


def consent_rows(app) -> list:
    from app.models import Consent

    with app.app_context(), session_scope() as session:
        return session.execute(select(Consent.worker_id, Consent.agreed)).all()


@pytest.fixture
def consenting(app):
    from tests.test_journey import QUESTIONNAIRE, _study

    make_study(app)
    _study(app, questionnaire=QUESTIONNAIRE)
    return app


def test_anonymous_consent_posts_from_anywhere_are_not_recorded(consenting, client):
    forged = {**GENERIC, "decision": "agree"}
    evil = client.post("/s/demo/consent", data=forged, headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403
    blind = client.post("/s/demo/consent", data=forged)  # no Origin, no token of a shown form
    assert blind.status_code == 400
    other = client.get("/s/demo", query_string={"worker_id": "someone"}).get_data(as_text=True)
    token = CONSENT_TOKEN.search(other).group(1)  # a token shown to another arrival
    borrowed = client.post("/s/demo/consent", data={**forged, "consent_token": token})
    assert borrowed.status_code == 400
    assert consent_rows(consenting) == []
    arrival = client.get("/s/demo", query_string=GENERIC)  # the victim still sees the form
    assert arrival.status_code == 200 and 'name="consent_token"' in arrival.get_data(as_text=True)


def test_a_decline_posted_for_a_worker_id_does_not_undo_their_consent(consenting, client):
    """Agreeing stores nothing against the worker ID (the arrival stores it with its session),
    and a decline posted for the ID later is a record of that post only: the worker's own
    arrival, with the proof their agreement gave, opens work and stores the agreement."""
    from tests.test_journey import consent

    agreed = consent(client, {"worker_id": "w9"}, "agree")
    assert agreed.status_code == 302 and consent_rows(consenting) == []
    token = consent_token_for(client, {"worker_id": "w9"}, consenting)
    declined = client.post(
        "/s/demo/consent", data={"worker_id": "w9", "decision": "decline", "consent_token": token}
    )
    assert declined.status_code == 200 and 'id="returned"' in declined.get_data(as_text=True)
    assert consent_rows(consenting) == [("w9", False)]
    opened = client.get(agreed.headers["Location"])  # the agreeing browser goes on
    assert opened.status_code == 302 and "/a/" in opened.headers["Location"]
    assert sorted(consent_rows(consenting)) == [("w9", False), ("w9", True)]


def consent_token_for(client, params: dict, app) -> str:
    """The token the consent form of this arrival carried (signed as the page signs it)."""
    from app.crowd import platforms
    from app.documents.studies import get_study
    from app.web import journey as web_journey

    with app.test_request_context(), session_scope() as session:
        study = get_study(session, "demo")
        arrival = platforms.read_arrival(params)
        return web_journey._signer().dumps(web_journey._consent_claim(study, arrival))


# --- invisible characters, and text that a spreadsheet would run ---------------------------


@pytest.mark.parametrize("char", ["\u2028", "\u200e", "\ufeff", "\u202e", "\u2066", "\u200b"])
def test_worker_ids_with_invisible_or_direction_characters_are_refused(app, client, char):
    make_study(app, documents=DOCUMENTS)
    worker = f"w{char}1"
    answer = client.post("/api/assignments", json={"study": "demo", "worker_id": worker})
    assert answer.status_code == 400 and f"U+{ord(char):04X}" in answer.get_json()["error"]
    page = client.get("/s/demo", query_string={"worker_id": worker})
    assert page.status_code == 400 and f"U+{ord(char):04X}".encode() in page.data
    with app.app_context(), session_scope() as session:
        from app.models import Assignment

        assert session.scalar(select(Assignment.id)) is None


def test_review_status_tsv_is_spreadsheet_safe(app, database_url, monkeypatch):
    from click.testing import CliRunner

    from app.cli import main

    formula = '=HYPERLINK("http://evil.example","x")'
    make_study(app, documents=[(formula, ["A text."])])
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    result = CliRunner().invoke(main, ["review", "status", "demo"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("'" + formula + "\t")
