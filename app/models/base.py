"""The declarative base, the naming convention and the time helpers every model shares."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Integer, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


def isoformat(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC; SQLite hands timestamps back naive, so naive means UTC."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def span_place(span: Any) -> dict[str, Any]:
    """Where a span stands and what it says (segment, offsets, text, category) under the names
    of :class:`PlaceColumns`: every JSON body and row insert that carries a span spells these
    five keys this one way, whatever object (a row, a suggestion, an imported span) holds them."""
    return {
        "segment": span.segment,
        "start": span.start,
        "end": span.end,
        "text": span.text,
        "category": span.category,
    }


def span_columns(columns: Any) -> tuple[Any, ...]:
    """The :func:`span_place` five of a table with :class:`PlaceColumns` (its ``.c``),
    the offsets labelled with their mapped names: a Core select of spans reads these, so its
    rows answer to the same names as the ORM objects."""
    return (
        columns.segment,
        columns.start_offset.label("start"),
        columns.end_offset.label("end"),
        columns.text,
        columns.category,
    )


def paired_columns(columns: Any) -> tuple[Any, ...]:
    """The earlier span a span may be paired with (:class:`PairedColumns`; the
    end segment aside), for a Core select beside :func:`span_columns`."""
    return (columns.paired_segment, columns.paired_start, columns.paired_end, columns.paired_text)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class PlaceColumns:
    """Where a span stands and what it says (offsets in code points, end exclusive): the
    columns :func:`span_place` and :func:`span_columns` read, declared once for every table
    of spans (annotations, the adjudicated layer, suggestions)."""

    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column("start_offset", Integer)
    end: Mapped[int] = mapped_column("end_offset", Integer)
    text: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(100))


class PairedColumns:
    """The earlier span a span may be paired with (:func:`paired_columns`)."""

    paired_segment: Mapped[int | None] = mapped_column(Integer)
    paired_start: Mapped[int | None] = mapped_column(Integer)
    paired_end: Mapped[int | None] = mapped_column(Integer)
    paired_text: Mapped[str | None] = mapped_column(Text)


class SpanColumns(PlaceColumns, PairedColumns):
    """The columns of a marked span, optionally paired with an earlier span: a worker's
    annotation and a row of the adjudicated layer hold the same span the same way, so exports
    and scores read both alike."""

    # Set only when the earlier span runs on into later segments (app/annotation/pairing.py):
    # it ends at paired_end in this segment. None: it ends in paired_segment.
    paired_end_segment: Mapped[int | None] = mapped_column(Integer)
    comment: Mapped[str] = mapped_column(Text, default="")
    # The values of the category's declared attributes (docs/FORMATS.md), None when none.
    attributes: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class QueueColumns:
    """The columns the worker's queues claim by (app/queue.py, the one claim rule):
    status (queued, running, done, failed), attempts, when it may run next, who claimed it
    and when, when it finished."""

    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    run_after: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
