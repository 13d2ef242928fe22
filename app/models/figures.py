"""A study's maintained figures: its report as last computed, and the job that recomputes it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow


class StudyFigures(Base):
    """The report of one study (with or without a training phase's practice documents) as
    last computed, and the job that recomputes it (app/quality/figures.py).

    ``version`` is the study's **counted-work state**: every write that changes what the
    report counts adds one, in its own transaction (app/documents/work_state.py), and queues
    the job (``status`` queued, ``run_after`` a little later: changes close together share
    one recomputation). The claim rule is the other queues' (app/detection/queue.py). The
    stored ``figures`` (the report as JSON text) are of ``computed_version`` and of the
    study's settings as ``settings_key`` hashed them; they are stale when either differs.
    """

    __tablename__ = "study_figures"
    __table_args__ = (UniqueConstraint("study_id", "include_practice"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    include_practice: Mapped[bool] = mapped_column(Boolean, default=False)
    version: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    run_after: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    claimed_version: Mapped[int | None] = mapped_column(Integer)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    computed_version: Mapped[int | None] = mapped_column(Integer)
    settings_key: Mapped[str | None] = mapped_column(String(64))
    computed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    seconds: Mapped[float | None] = mapped_column(Float)
    figures: Mapped[str | None] = mapped_column(Text, deferred=True)
