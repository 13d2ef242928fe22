"""The detector and the background queues: suggestions, detector versions, detection, import
and figure jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, PairedColumns, PlaceColumns, QueueColumns, utcnow


class Suggestion(PlaceColumns, PairedColumns, Base):
    """A span the detector suspects, in one segment, under one of the study's categories."""

    __tablename__ = "suggestions"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    score: Mapped[float] = mapped_column(Float, default=1.0)
    detector: Mapped[str] = mapped_column(String(100))
    detector_version: Mapped[str] = mapped_column(String(100))
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DetectorVersion(Base):
    """One version of a detector that stored suggestions, with what is known of its quality:
    ``calibration`` is its confident thresholds (per category the ``precision_90`` operating
    point, chosen out-of-fold on train, with its dev figures, or none and why; see
    ``model_server.operating_points.confident_calibration``), ``{}`` when the version has none."""

    __tablename__ = "detector_versions"
    __table_args__ = (UniqueConstraint("detector", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    detector: Mapped[str] = mapped_column(String(100))
    version: Mapped[str] = mapped_column(String(100))
    calibration: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DetectorModel(Base):
    """A detector learned from a study's curated work (``marginalia detector train --study``),
    stored for the study that uses it (``marginalia study detector``): its ``head.json``
    (``payload``) and model card, in the database so that every worker node reads the same
    model (no shared disk on Heroku or several Compose workers). The study points to the one
    in use with ``studies.settings["detector_model"]`` (its id)."""

    __tablename__ = "detector_models"
    __table_args__ = (UniqueConstraint("study_id", "digest"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(100))
    digest: Mapped[str] = mapped_column(String(64))
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    card: Mapped[str | None] = mapped_column(Text)
    created_by: Mapped[str | None] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DetectorTraining(QueueColumns, Base):
    """A retraining of a study's learned detector as its curated work grows
    (``marginalia study detector SLUG --retrain-every N``; app/detection/retraining.py): queued
    when the study's curated documents reach the last training's count + N, run by a worker
    (the queue rules of app/queue.py), which stores the new model and makes the study
    use it. ``documents``: the curated documents counted when it was queued; ``model_id``: the
    model it made."""

    __tablename__ = "detector_trainings"

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    documents: Mapped[int] = mapped_column(Integer)
    model_id: Mapped[int | None] = mapped_column(
        ForeignKey("detector_models.id", ondelete="SET NULL")
    )
    last_error: Mapped[str | None] = mapped_column(Text)


class DetectionJob(QueueColumns, Base):
    """One document waiting for (or done with) the detector; claimed by workers."""

    __tablename__ = "detection_jobs"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    last_error: Mapped[str | None] = mapped_column(Text)


class ImportJob(QueueColumns, Base):
    """An uploaded document file waiting to be parsed and stored by the worker.

    ``status``: queued, running, done or failed. The upload's bytes stay in ``payload``
    (the database, not the disk: Heroku's disk is ephemeral) until the job ends.
    """

    __tablename__ = "import_jobs"

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    filename: Mapped[str] = mapped_column(String(300))
    format: Mapped[str] = mapped_column(String(20), default="auto")
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    total_documents: Mapped[int | None] = mapped_column(Integer)
    processed_documents: Mapped[int] = mapped_column(Integer, default=0)
    counts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str | None] = mapped_column(String(320))


class FigureJob(QueueColumns, Base):
    """A study's slow figures (γ, unitizing α, MACE, Dawid-Skene: app/quality/figures.py), one
    row per study and practice setting: the job that computes them and their cache.

    ``status``: queued, running, done or failed (the queue rules of app/queue.py).
    ``result`` is the last computation and ``result_key`` the counted-work state it was made
    from (a hash): the figures are current while it equals the state's key now."""

    __tablename__ = "figure_jobs"
    __table_args__ = (UniqueConstraint("study_id", "include_practice"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    include_practice: Mapped[bool] = mapped_column(Boolean, default=False)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    result_key: Mapped[str | None] = mapped_column(String(64))
    seconds: Mapped[float | None] = mapped_column(Float)
    last_error: Mapped[str | None] = mapped_column(Text)
    # the whole report (app/quality/served.py): its JSON text (read only when asked for: it
    # grows with the study), what the dashboard shows of it (app/quality/digest.py), the
    # study's last work change it saw (app/models/changes.py), when and in how long it was
    # computed
    report: Mapped[str | None] = mapped_column(Text, deferred=True)
    digest: Mapped[str | None] = mapped_column(Text)
    report_change: Mapped[int | None] = mapped_column(Integer)
    report_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    report_seconds: Mapped[float | None] = mapped_column(Float)
    # the slow figures asked for (the dashboard's button, app/quality/figures.py:enqueue):
    # a job queued only because the work changed recomputes the report alone
    with_figures: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class ConsensusUnit(Base):
    """A unit of the worker models (a sentence under a category) some worker marked, with
    MACE's posterior that it is an error, as the study's last figure job computed it
    (app/quality/figures.py, counted work without practice): the ``consensus`` export layer
    is the units at or above a posterior (app/rules/work.py)."""

    __tablename__ = "consensus_units"

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column(Integer)
    end: Mapped[int] = mapped_column(Integer)
    category: Mapped[str] = mapped_column(String(100))
    posterior: Mapped[float] = mapped_column(Float)
    marked: Mapped[int] = mapped_column(Integer)  # how many workers labelled it an error
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DocumentFigures(Base):
    """One document's part of its study's slow figures (app/quality/document_figures.py):
    its γ and unitizing α, the observed disorders of its alignments (the study's figures and
    each pair of its workers) that the study's γ sums, cached per the document's counted-work
    state (``key``, a hash of its texts, workers and marks, the taxonomy and the figures'
    version), so one submission recomputes one document."""

    __tablename__ = "document_figures"

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), unique=True
    )
    key: Mapped[str] = mapped_column(String(64))
    parts: Mapped[dict[str, Any]] = mapped_column(JSON)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
