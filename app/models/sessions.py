"""A participant's session: one visit from a crowd platform, in which they do up to K
documents (the study's documents per session) and get one completion code at the end."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow


class WorkSession(Base):
    """One arrival's session: consent, the training phase once, then up to ``documents``
    documents, each an assignment of its own (``Assignment.session_id``), and one code.

    Whether it is finished, returned or screened out is read from its assignments
    (:func:`app.annotation.sessions.session_state`); stored here is only what nothing else
    knows: how many documents it was opened for (the study's setting then), its code, and
    whether it ran out of documents early."""

    __tablename__ = "work_sessions"
    __table_args__ = (Index("ix_work_sessions_study_worker", "study_id", "worker_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    worker_id: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(20), default="generic")
    documents: Mapped[int] = mapped_column(Integer, default=1)
    completion_code: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # No document was left for the worker before ``documents`` were done, and the study lets
    # a session end shorter: the session ended here, with its code.
    ended_early_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
