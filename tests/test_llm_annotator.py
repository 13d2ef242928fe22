"""An LLM annotator against a local stand-in chat-completions server, through the real
worker loop, on SQLite and Postgres: its marks stored by the study's own rules, quotes that
are absent or ambiguous counted and never guessed, malformed answers asked once more then
failing the document, 429 with Retry-After and timeouts retried, a refused key failing at
once, answers cached so a re-run is free, limits per endpoint, the key never stored."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import select, text

from tests.conftest import BACKENDS, make_database_url, make_study
from tests.llm_annotating import add_annotator, answers, jobs, run_annotator
from tests.llm_standin import Reply, errors, standin

SEGMENTS = [
    "Anna met Bob at the fair. He smiled at her.",
    "Then Carl left the party. Carl was tired, and he went home.",
]
SECOND = ["The cat sat on the mat.", "The dog ran off."]
KEY = "sk-test-secret-value-7f3a"


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def study(app):
    make_study(app, documents=[("d1", SEGMENTS), ("d2", SECOND)], annotators_per_doc=1)
    return "demo"


def marks(app, worker: str = "llm:gpt") -> list[tuple]:
    from app.db import session_scope
    from app.models import Annotation, Assignment, Document

    with app.app_context(), session_scope() as session:
        return session.execute(
            select(
                Document.external_id,
                Assignment.status,
                Assignment.platform,
                Annotation.segment,
                Annotation.text,
                Annotation.category,
                Annotation.paired_text,
                Annotation.comment,
            )
            .join(Assignment, Assignment.document_id == Document.id)
            .join(Annotation, Annotation.assignment_id == Assignment.id)
            .where(Assignment.worker_id == worker)
            .order_by(Document.position, Annotation.segment, Annotation.start)
        ).all()


def test_marks_go_through_the_rules_and_every_problem_is_counted(app, study, monkeypatch):
    monkeypatch.setenv("STANDIN_KEY", KEY)
    table = {
        SEGMENTS[1]: [
            {"category": "CharE", "span": "Carl", "context": "Then Carl left", "reason": "who?"},
            {"category": "CharE", "span": "Carl", "context": "", "reason": "which one?"},
            {"category": "RefE", "span": "the party", "context": "", "reason": "what party"},
            {"category": "RefE", "span": "the party", "context": "", "reason": "twice"},
            {"category": "CorefE", "span": "Zed", "context": "", "reason": "absent"},
            {"category": "Bogus", "span": "home", "context": "", "reason": "no such id"},
            {"category": "RepE", "span": "tired", "context": "", "reason": "no pair given"},
            {"category": "InconE", "span": "went home", "earlier_span": "at the fair",
             "context": "", "reason": "<b>contradicts</b>"},
        ]
    }  # fmt: skip
    with standin(answers(table)) as server:
        add_annotator(app, study, server.url, api_key_env="STANDIN_KEY", temperature=0.3)
        run = run_annotator(app, study, documents=["d1"])
    job = jobs(app, run)["d1"]
    assert (job.outcome, job.marks, job.unlocated, job.ambiguous, job.refused) == (
        "annotated", 3, 1, 1, 1,
    )  # fmt: skip
    assert sorted((p["quote"], p["why"]) for p in job.problems) == [
        ("Carl", "ambiguous"),  # twice in the segment, no context: never guessed
        ("Zed", "absent"),
        ("home", "unknown category"),
        ("the party", "refused: you have already marked this span with this category"),
        ("tired", "earlier span missing"),
    ]
    stored = marks(app)
    assert [(m.text, m.category, m.paired_text) for m in stored] == [
        ("Carl", "CharE", None),
        ("the party", "RefE", None),
        ("went home", "InconE", "at the fair"),
    ]
    assert {(m.status, m.platform) for m in stored} == {("submitted", "llm")}
    assert stored[2].comment == "<b>contradicts</b>"  # untrusted text, stored as given
    request = server.requests[0]
    assert request["temperature"] == 0.3 and request["model"] == "stand-in"
    schema = request["response_format"]["json_schema"]["schema"]
    item = schema["properties"]["errors"]["items"]
    assert item["properties"]["category"]["enum"] == [
        "CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE",
    ]  # fmt: skip
    assert "earlier_span" in item["required"]
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"
    second = next(r for r in server.requests if "Then Carl" in r["messages"][1]["content"])
    assert second["messages"][1]["content"] == (
        f"CONTEXT:\n<<<\n{SEGMENTS[0]}\n>>>\n\nCURRENT SEGMENT:\n<<<\n{SEGMENTS[1]}\n>>>"
    )  # what a human sees: the earlier text, then the segment
    assert KEY not in database_text(app)


def database_text(app) -> str:
    """Every row of every table, as text (the key must be nowhere)."""
    from app.db import session_scope
    from app.models import Base

    with app.app_context(), session_scope() as session:
        return "\n".join(
            repr(row)
            for table in Base.metadata.sorted_tables
            for row in session.execute(text(f"SELECT * FROM {table.name}")).all()
        )


def test_a_malformed_answer_is_asked_once_more(app, study):
    seen: list[str] = []

    def script(segment: str, number: int) -> Reply:
        seen.append(segment)
        if segment == SECOND[1] and seen.count(segment) == 1:
            return Reply(content='{"errors": [{"category": "CharE", "span": "dog"')
        if segment == SECOND[1]:
            return errors({"category": "RefE", "span": "The dog", "reason": "which dog"})
        return errors()

    with standin(script) as server:
        add_annotator(app, study, server.url, concurrency=1)
        run = run_annotator(app, study, documents=["d2"])
    job = jobs(app, run)["d2"]
    assert (job.outcome, job.marks, job.requests, job.retries) == ("annotated", 1, 3, 1)
    assert len(server.requests) == 3 and [m.text for m in marks(app)] == ["The dog"]


def test_malformed_twice_fails_the_document_and_stores_none_of_its_marks(app, study):
    def script(segment: str, number: int) -> Reply:
        if segment == SECOND[1]:
            return Reply(content="Sure! The dog is fine.")
        if segment == SECOND[0]:
            return errors({"category": "RefE", "span": "the mat", "reason": "which mat"})
        return errors({"category": "CharE", "span": "Anna", "reason": "who"})

    with standin(script) as server:
        add_annotator(app, study, server.url)
        run = run_annotator(app, study)
    done = jobs(app, run)
    assert done["d2"].outcome == "failed" and done["d2"].status == "failed"
    assert "segment 2: the answer was malformed twice" in done["d2"].last_error
    assert done["d1"].outcome == "annotated"
    assert {m[0] for m in marks(app)} == {"d1"}  # nothing of d2, not even its good segment
    assert sum(1 for r in server.requests if SECOND[1] in r["messages"][1]["content"]) == 2


@pytest.mark.parametrize(
    "failure",
    [Reply(status=429, headers={"Retry-After": "2"}), Reply(delay=1.6, content='{"errors": []}')],
    ids=["429", "timeout"],
)
def test_429_and_timeouts_are_retried_with_backoff(app, study, failure):
    def script(segment: str, number: int) -> Reply:
        if number == 1:
            return failure
        return errors({"category": "RefE", "span": "The cat", "reason": "x"})

    with standin(script) as server:
        add_annotator(app, study, server.url, timeout=1, concurrency=1)
        started = time.monotonic()
        run = run_annotator(app, study, documents=["d2"])
        waited = time.monotonic() - started
    job = jobs(app, run)["d2"]
    assert (job.outcome, job.retries) == ("annotated", 1)
    assert len(server.requests) == 3  # the first asked twice, the second once
    if failure.status == 429:
        assert waited >= 2  # Retry-After was honoured (its lower bound only)


def test_a_refused_key_fails_the_document_at_once(app, study):
    refusing = standin(lambda segment, n: Reply(status=401, body='{"error": "bad key"}'))
    with refusing as server:
        add_annotator(app, study, server.url, concurrency=1)
        run = run_annotator(app, study, documents=["d1"])
    job = jobs(app, run)["d1"]
    assert (job.status, job.outcome) == ("failed", "failed") and "HTTP 401" in job.last_error
    assert len(server.requests) == 1 and marks(app) == []


def test_an_endpoint_that_stays_down_goes_back_to_the_queue(app, study):
    with standin(lambda segment, n: Reply(status=503)) as server:
        add_annotator(app, study, server.url, max_retries=1, concurrency=1)
        run = run_annotator(app, study, documents=["d1"])
    job = jobs(app, run)["d1"]
    assert (job.status, job.outcome, job.attempts) == ("queued", None, 1)
    assert "HTTP 503" in job.last_error and len(server.requests) == 2


def test_answers_are_cached_so_a_rerun_and_a_second_annotator_are_free(app, study):
    script = answers({SEGMENTS[0]: [{"category": "CharE", "span": "Anna", "reason": "who"}]})
    with standin(script) as server:
        add_annotator(app, study, server.url)
        first = jobs(app, run_annotator(app, study))
        asked = len(server.requests)
        again = jobs(app, run_annotator(app, study))
        add_annotator(app, study, server.url, name="twin")
        twin = jobs(app, run_annotator(app, study, name="twin"))
        assert len(server.requests) == asked  # nothing asked twice
    assert {j.outcome for j in again.values()} == {"skipped"}
    assert sum(j.prompt_tokens for j in again.values()) == 0
    assert {j.outcome for j in twin.values()} == {"annotated"}
    assert all(j.requests == 0 and j.prompt_tokens == 0 for j in twin.values())
    assert all(j.cache_hits > 0 for j in twin.values())
    for doc, job in first.items():  # what the answers cost when made travels with them
        assert twin[doc].answer_prompt_tokens == job.answer_prompt_tokens == job.prompt_tokens
    assert marks(app, "llm:twin") == marks(app, "llm:gpt")


def test_requests_in_flight_and_per_minute_are_limited_per_endpoint(app, study):
    with standin(lambda segment, n: Reply(delay=0.3, content='{"errors": []}')) as server:
        add_annotator(app, study, server.url, concurrency=2, per_minute=600)
        started = time.monotonic()
        run_annotator(app, study)
        waited = time.monotonic() - started
    assert len(server.requests) == 4 and server.max_in_flight <= 2
    assert waited >= 3 * 0.1  # 600 a minute: starts at least 0.1 s apart


def test_humans_cannot_take_an_llm_worker_id(app, client, study):
    refused = client.post(
        "/api/assignments", json={"study": study, "document": "d1", "worker_id": "llm:gpt"}
    )
    assert refused.status_code == 400 and "kept for LLM annotators" in refused.get_json()["error"]
    page = client.get(f"/s/{study}?worker_id=llm:gpt")
    assert page.status_code == 400
    ok = client.post(
        "/api/assignments", json={"study": study, "document": "d1", "worker_id": "LLM:x"}
    )
    assert ok.status_code == 201  # the prefix is exact: another ID is a human's


def test_what_makes_the_marks_cannot_change_once_there_is_work(app, study):
    from app.db import begin_write, session_scope
    from app.documents.studies import get_study
    from app.errors import InvalidInput
    from app.llm.annotators import annotator, save

    with standin(lambda segment, n: errors()) as server:
        add_annotator(app, study, server.url)
        run_annotator(app, study, documents=["d1"])
    with app.app_context(), session_scope() as session:
        begin_write(session)
        found = annotator(get_study(session, study), "gpt")
        with pytest.raises(InvalidInput, match="its model cannot change"):
            save(session, get_study(session, study), replace(found, model="other"))
        saved = save(session, get_study(session, study), replace(found, concurrency=9))
        assert saved.concurrency == 9


def replace(found, **changes):
    import dataclasses

    return dataclasses.replace(found, **changes)


def test_the_booookscore_preset_asks_about_numbered_sentences(app):
    make_study(
        app,
        taxonomy="taxonomies/booookscore.yaml",
        documents=[("book", ["Anna sails. Bob waits.", "The Duke arrives. It rains."])],
    )
    asked: list[str] = []

    def script(segment: str, number: int) -> Reply:
        asked.append(segment)
        lines = [line.split(". ", 1) for line in segment.splitlines()]
        verdicts = [
            {"number": int(n), "questions": "Who is the Duke?" if "Duke" in s else None,
             "types": ["entity_omission", "salience"] if "Duke" in s else None}
            for n, s in lines
        ]  # fmt: skip
        return Reply(content=json.dumps({"sentences": verdicts}))

    with standin(script) as server:
        add_annotator(app, "demo", server.url, preset="booookscore", batch=3)
        run = run_annotator(app, "demo")
    assert sorted(asked) == ["1. Anna sails.\n2. Bob waits.\n3. The Duke arrives.", "4. It rains."]
    assert (
        "Anna sails. Bob waits.\n\nThe Duke arrives. It rains."
        in (server.requests[0]["messages"][1]["content"])
    )
    assert jobs(app, run)["book"].marks == 1
    stored = marks(app)
    assert [(m.segment, m.text, m.comment) for m in stored] == [
        (1, "The Duke arrives.", "Who is the Duke?"),
        (1, "The Duke arrives.", "Who is the Duke?"),
    ]  # a multi-label mark: one row per category
    assert sorted(m.category for m in stored) == ["entity_omission", "salience"]
