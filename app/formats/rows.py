"""The exported rows (CONTRACT's CSV columns) read in chunks, shared by the csv and jsonl
exports: a Core query, a server-side cursor on Postgres, constant memory for a million rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from app.models import Annotation, Assignment, Document, Study, isoformat

CSV_COLUMNS = (
    "study",
    "document",
    "segment",
    "span_text",
    "span_start",
    "span_end",
    "category",
    "paired_segment",
    "paired_text",
    "paired_start",
    "paired_end",
    "comment",
    "worker_id",
    "assignment",
    "completion_code",
    "created_at",
)
CHUNK_ROWS = 2_000


def export_select(study: Study, *columns: Any) -> Select:
    """``columns`` over the exported rows, in export order.

    Live annotations in document, assignment, segment, offset order; submitted assignments
    without any live annotation appear once with empty span fields.
    """
    return (
        select(*columns)
        .select_from(Assignment)
        .join(Document, Document.id == Assignment.document_id)
        .outerjoin(
            Annotation,
            (Annotation.assignment_id == Assignment.id) & Annotation.removed_at.is_(None),
        )
        .where(
            Assignment.study_id == study.id,
            Assignment.status != "rejected",  # a rejected worker's work leaves every export
            Annotation.id.is_not(None) | (Assignment.status == "submitted"),
        )
        .order_by(
            Document.position, Assignment.id, Annotation.segment, Annotation.start, Annotation.id
        )
    )


def row_values(session: Session, study: Study) -> Iterator[tuple[Any, ...]]:
    """CSV_COLUMNS values of each exported row, typed (None for empty fields).

    Rows stream from a Core query (a server-side cursor on Postgres) in chunks of CHUNK_ROWS,
    no ORM objects.
    """
    query = export_select(
        study,
        Document.external_id,
        Annotation.segment,
        Annotation.text,
        Annotation.start,
        Annotation.end,
        Annotation.category,
        Annotation.paired_segment,
        Annotation.paired_text,
        Annotation.paired_start,
        Annotation.paired_end,
        Annotation.comment,
        Assignment.worker_id,
        Assignment.token,
        Assignment.completion_code,
        Annotation.created_at,
        Assignment.submitted_at,
    )
    slug = study.slug
    result = (
        session.connection()
        .execution_options(stream_results=True, yield_per=CHUNK_ROWS)
        .execute(query)
    )
    for rows in result.partitions():
        for row in rows:
            yield (slug, *row[:14], isoformat(row[14] or row[15]))


def annotation_rows(session: Session, study: Study) -> Iterator[dict[str, Any]]:
    """Each exported row as a dict keyed by CSV_COLUMNS (typed, None for empty fields)."""
    for values in row_values(session, study):
        yield dict(zip(CSV_COLUMNS, values, strict=True))
