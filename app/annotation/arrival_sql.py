"""The statements an arrival runs under its study's lock, built once (issue 17).

Building a statement (its clauses, its cache key) costs more Python than sending it, and an
arrival holds the study's row lock while it runs these: every other arrival of the study
waits meanwhile. :mod:`app.annotation.assigning` binds the values per call.
"""

from __future__ import annotations

from sqlalchemy import and_, bindparam, exists, func, or_, select, update

from app.models import Assignment, Study

TAKEN = ("active", "submitted")

# Serialise arrivals per study (Postgres row lock; SQLite writers are serial anyway).
LOCK_STUDY = select(Study.id).where(Study.id == bindparam("study_id")).with_for_update()

# Stale active assignments of the study become abandoned: not seen since ``cutoff``, or never
# engaged and not seen since ``hold_cutoff``.
RELEASE = (
    update(Assignment)
    .where(
        Assignment.study_id == bindparam("in_study"),  # an UPDATE reserves "study_id"
        Assignment.status == "active",
        or_(
            Assignment.last_seen_at < bindparam("cutoff"),
            and_(
                Assignment.engaged_at.is_(None), Assignment.last_seen_at < bindparam("hold_cutoff")
            ),
        ),
    )
    .values(status="abandoned")
    .execution_options(synchronize_session=False)
)

_WORKER_HERE = (
    Assignment.study_id == bindparam("study_id"),
    Assignment.worker_id == bindparam("worker_id"),
)
# Whether the worker ID has an active assignment in the study.
WORK_IN_PROGRESS = select(exists().where(*_WORKER_HERE, Assignment.status == "active"))
# The same, whether they had ``document_id`` before, and its taken slots: one round trip.
NAMED_DOCUMENT_STATE = select(
    exists().where(*_WORKER_HERE, Assignment.status == "active"),
    exists().where(*_WORKER_HERE, Assignment.document_id == bindparam("document_id")),
    select(func.count())
    .where(Assignment.document_id == bindparam("document_id"), Assignment.status.in_(TAKEN))
    .scalar_subquery(),
)
