"""The one claim rule of the worker's queues, imports (``app/detection/import_jobs.py``) and
detection (``app/detection/jobs.py``), also claimed by the figure jobs and the LLM runs, all
kept in the database (no broker to run). It lives below the features, beside app/db.py, so
that every feature hands long work to the one rule without importing another feature.

A job is **runnable** when it is ``queued`` and its ``run_after`` has come, or ``running``
with its liveness time (detection: ``claimed_at``; imports: ``heartbeat_at``) older than its
queue's ``stale_after``: its worker died. The oldest runnable job is claimed (Postgres:
``FOR UPDATE SKIP LOCKED``, so workers never wait on each other; SQLite: ``BEGIN
IMMEDIATE`` serialises writers). A job whose workers died ``MAX_ATTEMPTS`` times is failed
for good instead of claimed again (a file or document that kills its worker every time). A
failed attempt goes back to the queue after a backoff that doubles, or fails for good after
``MAX_ATTEMPTS``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import func, or_, select
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session

from app.db import begin_write
from app.models import utcnow

MAX_ATTEMPTS = 5
BACKOFF_BASE = timedelta(seconds=5)

Job = TypeVar("Job")


def backoff(attempts: int) -> timedelta:
    """5 s, 10 s, 20 s, 40 s ... after the 1st, 2nd, 3rd, 4th ... failed attempt."""
    return BACKOFF_BASE * (2 ** max(attempts - 1, 0))


def claim(
    session: Session,
    model: type[Job],
    worker: str,
    *,
    alive: Any,
    stale_after: timedelta,
    give_up: Callable[[Job, datetime], None],
) -> Job | None:
    """The oldest runnable job of ``model``, marked running for ``worker`` (attempts + 1,
    ``claimed_at``, ``claimed_by``) inside the write transaction this opens: the caller sets
    its queue's own fields and commits. None (transaction ended) when no job is runnable.

    ``alive`` is the column whose age tells a dead worker; a running job found stale after
    ``MAX_ATTEMPTS`` claims is ended by ``give_up(job, now)`` and committed, and the next
    runnable job is taken."""
    table: Any = model
    while True:
        begin_write(session)
        now = utcnow()
        runnable = or_(
            (table.status == "queued") & (table.run_after <= now),
            (table.status == "running") & (alive < now - stale_after),
        )
        query = select(table).where(runnable).order_by(table.id).limit(1)
        if session.get_bind().dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        job = session.scalar(query)
        if job is None:
            session.rollback()
            return None
        if job.status == "running" and job.attempts >= MAX_ATTEMPTS:
            give_up(job, now)
            session.commit()
            continue
        job.status = "running"
        job.attempts += 1
        job.claimed_at = now
        job.claimed_by = worker[:200]
        return job


def gave_up(doing: str) -> Callable[[Any, datetime], None]:
    """A :func:`claim` ``give_up`` for a queue that keeps its error in ``last_error``: the job
    failed, finished now, and the message says what the worker kept stopping while doing
    (the one wording of the detection, training, figure and LLM queues)."""

    def give_up(job: Any, now: datetime) -> None:
        job.status, job.finished_at = "failed", now
        job.last_error = f"the worker stopped while {doing} {job.attempts} times"

    return give_up


def claim_committed(
    session: Session,
    model: type[Job],
    worker: str,
    *,
    stale_after: timedelta,
    give_up: Callable[[Job, datetime], None],
) -> Job | None:
    """:func:`claim` for a queue whose jobs show they are alive only by ``claimed_at`` (no
    heartbeat of their own) and set no field of their own when claimed, committed at once so
    other workers see the job taken: the claim of the detection, training, figure and LLM
    queues, written once."""
    job = claim(
        session, model, worker, alive=model.claimed_at, stale_after=stale_after, give_up=give_up
    )
    if job is not None:
        session.commit()
    return job


def is_transient(exc: BaseException) -> bool:
    """Database trouble that a later attempt may not meet (a lock, a lost connection)."""
    if isinstance(exc, OperationalError):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def requeue(job: Any) -> None:
    """After a failed attempt: ``queued`` again once :func:`backoff` has passed, or
    ``failed`` for good after ``MAX_ATTEMPTS`` (the caller records the error and commits)."""
    if job.attempts >= MAX_ATTEMPTS:
        job.status = "failed"
        job.finished_at = utcnow()
    else:
        job.status = "queued"
        job.run_after = utcnow() + backoff(job.attempts)


def status_counts(session: Session, model: Any) -> dict[str, Any]:
    """Jobs per status and the oldest waiting job's age in seconds (``worker --health``)."""
    counts = dict(session.execute(select(model.status, func.count()).group_by(model.status)).all())
    oldest = session.scalar(select(func.min(model.created_at)).where(model.status == "queued"))
    age = None
    if oldest is not None:
        oldest = oldest if oldest.tzinfo else oldest.replace(tzinfo=utcnow().tzinfo)
        age = round((utcnow() - oldest).total_seconds(), 1)
    return {
        **{status: counts.get(status, 0) for status in ("queued", "running", "done", "failed")},
        "oldest_queued_seconds": age,
    }
