"""LLM annotators of a study (app/llm/): their runs, one job per document, and the answers
they were given, cached by request.

An annotator's marks are not here: they are annotations of its own assignments (worker ID
``llm:<name>``), stored through the add action like a human's."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, QueueColumns, utcnow


class LlmRun(QueueColumns, Base):
    """One ``marginalia llm annotate`` (or the Settings page's button): an annotator over
    some documents of a study, then its calibration.

    ``config`` is the annotator's settings as the run used them (the endpoint, model,
    temperature, preset; never a key: only the name of the environment variable holding it).
    ``status``: ``waiting`` while its documents' jobs run, then ``queued`` for the
    calibration, ``running``, ``done`` or ``failed`` (the queue rules of
    app/queue.py); ``calibration`` is the figures it computed (app/llm/calibration.py)."""

    __tablename__ = "llm_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    annotator: Mapped[str] = mapped_column(String(100))
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    documents: Mapped[int] = mapped_column(Integer, default=0)
    requested_by: Mapped[str | None] = mapped_column(String(320))
    status: Mapped[str] = mapped_column(String(20), default="waiting", index=True)
    calibration: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    last_error: Mapped[str | None] = mapped_column(Text)


class LlmJob(QueueColumns, Base):
    """One document of a run. ``outcome``: ``annotated`` (its marks stored and the assignment
    submitted), ``skipped`` (the annotator had submitted it before) or ``failed`` (why in
    ``last_error``). Counts: ``marks`` stored, ``unlocated`` / ``ambiguous`` quotes,
    ``refused`` marks (the study's rules said no), ``problems`` listing them. Cost:
    ``prompt_tokens`` / ``completion_tokens`` / ``seconds`` spent by this job (0 for cached
    answers), ``answer_*`` what the answers its marks come from cost when they were made."""

    __tablename__ = "llm_jobs"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("llm_runs.id", ondelete="CASCADE"), index=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    outcome: Mapped[str | None] = mapped_column(String(20))
    marks: Mapped[int] = mapped_column(Integer, default=0)
    unlocated: Mapped[int] = mapped_column(Integer, default=0)
    ambiguous: Mapped[int] = mapped_column(Integer, default=0)
    refused: Mapped[int] = mapped_column(Integer, default=0)
    problems: Mapped[list[Any]] = mapped_column(JSON, default=list)
    requests: Mapped[int] = mapped_column(Integer, default=0)
    cache_hits: Mapped[int] = mapped_column(Integer, default=0)
    retries: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    answer_prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    answer_completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    answer_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    last_error: Mapped[str | None] = mapped_column(Text)


class LlmAnswer(Base):
    """An endpoint's answer to one request, kept by ``key`` (sha256 of the model, the exact
    messages and the request's options: model_server/llm_client.py's ``cache_key``) with the
    document it was about and what it cost when it was made. Only answers that parsed are
    kept, so a malformed one is asked again."""

    __tablename__ = "llm_answers"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)
    model: Mapped[str] = mapped_column(String(200))
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    choice: Mapped[dict[str, Any]] = mapped_column(JSON)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
