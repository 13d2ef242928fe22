"""One document annotated by an LLM annotator (one job of app/llm/runs.py), on the worker.

The document is read, the read transaction ended, and the requests its preset plans are
sent (at most the annotator's ``concurrency`` at once, within the endpoint's limits; each
answer cached by request, :mod:`app.llm.answers`). An answer that is malformed, truncated or
refused is asked once more; twice, and the document fails with the reason (no mark of it is
stored: a half-annotated document would count as a whole one). Otherwise the marks, in
document order, are stored through the add action and the assignment submitted, in one
write transaction with the job's counts (app/llm/store.py): all or nothing.

Presets (:data:`app.llm.annotators.PRESETS`): ``taxonomy``, a request per segment with
the study's categories (model_server/llm_annotate.py); ``booookscore``, the whole summary
and its sentences in numbered batches (model_server/llm_booookscore.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation.cache import segment_texts
from app.db import begin_write
from app.documents.journey import instructions
from app.llm import runs
from app.llm.annotators import Annotator, from_setting
from app.llm.answers import DatabaseCache
from app.llm.store import open_llm_assignment, store_marks, submit_llm_assignment
from app.models import Assignment, Document, LlmJob, LlmRun, Study
from app.rules.spans import sentence_bounds
from model_server import llm_annotate, llm_booookscore
from model_server.llm_annotate import SegmentMarks
from model_server.llm_client import ChatClient, Completion
from model_server.llm_limits import limit_for

MAX_PROBLEMS = 200  # listed per document (all are counted)


@dataclass
class Request:
    """One question of a document: what it is about, its messages, how its answer reads."""

    label: str
    messages: list[dict[str, str]]
    interpret: Callable[[dict[str, Any]], SegmentMarks]


@dataclass
class Asked:
    result: SegmentMarks
    answers: list[Completion] = field(default_factory=list)
    failure: str | None = None


def plan(
    annotator: Annotator, taxonomy: dict[str, Any], notes: str, segments: list[str]
) -> tuple[list[Request], dict[str, Any]]:
    """The document's requests under the annotator's preset, and the response format."""
    if annotator.preset == "booookscore":
        places = [(i, s, e) for i, text in enumerate(segments) for s, e in sentence_bounds(text)]
        sentences = [segments[i][s:e] for i, s, e in places]
        summary = "\n\n".join(segments)
        schema = llm_booookscore.answer_schema(taxonomy)
        requests = [
            Request(
                f"sentences {numbers.start}-{numbers.stop - 1}",
                llm_booookscore.build_messages(taxonomy, summary, sentences, numbers),
                partial(
                    llm_booookscore.batch_marks,
                    taxonomy=taxonomy,
                    places=places,
                    texts=segments,
                    numbers=numbers,
                ),
            )
            for numbers in llm_booookscore.batches(len(places), annotator.batch)
        ]
    else:
        schema = llm_annotate.answer_schema(taxonomy)
        requests = [
            Request(
                f"segment {i + 1}",
                llm_annotate.build_messages(
                    taxonomy, notes, "\n\n".join(segments[:i]), text, annotator.max_context
                ),
                partial(llm_annotate.segment_marks, taxonomy=taxonomy, segments=segments, index=i),
            )
            for i, text in enumerate(segments)
            if text.strip()
        ]
    return requests, llm_annotate.response_format(schema, annotator.structured)


def ask(client: ChatClient, request: Request) -> Asked:
    """The request's marks; an unusable answer is asked once more (not from the cache)."""
    key, answer = client.complete(request.messages)
    asked = Asked(request.interpret(answer.choice), [answer])
    if asked.result.failure:
        key, answer = client.complete(request.messages, fresh=True)
        asked = Asked(request.interpret(answer.choice), [*asked.answers, answer])
        if asked.result.failure:
            asked.failure = f"{request.label}: the answer was {asked.result.failure} twice"
            return asked
    client.keep(key, answer)
    return asked


def ask_all(client: ChatClient, requests: list[Request], concurrency: int) -> list[Asked]:
    """Every request's marks, at most ``concurrency`` in flight; once one request fails
    (the endpoint down or refusing) no other is sent, and the failure is raised."""
    stop = threading.Event()

    def one(request: Request) -> Asked | None:
        if stop.is_set():
            return None
        try:
            return ask(client, request)
        except BaseException:
            stop.set()
            raise

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(one, request) for request in requests]
    for future in futures:
        future.result()  # the first failure, in request order
    return [future.result() for future in futures]  # type: ignore[misc]


def cost(asked: list[Asked], seconds: float) -> dict[str, Any]:
    """The job's cost fields: spent by this job, and what its marks' answers cost."""
    spent = [a for found in asked for a in found.answers]
    used = [found.answers[-1] for found in asked if not found.failure]
    return {
        "requests": sum(not a.cached for a in spent),
        "cache_hits": sum(a.cached for a in spent),
        "retries": sum(a.retries for a in spent) + sum(len(f.answers) - 1 for f in asked),
        "prompt_tokens": sum(a.prompt_tokens for a in spent),
        "completion_tokens": sum(a.completion_tokens for a in spent),
        "seconds": round(seconds, 3),
        "answer_prompt_tokens": sum(a.answer_prompt_tokens for a in used),
        "answer_completion_tokens": sum(a.answer_completion_tokens for a in used),
        "answer_seconds": round(sum(a.answer_seconds for a in used), 3),
    }


def _submitted(session: Session, study_id: int, document_id: int, worker_id: str) -> bool:
    status = session.scalar(
        select(Assignment.status).where(
            Assignment.study_id == study_id,
            Assignment.document_id == document_id,
            Assignment.worker_id == worker_id,
        )
    )
    return status == "submitted"


def run_job(sessions: Callable[[], Session], session: Session, job_id: int) -> str:
    """Annotate the job's document; its outcome (app/llm/runs.py). Raises
    ``LLMUnavailable`` (model_server/llm_client.py: the caller requeues a transient one)
    or a database error."""
    job = session.get(LlmJob, job_id)
    run = session.get(LlmRun, job.run_id) if job is not None else None
    document = session.get(Document, job.document_id) if job is not None else None
    if run is None or document is None:  # deleted since it was queued
        runs.end_job(session, job_id, "skipped")
        return "skipped"
    annotator = from_setting(run.annotator, run.config)
    if _submitted(session, run.study_id, document.id, annotator.worker_id):
        runs.end_job(session, job_id, "skipped")
        return "skipped"
    study = session.get(Study, run.study_id)
    segments = segment_texts(session, document.id)
    requests, answer_format = plan(annotator, study.taxonomy or {}, instructions(study), segments)
    study_id, document_id = study.id, document.id
    session.commit()  # no transaction held while the endpoint answers
    client = ChatClient(
        annotator.client_settings(answer_format),
        cache=DatabaseCache(sessions, document_id, annotator.model),
        limit=limit_for(annotator.base_url, annotator.concurrency, annotator.per_minute).slot,
    )
    started = time.perf_counter()
    try:
        asked = ask_all(client, requests, annotator.concurrency)
    finally:
        client.close()
    spent = cost(asked, time.perf_counter() - started)
    problems = [p for found in asked for p in found.result.problems]
    counts = {
        "unlocated": sum(p["why"] == "absent" for p in problems),
        "ambiguous": sum(p["why"] == "ambiguous" for p in problems),
    }
    failures = [found.failure for found in asked if found.failure]
    if failures:
        runs.end_job(
            session,
            job_id,
            "failed",
            last_error="; ".join(failures)[:4000],
            problems=problems[:MAX_PROBLEMS],
            **counts,
            **spent,
        )
        return "failed"
    marks = sorted(
        (m for found in asked for m in found.result.marks),
        key=lambda m: (m["segment"], m["start"], m["end"], m["category"]),
    )
    begin_write(session)
    study, document = session.get(Study, study_id), session.get(Document, document_id)
    assignment = open_llm_assignment(session, study, document, annotator.worker_id)
    if assignment.status != "active":  # another worker of the queue got there first
        runs.end_job(session, job_id, "skipped", **spent)
        return "skipped"
    refused = store_marks(session, assignment.token, marks)
    submit_llm_assignment(session, assignment, len(segments))
    runs.end_job(
        session,
        job_id,
        "annotated",
        marks=len(marks) - len(refused),
        refused=len(refused),
        problems=[*problems, *refused][:MAX_PROBLEMS],
        **counts,
        **spent,
    )
    return "annotated"
