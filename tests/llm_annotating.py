"""What the LLM annotator tests share: a study's annotator pointed at a stand-in, a run
through the real worker loop, a stand-in script answering each segment from a table, and
quotes a model would give (a quote with just enough context to name one place)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from model_server.locate import locate_exactly, occurrences
from tests.llm_standin import Reply


def add_annotator(app, slug: str, url: str, name: str = "gpt", **options: Any) -> None:
    from app.db import begin_write, session_scope
    from app.documents.studies import get_study
    from app.llm.annotators import Annotator, save

    with app.app_context(), session_scope() as session:
        begin_write(session)
        study = get_study(session, slug)
        save(session, study, Annotator(name=name, base_url=url, model="stand-in", **options))


def run_annotator(app, slug: str, name: str = "gpt", documents: list[str] | None = None) -> int:
    """Queue a run and let the worker loop finish it (documents, then the calibration)."""
    from app.db import begin_write, session_scope
    from app.detection.worker import work
    from app.documents.studies import get_study
    from app.llm.annotators import annotator
    from app.llm.runs import queue_run

    with app.app_context():
        with session_scope() as session:
            begin_write(session)
            study = get_study(session, slug)
            run = queue_run(session, study, annotator(study, name), documents=documents)
            run_id = run.id
        factory = app.extensions["db_sessionmaker"]
        work(factory, None, once=True, figures=False, trainings=False)
    return run_id


def jobs(app, run_id: int) -> dict[str, Any]:
    """The run's jobs by document external id."""
    from app.db import session_scope
    from app.models import Document, LlmJob

    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(Document.external_id, LlmJob)
            .join(LlmJob, LlmJob.document_id == Document.id)
            .where(LlmJob.run_id == run_id)
        ).all()
        for _, job in rows:
            session.expunge(job)
    return {external: job for external, job in rows}


def answers(table: dict[str, list[dict[str, Any]]]):
    """A stand-in script answering each segment with its items (none for the others)."""

    def script(segment: str, number: int) -> Reply:
        return Reply(content=json.dumps({"errors": table.get(segment, [])}))

    return script


def _word_edges(text: str) -> list[int]:
    """Offsets where a word-boundary window may start or end (around whitespace)."""
    edges = {0, len(text)}
    for i, ch in enumerate(text):
        if ch.isspace():
            edges.update((i, i + 1))
    return sorted(edges)


def quote_of(text: str, start: int, end: int) -> dict[str, str] | None:
    """The quote of [start, end) and, when it occurs more than once, the smallest window of
    whole words around it that names it alone (as an annotator's ``context``); None when
    no window does."""
    quote = text[start:end]
    if locate_exactly(text, quote)[0] == (start, end):
        return {"span": quote, "context": ""}
    edges = _word_edges(text)
    lefts = sorted((e for e in edges if e <= start), reverse=True)
    rights = [e for e in edges if e >= end]
    for width in range(1, len(edges) + 1):
        for left in lefts[:width]:
            for right in rights[:width]:
                context = text[left:right].strip()
                if locate_exactly(text, quote, context)[0] == (start, end):
                    return {"span": quote, "context": context}
    return None


def earlier_quote(segments: list[str], index: int, start: int, words: int = 4) -> str | None:
    """A run of ``words`` words before the mark that occurs once in the text before it (this
    segment before ``start``, then the earlier segments): a pair's earlier span."""
    region = [segments[k] for k in range(index)] + [segments[index][:start]]
    for k in range(len(region) - 1, -1, -1):
        tokens = region[k].split()
        for i in range(len(tokens) - words, -1, -1):
            quote = " ".join(tokens[i : i + words])
            if sum(len(occurrences(part, quote)) for part in region) == 1:
                return quote
    return None
