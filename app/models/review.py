"""The researcher's review: the adjudicated layer, documents' review status, worker verdicts and their log."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, SpanColumns, utcnow


class AdjudicatedError(SpanColumns, Base):
    """One row of a document's adjudicated layer (app/quality/adjudication.py): a candidate
    accepted (as marked or edited) or rejected, or an error no worker marked (no candidate).
    ``version`` grows with every change: a write naming an older one is a conflict."""

    __tablename__ = "adjudicated_errors"
    __table_args__ = (UniqueConstraint("document_id", "candidate"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    candidate: Mapped[str | None] = mapped_column(String(64))
    decision: Mapped[str] = mapped_column(String(20))  # accepted | rejected
    origin: Mapped[str] = mapped_column(String(20))  # reviewed | auto | added
    version: Mapped[int] = mapped_column(Integer, default=1)
    decided_by: Mapped[str] = mapped_column(String(320))
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DocumentReview(Base):
    """A document's review status (no row: unreviewed), who set it last and when."""

    __tablename__ = "document_reviews"

    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True
    )
    status: Mapped[str] = mapped_column(String(20))  # in_review | done
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_by: Mapped[str] = mapped_column(String(320))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WorkerReview(Base):
    """A researcher's verdict on one worker in one study: approved / rejected, blocked, note."""

    __tablename__ = "worker_reviews"
    __table_args__ = (UniqueConstraint("study_id", "worker_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    worker_id: Mapped[str] = mapped_column(String(200))
    status: Mapped[str | None] = mapped_column(String(20))
    blocked: Mapped[bool] = mapped_column(Boolean, default=False)
    note: Mapped[str] = mapped_column(Text, default="")
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WorkerAction(Base):
    """One management action on a worker (approve, reject, block, unblock, note): who, when."""

    __tablename__ = "worker_actions"

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    worker_id: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(20))
    detail: Mapped[str] = mapped_column(Text, default="")
    actor: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
