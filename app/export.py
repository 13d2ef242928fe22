"""Streaming exports of a study's annotations: CSV and JSONL rows, SNaC-shaped JSON.

Rows are read with Core queries in chunks (server-side cursors on Postgres), so a study of a
million annotations streams in constant memory.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from itertools import islice
from typing import Any

from sqlalchemy import (
    BigInteger,
    Select,
    String,
    Text,
    case,
    cast,
    extract,
    func,
    literal,
    or_,
    select,
)
from sqlalchemy.orm import Session

from app.models import Annotation, Assignment, Document, Segment, Study, isoformat

CSV_COLUMNS = (
    "study", "document", "segment", "span_text", "span_start", "span_end", "category",
    "paired_segment", "paired_text", "paired_start", "paired_end", "comment", "worker_id",
    "assignment", "completion_code", "created_at",
)
FORMATS = ("csv", "jsonl", "snac")
CHUNK_ROWS = 2_000


def _export_select(study: Study, *columns: Any) -> Select:
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
            Annotation.id.is_not(None) | (Assignment.status == "submitted"),
        )
        .order_by(
            Document.position, Assignment.id, Annotation.segment, Annotation.start, Annotation.id
        )
    )


def _row_values(session: Session, study: Study) -> Iterator[tuple[Any, ...]]:
    """CSV_COLUMNS values of each exported row, typed (None for empty fields).

    Rows stream from a Core query (a server-side cursor on Postgres) in chunks of CHUNK_ROWS,
    no ORM objects.
    """
    query = _export_select(
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


def _python_quotes(char: str) -> bool:
    """Whether the csv module (as iter_csv configures it) quotes a field holding ``char``."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([f"a{char}b", "x"])
    return buffer.getvalue().startswith('"')


def _sql_csv_field(value: Any) -> Any:
    """SQL for one CSV field, quoted exactly as the csv module quotes it ('' for NULL)."""
    if not isinstance(value.type, String):
        return func.coalesce(cast(value, Text), "")
    special = [c for c in (",", '"', "\n", "\r", "\t", " ", ";") if _python_quotes(c)]
    needs_quotes = or_(*(func.strpos(value, c) > 0 for c in special))
    quoted = literal('"').op("||")(func.replace(value, '"', '""')).op("||")(literal('"'))
    return func.coalesce(case((needs_quotes, quoted), else_=value), "")


def _sql_isoformat(moment: Any) -> Any:
    """SQL for models.isoformat(): UTC, ISO 8601, microseconds only when non-zero."""
    utc = func.timezone("UTC", moment)
    seconds = func.to_char(utc, 'YYYY-MM-DD"T"HH24:MI:SS', type_=String)
    fraction = case(
        (func.mod(cast(extract("microseconds", moment), BigInteger), 1_000_000) == 0, ""),
        else_=func.to_char(utc, ".US", type_=String),
    )
    return seconds.op("||")(fraction).op("||")(literal("+00:00"))


def _postgres_csv_lines(session: Session, study: Study) -> Iterator[list[str]] | None:
    """On Postgres (psycopg2): the CSV rows formatted by the server, CHUNK_ROWS lines at a
    time from a server-side cursor; the same bytes as the csv module writes, about five times
    faster. None on other databases."""
    connection = session.connection()
    if connection.dialect.name != "postgresql" or connection.dialect.driver != "psycopg2":
        return None
    fields = [
        literal(study.slug, String), Document.external_id, Annotation.segment,
        Annotation.text, Annotation.start, Annotation.end, Annotation.category,
        Annotation.paired_segment, Annotation.paired_text, Annotation.paired_start,
        Annotation.paired_end, Annotation.comment, Assignment.worker_id, Assignment.token,
        Assignment.completion_code,
    ]
    created = func.coalesce(Annotation.created_at, Assignment.submitted_at)
    line = func.concat_ws(
        ",", *(_sql_csv_field(f) for f in fields), func.coalesce(_sql_isoformat(created), "")
    )
    compiled = _export_select(study, line).compile(dialect=connection.dialect)
    raw = connection.connection.dbapi_connection

    def lines() -> Iterator[list[str]]:
        with raw.cursor(name=f"marginalia_export_{study.id}") as cursor:
            cursor.itersize = CHUNK_ROWS
            cursor.execute(str(compiled), compiled.params)
            while rows := cursor.fetchmany(CHUNK_ROWS):
                yield [row[0] for row in rows]

    return lines()


def _annotation_rows(session: Session, study: Study) -> Iterator[dict[str, Any]]:
    """Each exported row as a dict keyed by CSV_COLUMNS (typed, None for empty fields)."""
    for values in _row_values(session, study):
        yield dict(zip(CSV_COLUMNS, values, strict=True))


def iter_csv(session: Session, study: Study) -> Iterator[str]:
    """CSV text in chunks: a header, then one row per live annotation (CONTRACT columns)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")  # writes None as an empty field
    writer.writerow(CSV_COLUMNS)
    formatted = _postgres_csv_lines(session, study)
    if formatted is not None:
        yield buffer.getvalue()
        for lines in formatted:
            yield "\n".join(lines) + "\n"
        return
    rows = _row_values(session, study)
    while True:
        chunk = list(islice(rows, CHUNK_ROWS))
        writer.writerows(chunk)
        if len(chunk) < CHUNK_ROWS:
            break
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def iter_jsonl(session: Session, study: Study) -> Iterator[str]:
    """One JSON object per line with the CSV columns, typed (nulls for empty fields)."""
    lines: list[str] = []
    for row in _annotation_rows(session, study):
        lines.append(json.dumps(row, ensure_ascii=False))
        if len(lines) >= CHUNK_ROWS:
            yield "\n".join(lines) + "\n"
            lines = []
    if lines:
        yield "\n".join(lines) + "\n"


def snac_document_errors(
    texts: list[str], marks: list[tuple[str, int, str, str, str | None]]
) -> dict[str, Any]:
    """Aggregate one document's (worker, segment, span, category, paired text) marks.

    Identical (span text, category) pairs in a segment merge; ``votes`` counts the distinct
    workers who marked them; paired categories list each of those workers' earlier span in
    ``antecedants`` (SNaC's spelling).
    """
    merged: dict[tuple[int, str, str], dict[str, Any]] = {}
    for worker, segment, span, category, paired_text in marks:
        entry = merged.setdefault(
            (segment, span, category), {"workers": {}, "paired": False}
        )
        if worker not in entry["workers"]:
            entry["workers"][worker] = paired_text
        entry["paired"] = entry["paired"] or paired_text is not None
    document: dict[str, Any] = {str(i): {"text": t, "errors": []} for i, t in enumerate(texts)}
    for (segment, span, category), entry in merged.items():
        error: dict[str, Any] = {
            "span": span, "error_type": category, "votes": len(entry["workers"])
        }
        if entry["paired"]:
            error["antecedants"] = [p for p in entry["workers"].values() if p is not None]
        document[str(segment)]["errors"].append(error)
    return document


def build_snac(session: Session, study: Study) -> dict[str, Any]:
    """The SNaC release's JSON shape over all submitted assignments of the study."""
    documents = session.scalars(
        select(Document)
        .where(
            Document.study_id == study.id,
            Document.id.in_(
                select(Assignment.document_id).where(
                    Assignment.study_id == study.id, Assignment.status == "submitted"
                )
            ),
        )
        .order_by(Document.position)
    ).all()
    result: dict[str, Any] = {}
    for document in documents:
        texts = list(
            session.scalars(
                select(Segment.text)
                .where(Segment.document_id == document.id)
                .order_by(Segment.index)
            )
        )
        marks = session.execute(
            select(
                Assignment.worker_id,
                Annotation.segment,
                Annotation.text,
                Annotation.category,
                Annotation.paired_text,
            )
            .join(Assignment, Assignment.id == Annotation.assignment_id)
            .where(
                Assignment.document_id == document.id,
                Assignment.status == "submitted",
                Annotation.removed_at.is_(None),
            )
            .order_by(Annotation.segment, Annotation.start, Annotation.id)
        ).all()
        result[document.external_id] = snac_document_errors(texts, [tuple(m) for m in marks])
    return result


def iter_export(session: Session, study: Study, fmt: str) -> Iterator[str]:
    """Text chunks of the export in ``fmt`` (csv, jsonl or snac)."""
    if fmt == "csv":
        yield from iter_csv(session, study)
    elif fmt == "jsonl":
        yield from iter_jsonl(session, study)
    elif fmt == "snac":
        yield json.dumps(build_snac(session, study), ensure_ascii=False, indent=1) + "\n"
    else:
        raise ValueError(f"unknown export format {fmt!r}")
