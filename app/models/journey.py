"""Around the documents: consent and questionnaire answers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow


class Consent(Base):
    """A worker's answer to a study's consent text: which text (its SHA-256), yes or no, when.

    An agreement is stored with the session it opened (``session_id``), by the arrival that
    carried the consent form's signed answer; a decline has no session. A row is a record of
    what was answered, never looked up to let a worker ID in (docs/SECURITY.md, "Consent")."""

    __tablename__ = "consents"
    __table_args__ = (Index("ix_consents_study_worker", "study_id", "worker_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    session_id: Mapped[int | None] = mapped_column(
        ForeignKey("work_sessions.id", ondelete="CASCADE")
    )
    worker_id: Mapped[str] = mapped_column(String(200))
    text_hash: Mapped[str] = mapped_column(String(64))
    agreed: Mapped[bool] = mapped_column(Boolean)
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class QuestionnaireAnswer(Base):
    """One answer to one question of a post-document or post-study questionnaire."""

    __tablename__ = "questionnaire_answers"
    __table_args__ = (UniqueConstraint("assignment_id", "stage", "question"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    # "document" (after each document) or "study" (once, after the worker's last document)
    stage: Mapped[str] = mapped_column(String(20))
    question: Mapped[str] = mapped_column(String(100))
    answer: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
