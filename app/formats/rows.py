"""The exported rows (CONTRACT's CSV columns) read in chunks, shared by the csv and jsonl
exports: a Core query, a server-side cursor on Postgres, constant memory for a million rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from app.errors import InvalidInput
from app.models import AdjudicatedError, Annotation, Assignment, Document, Segment, Study, isoformat

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
LAYERS = ("workers", "adjudicated")
ADJUDICATED = "adjudicated"  # the worker_id of the adjudicated layer's rows


def check_layer(layer: str) -> None:
    if layer not in LAYERS:
        raise InvalidInput(f"unknown layer {layer!r} (use {' or '.join(LAYERS)})")


def adjudicated_select(study: Study, *columns: Any) -> Select:
    """``columns`` over the accepted rows of the adjudicated layer, in export order."""
    return (
        select(*columns)
        .join(Document, Document.id == AdjudicatedError.document_id)
        .where(Document.study_id == study.id, AdjudicatedError.decision == "accepted")
        .order_by(
            Document.position,
            Document.id,
            AdjudicatedError.segment,
            AdjudicatedError.start,
            AdjudicatedError.id,
        )
    )


# Optional columns, after CSV_COLUMNS in this order when asked for: the category's label
# from the study's taxonomy, the whole text of the annotated segment, and the segment where
# the paired (earlier) span ends (it may run across segment breaks: paired_end is an offset
# in that segment; empty without a pair).
OPTIONAL_COLUMNS = ("category_label", "segment_text", "paired_end_segment")


def check_columns(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The asked-for optional columns in OPTIONAL_COLUMNS order; unknown names refused."""
    unknown = [n for n in names if n not in OPTIONAL_COLUMNS]
    if unknown:
        raise InvalidInput(
            f"unknown export column {unknown[0]!r}; optional columns: {', '.join(OPTIONAL_COLUMNS)}"
        )
    return tuple(n for n in OPTIONAL_COLUMNS if n in names)


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


def row_values(
    session: Session, study: Study, layer: str = "workers", extra_columns: tuple[str, ...] = ()
) -> Iterator[tuple[Any, ...]]:
    """CSV_COLUMNS values of each exported row, typed (None for empty fields), then the
    ``extra_columns`` asked for (checked names of OPTIONAL_COLUMNS).

    ``layer`` "adjudicated": the accepted rows of the adjudicated layer instead, worker_id
    ``adjudicated``, no assignment or completion code, created_at when decided. Rows stream
    from a Core query (a server-side cursor on Postgres) in chunks of CHUNK_ROWS, no ORM
    objects.
    """
    check_layer(layer)
    if layer == ADJUDICATED:
        yield from _adjudicated_values(session, study, extra_columns)
        return
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
        Annotation.paired_end_segment,
        *([Segment.text] if "segment_text" in extra_columns else []),
    )
    if "segment_text" in extra_columns:  # joined only when asked for
        query = query.outerjoin(
            Segment, (Segment.document_id == Document.id) & (Segment.index == Annotation.segment)
        )
    labels = {c["id"]: c.get("label") for c in (study.taxonomy or {}).get("categories", [])}
    slug = study.slug
    result = (
        session.connection()
        .execution_options(stream_results=True, yield_per=CHUNK_ROWS)
        .execute(query)
    )
    for rows in result.partitions():
        for row in rows:
            extra = {
                "category_label": labels.get(row[5]) if row[5] is not None else None,
                "segment_text": row[17] if len(row) > 17 else None,
                "paired_end_segment": row[6] if row[16] is None else row[16],
            }
            yield (
                slug,
                *row[:14],
                isoformat(row[14] or row[15]),
                *(extra[name] for name in extra_columns),
            )


def _adjudicated_values(
    session: Session, study: Study, extra_columns: tuple[str, ...] = ()
) -> Iterator[tuple[Any, ...]]:
    row = AdjudicatedError
    query = adjudicated_select(
        study,
        Document.external_id,
        row.segment,
        row.text,
        row.start,
        row.end,
        row.category,
        row.paired_segment,
        row.paired_text,
        row.paired_start,
        row.paired_end,
        row.comment,
        row.decided_at,
        row.paired_end_segment,
        *([Segment.text] if "segment_text" in extra_columns else []),
    )
    if "segment_text" in extra_columns:
        query = query.outerjoin(
            Segment, (Segment.document_id == Document.id) & (Segment.index == row.segment)
        )
    labels = {c["id"]: c.get("label") for c in (study.taxonomy or {}).get("categories", [])}
    for values in session.execute(query):
        extra = {
            "category_label": labels.get(values[5]),
            "segment_text": values[13] if len(values) > 13 else None,
            "paired_end_segment": values[6] if values[12] is None else values[12],
        }
        yield (
            study.slug,
            *values[:11],
            ADJUDICATED,
            None,
            None,
            isoformat(values[11]),
            *(extra[name] for name in extra_columns),
        )


def annotation_rows(
    session: Session, study: Study, layer: str = "workers", extra_columns: tuple[str, ...] = ()
) -> Iterator[dict[str, Any]]:
    """Each exported row as a dict keyed by CSV_COLUMNS (typed, None for empty fields), then
    the ``extra_columns`` asked for."""
    names = (*CSV_COLUMNS, *extra_columns)
    for values in row_values(session, study, layer, extra_columns):
        yield dict(zip(names, values, strict=True))
