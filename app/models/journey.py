"""Around the documents: consent and questionnaire answers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow


class Consent(Base):
    """A worker's answer to a study's consent text: which text (its SHA-256), yes or no, when."""

    __tablename__ = "consents"
    __table_args__ = (UniqueConstraint("study_id", "worker_id", "text_hash"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
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
