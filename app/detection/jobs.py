"""The detection job queue: one job per document waiting for the detector.

The claim, backoff and give-up rules are the import queue's too (``app/queue.py``);
a detection job's worker counts as dead once its claim is older than ``STALE_AFTER`` (a
document takes seconds, so it needs no heartbeat). The last error is recorded.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app import queue
from app.db import begin_write
from app.models import DetectionJob, utcnow

STALE_AFTER = timedelta(minutes=15)


_give_up = queue.gave_up("detecting this document")


def claim(session: Session, worker: str) -> DetectionJob | None:
    """Take the oldest runnable job (or a stale running one) and mark it running; commits."""
    return queue.claim_committed(
        session, DetectionJob, worker, stale_after=STALE_AFTER, give_up=_give_up
    )


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
    queue.requeue(job)
    session.commit()
    return job


def health(session: Session) -> dict[str, Any]:
    """Counts per status, the oldest waiting job's age, and the latest failures."""
    failures = session.execute(
        select(DetectionJob.document_id, DetectionJob.attempts, DetectionJob.last_error)
        .where(DetectionJob.last_error.is_not(None))
        .order_by(DetectionJob.id.desc())
        .limit(5)
    ).all()
    return {
        **queue.status_counts(session, DetectionJob),
        "recent_errors": [
            {"document_id": d, "attempts": a, "error": (e or "").splitlines()[-1][:300]}
            for d, a, e in failures
        ],
    }
