"""The counted work of a study for its report, a batch of whole documents at a time,
so that its memory does not grow with the study.

Four streamed statements (server-side cursors on Postgres, :func:`app.rules.work.stream`)
walk the counted documents in order: the documents, their segments, the live annotations
of their submitted assignments (:func:`app.rules.work.select_work`) and their detector
suggestions. They are merged document by document and handed out in batches of at most
:data:`BATCH_DOCUMENTS` documents or about :data:`BATCH_MARKS` annotations, so the report
holds one batch of the study's work at a time, never all of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Document, Study, Suggestion
from app.rules.work import (
    Work,
    columns,
    document_filter,
    select_documents,
    select_segments,
    select_work,
    stream,
)

BATCH_DOCUMENTS = 500
BATCH_MARKS = 20_000
MARK_COLUMNS = ("assignment_id", "worker_id", "id", "segment", "start", "end", "category", "text")
SUGGESTION_COLUMNS = tuple(
    getattr(Suggestion, name).label(name)
    for name in (
        "id",
        "segment",
        "start",
        "end",
        "category",
        "detector",
        "text",
        "score",
        "detector_version",
    )
)


@dataclass
class CountedDocument:
    """A document that counts: its segments, the live annotations of its submitted
    assignments (rows: the document id, then :data:`MARK_COLUMNS`, by annotation id) and its
    suggestions (rows: the document id, then :data:`SUGGESTION_COLUMNS`, by id)."""

    id: int
    external_id: str
    source: str
    is_gold: bool
    segments: list[str] = field(default_factory=list)
    marks: list[Any] = field(default_factory=list)
    suggestions: list[Any] = field(default_factory=list)


class _Aligned:
    """Rows grouped by document id (first column), taken in the documents' order."""

    def __init__(self, rows: Iterator[Any]):
        self.groups = groupby(rows, key=itemgetter(0))
        self.head = next(self.groups, None)

    def take(self, document_id: int) -> list[Any]:
        if self.head is None or self.head[0] != document_id:
            return []
        found = list(self.head[1])
        self.head = next(self.groups, None)
        return found


def counted_batches(
    session: Session,
    study: Study,
    work: Work,
    *,
    batch_documents: int = BATCH_DOCUMENTS,
    batch_marks: int = BATCH_MARKS,
) -> Iterator[list[CountedDocument]]:
    """The documents that count for ``work`` (workers' layer), in order, in batches."""
    sql = columns(study, work)
    documents = stream(
        session,
        select_documents(
            study, work, Document.id, Document.external_id, Document.source, Document.is_gold
        ),
    )
    segments = _Aligned(stream(session, select_segments(study, work)))
    marks = _Aligned(
        stream(
            session,
            select_work(
                study,
                work,
                sql["document_id"].label("document_id"),
                *(sql[name].label(name) for name in MARK_COLUMNS),
                marks_only=True,
            ),
        )
    )
    suggestions = _Aligned(
        stream(
            session,
            select(Suggestion.document_id.label("document_id"), *SUGGESTION_COLUMNS)
            .join(Document, Document.id == Suggestion.document_id)
            .where(*document_filter(study, work))
            .order_by(Document.position, Document.id, Suggestion.id),
        )
    )
    batch: list[CountedDocument] = []
    size = 0
    for document_id, external_id, source, is_gold in documents:
        found = CountedDocument(document_id, external_id, source or "", bool(is_gold))
        found.segments = [row[1] for row in segments.take(document_id)]
        found.marks = sorted(marks.take(document_id), key=lambda row: row.id)
        found.suggestions = suggestions.take(document_id)
        batch.append(found)
        size += len(found.marks) + len(found.suggestions)
        if len(batch) >= batch_documents or size >= batch_marks:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
