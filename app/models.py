"""Typed SQLAlchemy 2.x models: the whole schema in one place.

Offsets are Unicode code-point offsets into a segment's plain text, end exclusive
(``text[start:end]``). Annotations are never deleted: Remove stamps ``removed_at``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

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


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Researcher(Base):
    """A person who runs studies; the only kind of account with a login session."""

    __tablename__ = "researchers"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_login_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    role: Mapped[str] = mapped_column(String(20), default="researcher", server_default="researcher")
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Stored in the session cookie too; bumped by logout, a password change and disabling,
    # which ends every session issued before.
    session_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class StudyCollaborator(Base):
    """A researcher a study's owner shared it with: may see and change it, not share it."""

    __tablename__ = "study_collaborators"
    __table_args__ = (UniqueConstraint("study_id", "researcher_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    researcher_id: Mapped[int] = mapped_column(
        ForeignKey("researchers.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiKey(Base):
    """A researcher's key for scripts: only the SHA-256 of the secret is kept."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    researcher_id: Mapped[int] = mapped_column(
        ForeignKey("researchers.id", ondelete="CASCADE"), index=True
    )
    prefix: Mapped[str] = mapped_column(String(20), unique=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class LoginFailure(Base):
    """One failed login, counted per account and per client by every process alike."""

    __tablename__ = "login_failures"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320), index=True)
    client: Mapped[str] = mapped_column(String(100), index=True)
    failed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class Study(Base):
    """A taxonomy snapshot plus documents plus the settings workers are given them under."""

    __tablename__ = "studies"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(100), unique=True)
    title: Mapped[str] = mapped_column(String(300), default="")
    taxonomy_name: Mapped[str] = mapped_column(String(200))
    taxonomy: Mapped[dict[str, Any]] = mapped_column(JSON)
    taxonomy_hash: Mapped[str] = mapped_column(String(64))
    annotators_per_doc: Mapped[int] = mapped_column(Integer, default=3)
    suggestions: Mapped[str] = mapped_column(String(10), default="hidden")
    entity_labels: Mapped[list[Any]] = mapped_column(JSON, default=lambda: ["PERSON"])
    platform: Mapped[str] = mapped_column(String(20), default="generic")
    completion_url: Mapped[str | None] = mapped_column(String(2000))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # NULL: made by the CLI without --owner (or before owners existed); only admins see it.
    owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("researchers.id", ondelete="RESTRICT"), index=True
    )
    # open, paused, closed or archived (app/documents/lifecycle.py): only an open study
    # gives arriving workers new work.
    status: Mapped[str] = mapped_column(String(20), default="open", server_default="open")

    documents: Mapped[list[Document]] = relationship(back_populates="study")


class Document(Base):
    """One text to annotate, split into ordered segments."""

    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("study_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(300))
    source: Mapped[str] = mapped_column(String(100), default="")
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    is_gold: Mapped[bool] = mapped_column(Boolean, default=False)
    position: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    study: Mapped[Study] = relationship(back_populates="documents")
    segments: Mapped[list[Segment]] = relationship(
        back_populates="document", order_by="Segment.index", cascade="all, delete-orphan"
    )


class Segment(Base):
    """The unit a worker annotates at a time; earlier segments are its context."""

    __tablename__ = "segments"
    __table_args__ = (UniqueConstraint("document_id", "index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    index: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)

    document: Mapped[Document] = relationship(back_populates="segments")


class GoldError(Base):
    """A reference error span from a ``--gold`` import, used only to score workers."""

    __tablename__ = "gold_errors"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int | None] = mapped_column("start_offset", Integer)
    end: Mapped[int | None] = mapped_column("end_offset", Integer)
    text: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(100))
    votes: Mapped[int] = mapped_column(Integer, default=1)
    antecedents: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # An attention check (``marginalia import --checks``): planted in a real document, counted
    # in each worker's catch rate (app/quality/attention.py), never in gold scores.
    is_check: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")


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


class Entity(Base):
    """A group of mentions a reader would take for one character (or place, organisation)."""

    __tablename__ = "entities"
    __table_args__ = (UniqueConstraint("document_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(String(300))
    label: Mapped[str] = mapped_column(String(30))
    first_segment: Mapped[int] = mapped_column(Integer)


class EntityMention(Base):
    """Where an entity is named: (document, segment, start, end)."""

    __tablename__ = "entity_mentions"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    entity_id: Mapped[int] = mapped_column(ForeignKey("entities.id", ondelete="CASCADE"))
    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column("start_offset", Integer)
    end: Mapped[int] = mapped_column("end_offset", Integer)
    label: Mapped[str] = mapped_column(String(30))


class Suggestion(Base):
    """A span the detector suspects, in one segment, under one of the study's categories."""

    __tablename__ = "suggestions"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column("start_offset", Integer)
    end: Mapped[int] = mapped_column("end_offset", Integer)
    text: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(100))
    score: Mapped[float] = mapped_column(Float, default=1.0)
    detector: Mapped[str] = mapped_column(String(100))
    detector_version: Mapped[str] = mapped_column(String(100))
    reason: Mapped[str | None] = mapped_column(Text)
    paired_segment: Mapped[int | None] = mapped_column(Integer)
    paired_start: Mapped[int | None] = mapped_column(Integer)
    paired_end: Mapped[int | None] = mapped_column(Integer)
    paired_text: Mapped[str | None] = mapped_column(Text)
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


class DetectionJob(Base):
    """One document waiting for (or done with) the detector; claimed by workers."""

    __tablename__ = "detection_jobs"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    run_after: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ImportJob(Base):
    """An uploaded document file waiting to be parsed and stored by the worker.

    ``status``: queued, running, done or failed. The upload's bytes stay in ``payload``
    (the database, not the disk: Heroku's disk is ephemeral) until the job ends.
    """

    __tablename__ = "import_jobs"

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    filename: Mapped[str] = mapped_column(String(300))
    format: Mapped[str] = mapped_column(String(20), default="auto")
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    total_documents: Mapped[int | None] = mapped_column(Integer)
    processed_documents: Mapped[int] = mapped_column(Integer, default=0)
    counts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    run_after: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str | None] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Assignment(Base):
    """One worker doing one document in one study; identified by its unguessable token."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("study_id", "document_id", "worker_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(String(64), unique=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    worker_id: Mapped[str] = mapped_column(String(200))
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


class Annotation(Base):
    """One error span a worker marked, optionally paired with an earlier span."""

    __tablename__ = "annotations"
    __table_args__ = (
        UniqueConstraint("assignment_id", "client_id"),
        Index("ix_annotations_assignment_live", "assignment_id", "removed_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column("start_offset", Integer)
    end: Mapped[int] = mapped_column("end_offset", Integer)
    text: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(100))
    paired_segment: Mapped[int | None] = mapped_column(Integer)
    paired_start: Mapped[int | None] = mapped_column(Integer)
    paired_end: Mapped[int | None] = mapped_column(Integer)
    paired_text: Mapped[str | None] = mapped_column(Text)
    # Set only when the earlier span runs on into later segments (app/annotation/pairing.py):
    # it ends at paired_end in this segment. None: it ends in paired_segment.
    paired_end_segment: Mapped[int | None] = mapped_column(Integer)
    comment: Mapped[str] = mapped_column(Text, default="")
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


class AdjudicatedError(Base):
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
    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column("start_offset", Integer)
    end: Mapped[int] = mapped_column("end_offset", Integer)
    text: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(100))
    paired_segment: Mapped[int | None] = mapped_column(Integer)
    paired_start: Mapped[int | None] = mapped_column(Integer)
    paired_end: Mapped[int | None] = mapped_column(Integer)
    paired_text: Mapped[str | None] = mapped_column(Text)
    paired_end_segment: Mapped[int | None] = mapped_column(Integer)
    comment: Mapped[str] = mapped_column(Text, default="")
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
