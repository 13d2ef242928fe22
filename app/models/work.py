"""A worker's work: assignments, annotations, suggestion events, active time, practice feedback."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.models.base import Base, SpanColumns, utcnow

if TYPE_CHECKING:  # relationships name these; SQLAlchemy resolves them by name
    from app.models.studies import Document, Study


class Assignment(Base):
    """One worker doing one document in one study; identified by its unguessable token."""

    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("study_id", "document_id", "worker_id"),
        # An arrival's reads under the study's lock (app/annotation/arrival_sql.py): the
        # worker's assignments in the study, and the study's active ones (the release of
        # stale holds), without scanning every assignment of the study. Neither indexes a
        # column the hot writes change (last_seen_at, engaged_at, current_segment), so their
        # UPDATEs stay heap-only (HOT) on Postgres.
        Index("ix_assignments_study_worker", "study_id", "worker_id"),
        # Not a partial index on study_id WHERE status = 'active': with it every claim of the
        # hot path cost Postgres ~0.2 ms more CPU (measured with bench/server_cpu.py).
        Index("ix_assignments_study_status", "study_id", "status"),
        Index("ix_assignments_session_id", "session_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(String(64), unique=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    worker_id: Mapped[str] = mapped_column(String(200))
    # The participant's session this document belongs to (app/annotation/sessions.py); None
    # for a researcher's open through an API key, a one-document study's API arrival and work
    # stored before sessions existed.
    session_id: Mapped[int | None] = mapped_column(
        ForeignKey("work_sessions.id", ondelete="SET NULL")
    )
    platform: Mapped[str] = mapped_column(String(20), default="generic")
    platform_data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    condition: Mapped[str | None] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20), default="active")
    current_segment: Mapped[int] = mapped_column(Integer, default=0)
    completion_code: Mapped[str | None] = mapped_column(String(64))
    scores: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # When the worker first did something (annotation, position, heartbeat); until then the
    # slot is only held briefly (app/annotation/assigning.py).
    engaged_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    study: Mapped[Study] = relationship()
    document: Mapped[Document] = relationship()
    annotations: Mapped[list[Annotation]] = relationship(
        back_populates="assignment", order_by="Annotation.id"
    )


class Annotation(SpanColumns, Base):
    """One error span a worker marked, optionally paired with an earlier span (the span's
    columns: :class:`~app.models.base.SpanColumns`)."""

    __tablename__ = "annotations"
    __table_args__ = (
        UniqueConstraint("assignment_id", "client_id"),
        Index("ix_annotations_assignment_live", "assignment_id", "removed_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    # A multi-label mark is one row per category: the rows after the first hold the first
    # row's id here (None: the row is its own mark). docs/METRICS.md, "Multi-label marks".
    mark: Mapped[int | None] = mapped_column(Integer)
    client_id: Mapped[str] = mapped_column(String(100))
    suggestion_id: Mapped[int | None] = mapped_column(
        ForeignKey("suggestions.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    removed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    assignment: Mapped[Assignment] = relationship(back_populates="annotations")


class SuggestionEvent(Base):
    """What became of a suggestion shown to a worker: shown, accepted or dismissed."""

    __tablename__ = "suggestion_events"
    __table_args__ = (UniqueConstraint("assignment_id", "suggestion_id", "event"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    suggestion_id: Mapped[int] = mapped_column(ForeignKey("suggestions.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SegmentTime(Base):
    """A worker's active seconds on one segment of an assignment (visible, focused, idle gaps
    over a minute left out); a row also records that the segment was seen."""

    __tablename__ = "segment_times"
    __table_args__ = (UniqueConstraint("assignment_id", "segment"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    segment: Mapped[int] = mapped_column(Integer)
    active_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PracticeCheck(Base):
    """A worker asked for feedback on one segment of a practice document: from then on that
    segment's marks are frozen (app/annotation/practice.py) and ``feedback`` is what they saw."""

    __tablename__ = "practice_checks"
    __table_args__ = (UniqueConstraint("assignment_id", "segment"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    segment: Mapped[int] = mapped_column(Integer)
    feedback: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
