"""What the interchange writers share: each document with its text and every submitted
worker's live annotations (thresh, labelstudio, brat, parquet)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.formats.rows import ADJUDICATED, adjudicated_select, check_layer
from app.formats.wholetext import Layout, layout_of
from app.models import (
    AdjudicatedError,
    Annotation,
    Assignment,
    Document,
    DocumentReview,
    Segment,
    Study,
    isoformat,
)


@dataclass(frozen=True)
class Mark:
    """One live annotation of a submitted assignment."""

    worker_id: str
    segment: int
    start: int
    end: int
    text: str
    category: str
    paired_segment: int | None
    paired_start: int | None
    paired_end: int | None
    paired_text: str | None
    comment: str
    created_at: str | None

    @property
    def paired(self) -> tuple[int, int, int, str] | None:
        if self.paired_segment is None or self.paired_start is None or self.paired_end is None:
            return None
        return (self.paired_segment, self.paired_start, self.paired_end, self.paired_text or "")


@dataclass
class AnnotatedDocument:
    """A document, its segments and its submitted workers' marks (workers in order)."""

    external_id: str
    segments: list[str]
    meta: dict[str, Any]
    is_gold: bool
    workers: dict[str, list[Mark]] = field(default_factory=dict)

    @property
    def layout(self) -> Layout:
        return layout_of(self.segments, self.meta)

    @property
    def marks(self) -> list[Mark]:
        return [mark for marks in self.workers.values() for mark in marks]


def annotated_documents(
    session: Session, study: Study, layer: str = "workers"
) -> Iterator[AnnotatedDocument]:
    """Every document of the study in order, with the marks of its submitted assignments
    (``layer`` "adjudicated": the accepted rows of its adjudicated layer as one worker,
    ``adjudicated``, on documents with a review)."""
    check_layer(layer)
    documents = session.execute(
        select(Document.id, Document.external_id, Document.meta, Document.is_gold)
        .where(Document.study_id == study.id)
        .order_by(Document.position, Document.id)
    ).all()
    texts: dict[int, list[str]] = defaultdict(list)
    for document_id, text in session.execute(
        select(Segment.document_id, Segment.text)
        .join(Document, Document.id == Segment.document_id)
        .where(Document.study_id == study.id)
        .order_by(Segment.document_id, Segment.index)
    ):
        texts[document_id].append(text)
    workers = _adjudicated(session, study) if layer == ADJUDICATED else _workers(session, study)
    for document_id, external_id, meta, is_gold in documents:
        yield AnnotatedDocument(
            external_id, texts[document_id], meta or {}, is_gold, workers.get(document_id, {})
        )


def _adjudicated(session: Session, study: Study) -> dict[int, dict[str, list[Mark]]]:
    workers: dict[int, dict[str, list[Mark]]] = defaultdict(dict)
    for (document_id,) in session.execute(
        select(DocumentReview.document_id)
        .join(Document, Document.id == DocumentReview.document_id)
        .where(Document.study_id == study.id)
    ):
        workers[document_id][ADJUDICATED] = []
    row = AdjudicatedError
    query = adjudicated_select(
        study,
        row.document_id,
        row.segment,
        row.start,
        row.end,
        row.text,
        row.category,
        row.paired_segment,
        row.paired_start,
        row.paired_end,
        row.paired_text,
        row.comment,
        row.decided_at,
    )
    for values in session.execute(query):
        mark = Mark(ADJUDICATED, *values[1:11], isoformat(values[11]))
        workers[values[0]].setdefault(ADJUDICATED, []).append(mark)
    return workers


def _workers(session: Session, study: Study) -> dict[int, dict[str, list[Mark]]]:
    workers: dict[int, dict[str, list[Mark]]] = defaultdict(dict)
    for document_id, worker_id in session.execute(
        select(Assignment.document_id, Assignment.worker_id)
        .where(Assignment.study_id == study.id, Assignment.status == "submitted")
        .order_by(Assignment.document_id, Assignment.id)
    ):
        workers[document_id][worker_id] = []
    rows = session.execute(
        select(
            Assignment.document_id,
            Assignment.worker_id,
            Annotation.segment,
            Annotation.start,
            Annotation.end,
            Annotation.text,
            Annotation.category,
            Annotation.paired_segment,
            Annotation.paired_start,
            Annotation.paired_end,
            Annotation.paired_text,
            Annotation.comment,
            Annotation.created_at,
        )
        .join(Assignment, Assignment.id == Annotation.assignment_id)
        .where(
            Assignment.study_id == study.id,
            Assignment.status == "submitted",
            Annotation.removed_at.is_(None),
        )
        .order_by(Assignment.id, Annotation.segment, Annotation.start, Annotation.id)
    )
    for row in rows:
        mark = Mark(row[1], *row[2:12], isoformat(row[12]))
        workers[row[0]][row[1]].append(mark)
    return workers
