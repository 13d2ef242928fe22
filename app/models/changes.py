"""The study's change log: a ``work_changes`` row per write that changes a study's counted work
(what its report reads), so the served report (app/quality/served.py) knows it is stale with one
indexed look-up (:func:`latest`), never a scan of the study.

Rows are only inserted (no row lock on the study: concurrent submits never wait for each other).
A report computed after row N is current while :func:`latest` is still N.

What changes counted work, and marks the study (docs/METRICS.md, "The served report"):

* through the ORM, caught at flush (:func:`_on_flush`): an assignment inserted ended (imported
  work) or changing status (submit, screen-out, reject, approve, abandon); an annotation added,
  edited or removed in an assignment that is not active; a document, segment, gold error or
  attention check, suggestion, adjudicated error or document review inserted, changed or
  deleted; the study's title, taxonomy, annotators per document, suggestions mode or
  settings changed; a detector version's calibration (every study);
* bulk writes that bypass the flush call :func:`mark` themselves: the document import
  (app/documents/storing.py), document removal (app/documents/lifecycle.py), reviews' reject and
  approve (app/annotation/reviews.py), the qualification's screen-out, the adjudicated layer's
  edits and its promotion to gold (app/quality/adjudication.py).

In-progress work does not: an arrival, an annotation in an active assignment, a page view, the
figure job's own writes; nor does blocking, unblocking or pausing a worker or a note (the report
reads a worker's assignments, not their review row).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, String, delete, event, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from app.models.base import Base, utcnow
from app.models.detection import DetectorVersion, Suggestion
from app.models.review import AdjudicatedError, DocumentReview
from app.models.studies import Document, GoldError, Segment, Study
from app.models.work import Annotation, Assignment


class WorkChange(Base):
    """One write that changed a study's counted work (``reason``: what kind, for the log)."""

    __tablename__ = "work_changes"
    __table_args__ = (Index("ix_work_changes_study_id_id", "study_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    reason: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# Postgres hands out ids in insert order, not commit order: a writer that took id 10 may
# commit after one that took id 11. So every writer holds a shared advisory lock on the study
# from its mark to its commit, and the figure job reads the last id under the exclusive one
# (:func:`settled`): every id up to it is then committed, and any later change gets a larger id.
LOCK_SPACE = 34 << 32  # the one-bigint key space, apart from arrival_sql's two-int locks


def _lock(session: Session, study_id: int, function: str) -> None:
    if session.get_bind().dialect.name == "postgresql":
        session.connection().execute(select(getattr(func, function)(LOCK_SPACE + study_id)))


def assignment_reason(status: str) -> str:
    """The log's reason for an assignment that ended or changed to ``status`` (the flush's,
    and the submit's own statement, app/annotation/hot_sql.py)."""
    return f"assignment {status}"


def mark(session: Session, study_id: int, reason: str) -> None:
    """Record that the study's counted work changed (in the caller's transaction)."""
    _lock(session, study_id, "pg_advisory_xact_lock_shared")
    session.add(WorkChange(study_id=study_id, reason=reason[:40]))


def latest(session: Session, study_id: int) -> int:
    """The study's last change (0: none): one index look-up."""
    query = select(func.max(WorkChange.id)).where(WorkChange.study_id == study_id)
    return session.scalar(query) or 0


def prune(session: Session, study_id: int, change: int) -> None:
    """Drop the study's changes before ``change`` (the last one stays: :func:`latest` holds)."""
    session.execute(
        delete(WorkChange).where(WorkChange.study_id == study_id, WorkChange.id < change)
    )


def settled(session: Session, study_id: int) -> int:
    """:func:`latest` once the study's writers in flight have committed (Postgres: under the
    exclusive lock, held until the caller commits, which it does at once)."""
    _lock(session, study_id, "pg_advisory_xact_lock")
    return latest(session, study_id)


STUDY_FIELDS = ("slug", "title", "taxonomy_name", "taxonomy", "annotators_per_doc")
STUDY_FIELDS += ("suggestions", "settings")
BY_DOCUMENT = (Segment, GoldError, Suggestion, AdjudicatedError, DocumentReview)


def _changed(obj: Any, fields: tuple[str, ...]) -> bool:
    state = obj._sa_instance_state  # noqa: SLF001 - SQLAlchemy's documented inspection handle
    return any(state.attrs[name].history.has_changes() for name in fields)


def _document_study(session: Session, obj: Any) -> int | None:
    document = obj.__dict__.get("document")
    if document is not None and document.study_id is not None:
        return document.study_id
    if obj.document_id is None:
        return None
    found = session.get(Document, obj.document_id)
    return found.study_id if found is not None else None


def _assignment(session: Session, annotation: Annotation) -> Assignment | None:
    found = annotation.__dict__.get("assignment")
    if found is None and annotation.assignment_id is not None:
        found = session.get(Assignment, annotation.assignment_id)
    return found


def _reason(session: Session, obj: Any, kind: str) -> tuple[int | None, str] | None:
    """(study id, reason) when writing ``obj`` (``kind``: new, dirty or deleted) changes
    counted work, else None."""
    if isinstance(obj, Assignment):
        ended = kind != "dirty" and obj.status != "active"
        if ended or (kind == "dirty" and _changed(obj, ("status",))):
            return obj.study_id, assignment_reason(obj.status)
        return None
    if isinstance(obj, Annotation):
        assignment = _assignment(session, obj)
        if assignment is None or assignment.status == "active":
            return None
        return assignment.study_id, "annotation"
    if isinstance(obj, Document):
        study = obj.__dict__.get("study")
        return (obj.study_id or (study.id if study is not None else None)), "document"
    if isinstance(obj, BY_DOCUMENT):
        return _document_study(session, obj), obj.__tablename__
    if isinstance(obj, Study):
        return (
            (obj.id, "study settings") if kind == "dirty" and _changed(obj, STUDY_FIELDS) else None
        )
    return None


@event.listens_for(Session, "before_flush")
def _on_flush(session: Session, _context: Any, _instances: Any) -> None:
    found: dict[int, str] = {}
    gone = {obj.id for obj in session.deleted if isinstance(obj, Study)}
    with session.no_autoflush:
        for kind, objects in (("new", session.new), ("dirty", session.dirty)):
            for obj in list(objects):
                if kind == "dirty" and not session.is_modified(obj):
                    continue
                if isinstance(obj, DetectorVersion):
                    if kind == "new" or _changed(obj, ("calibration",)):
                        # confident thresholds read the calibration: any study may use it
                        found.update(dict.fromkeys(session.scalars(select(Study.id)), "detector"))
                    continue
                hit = _reason(session, obj, kind)
                if hit is not None and hit[0] is not None:
                    found.setdefault(hit[0], hit[1])
        for obj in list(session.deleted):
            hit = _reason(session, obj, "deleted")
            if hit is not None and hit[0] is not None:
                found.setdefault(hit[0], hit[1])
    for study_id, reason in sorted(found.items()):
        if study_id not in gone:
            mark(session, study_id, reason)
