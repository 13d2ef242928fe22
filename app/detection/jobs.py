"""The detection job queue, kept in the database (no broker to run).

Workers claim jobs with ``FOR UPDATE SKIP LOCKED`` on Postgres (SQLite serialises writers
instead), retry failures with exponential backoff, and record the last error. A job whose
worker died is claimed again once its claim is older than ``STALE_AFTER``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from app.db import begin_write
from app.models import DetectionJob, utcnow

MAX_ATTEMPTS = 5
BACKOFF_BASE = timedelta(seconds=5)
STALE_AFTER = timedelta(minutes=15)


def backoff(attempts: int) -> timedelta:
    """5 s, 10 s, 20 s, 40 s ... after the 1st, 2nd, 3rd ... failed attempt."""
    return BACKOFF_BASE * (2 ** max(attempts - 1, 0))


def claim(session: Session, worker: str) -> DetectionJob | None:
    """Take the oldest runnable job (or a stale running one) and mark it running; commits."""
    begin_write(session)
    now = utcnow()
    runnable = or_(
        (DetectionJob.status == "queued") & (DetectionJob.run_after <= now),
        (DetectionJob.status == "running") & (DetectionJob.claimed_at < now - STALE_AFTER),
    )
    query = select(DetectionJob).where(runnable).order_by(DetectionJob.id).limit(1)
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    job = session.scalar(query)
    if job is None:
        session.rollback()
        return None
    job.status = "running"
    job.attempts += 1
    job.claimed_at = now
    job.claimed_by = worker[:200]
    session.commit()
    return job


def complete(session: Session, job: DetectionJob) -> None:
    job.status = "done"
    job.finished_at = utcnow()
    job.last_error = None
    session.commit()


def fail(session: Session, job_id: int, error: str) -> DetectionJob:
    """Record a failure: back to the queue after a backoff, or ``failed`` for good."""
    session.rollback()
    begin_write(session)
    job = session.get(DetectionJob, job_id)
    assert job is not None
    job.last_error = error[-4000:]
    if job.attempts >= MAX_ATTEMPTS:
        job.status = "failed"
        job.finished_at = utcnow()
    else:
        job.status = "queued"
        job.run_after = utcnow() + backoff(job.attempts)
    session.commit()
    return job


def health(session: Session) -> dict[str, Any]:
    """Counts per status, the oldest waiting job's age, and the latest failures."""
    counts = {
        status: count
        for status, count in session.execute(
            select(DetectionJob.status, func.count()).group_by(DetectionJob.status)
        )
    }
    oldest = session.scalar(
        select(func.min(DetectionJob.created_at)).where(DetectionJob.status == "queued")
    )
    failures = session.execute(
        select(DetectionJob.document_id, DetectionJob.attempts, DetectionJob.last_error)
        .where(DetectionJob.last_error.is_not(None))
        .order_by(DetectionJob.id.desc())
        .limit(5)
    ).all()
    age = None
    if oldest is not None:
        oldest = oldest if oldest.tzinfo else oldest.replace(tzinfo=utcnow().tzinfo)
        age = round((utcnow() - oldest).total_seconds(), 1)
    return {
        "queued": counts.get("queued", 0),
        "running": counts.get("running", 0),
        "done": counts.get("done", 0),
        "failed": counts.get("failed", 0),
        "oldest_queued_seconds": age,
        "recent_errors": [
            {"document_id": d, "attempts": a, "error": (e or "").splitlines()[-1][:300]}
            for d, a, e in failures
        ],
    }
