"""The import queue: uploaded document files waiting for the worker, kept in the database.

A web request only validates cheap things and calls :func:`enqueue`; the worker claims the
job (the claim rule both queues share: ``app/queue.py``), reports progress
with :func:`report_progress`, keeps it claimed with :class:`KeepAlive` (a heartbeat every
30 s, even while spaCy or the store runs) and ends it with
:func:`mark_done` inside the transaction that stores the documents, or with :func:`fail`
(for good: a bad file) or :func:`retry` (a transient database error, with backoff).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, defer

from app import queue
from app.db import begin_write
from app.documents.import_report import import_summary
from app.errors import Conflict
from app.models import ImportJob, isoformat, utcnow

log = logging.getLogger(__name__)

# A running job whose heartbeat is older than this lost its worker and is claimed again.
STALE_AFTER = timedelta(minutes=5)
HEARTBEAT_EVERY = 30.0  # seconds
RECENT_JOBS = 5
# Unfinished imports a study may have at once (each holds its file in the database).
MAX_PENDING = 5


def enqueue(
    session: Session,
    study_id: int,
    *,
    filename: str,
    fmt: str,
    payload: bytes,
    options: dict[str, Any],
    created_by: str | None,
) -> ImportJob:
    """Queue an uploaded file (the caller commits)."""
    job = ImportJob(
        study_id=study_id,
        filename=filename[:300],
        format=fmt,
        payload=payload,
        options=options,
        created_by=created_by[:320] if created_by else None,
        counts={},
        processed_documents=0,
        attempts=0,
        status="queued",
    )
    session.add(job)
    session.flush()
    return job


def pending(session: Session, study_id: int) -> int:
    """The study's import jobs that have not finished yet."""
    return session.scalar(
        select(func.count())
        .select_from(ImportJob)
        .where(ImportJob.study_id == study_id, ImportJob.status.in_(("queued", "running")))
    )


def _give_up(job: ImportJob, now: datetime) -> None:
    # Its workers kept dying on it (out of memory, killed): give up instead of looping.
    job.status, job.payload, job.finished_at = "failed", b"", now
    job.error = f"the worker stopped while importing this file {job.attempts} times"


def claim(session: Session, worker: str) -> ImportJob | None:
    """Take the oldest runnable import (or one whose worker died) and mark it running; commits.

    Returns the job detached from ``session``, as it was when claimed."""
    job = queue.claim(
        session,
        ImportJob,
        worker,
        alive=ImportJob.heartbeat_at,
        stale_after=STALE_AFTER,
        give_up=_give_up,
    )
    if job is None:
        return None
    job.heartbeat_at = job.claimed_at
    job.processed_documents = 0
    job.error = None
    session.commit()
    # Detached: the claim it describes (worker, attempt) never changes under the caller, even
    # when a rollback would expire it and a reload would show another worker's later claim.
    session.expunge(job)
    return job


def _still_mine(job: ImportJob) -> Any:
    return (
        (ImportJob.id == job.id)
        & (ImportJob.status == "running")
        & (ImportJob.claimed_by == job.claimed_by)
        & (ImportJob.attempts == job.attempts)
    )


def report_progress(
    session: Session, job: ImportJob, processed: int, total: int | None = None
) -> None:
    """Record how far the job is (a short write of its own, committed; also the heartbeat).

    Commits whatever ``session`` had open first: on SQLite a read transaction cannot turn
    into a write once another writer committed ("database is locked" at once).
    """
    values: dict[str, Any] = {"processed_documents": processed, "heartbeat_at": utcnow()}
    if total is not None:
        values["total_documents"] = total
    if session.in_transaction():
        session.commit()
    begin_write(session)
    session.execute(update(ImportJob).where(_still_mine(job)).values(**values))
    session.commit()


class KeepAlive:
    """Refresh a running job's heartbeat from a thread of its own, so that a long parse, spaCy
    pass or store is not taken for a dead worker (``with KeepAlive(engine, job): ...``)."""

    def __init__(self, engine: Engine, job: ImportJob, every: float = HEARTBEAT_EVERY):
        self.engine, self.every, self.stop = engine, every, threading.Event()
        self.mine = _still_mine(job)
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"import-{job.id}")

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            try:
                with Session(self.engine) as session:
                    begin_write(session)
                    session.execute(
                        update(ImportJob).where(self.mine).values(heartbeat_at=utcnow())
                    )
                    session.commit()
            except Exception:  # noqa: BLE001 - a missed beat is retried at the next
                log.warning("import heartbeat missed, retried in %.0f s", self.every, exc_info=True)

    def __enter__(self) -> KeepAlive:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join()


def mark_done(session: Session, job: ImportJob, counts: dict[str, Any]) -> None:
    """Finish the job inside the caller's storing transaction (the caller commits).

    Raises Conflict when another worker took the job over meanwhile: the caller rolls
    back, so its documents are never stored twice.
    """
    done = session.execute(
        update(ImportJob)
        .where(_still_mine(job))
        .values(
            status="done",
            counts=counts,
            processed_documents=counts.get("documents", 0),
            payload=b"",
            finished_at=utcnow(),
            heartbeat_at=utcnow(),
        )
    )
    if done.rowcount != 1:
        raise Conflict(f"import job {job.id} was taken over by another worker")


def fail(session: Session, job_id: int, error: str) -> None:
    """End the job for good with a one-line error; its documents were never stored."""
    session.rollback()
    begin_write(session)
    job = session.get(ImportJob, job_id)
    if job is not None:
        job.status = "failed"
        job.error = (error.strip().splitlines() or ["failed"])[0][:1000]
        job.payload = b""
        job.finished_at = utcnow()
    session.commit()


def retry(session: Session, job_id: int, error: str) -> str:
    """A transient failure: back to the queue after a backoff, or failed after MAX_ATTEMPTS."""
    session.rollback()
    begin_write(session)
    job = session.get(ImportJob, job_id)
    if job is None:
        session.rollback()
        return "gone"
    job.error = (error.strip().splitlines() or ["failed"])[-1][:1000]
    queue.requeue(job)
    if job.status == "failed":
        job.payload = b""
    status = job.status
    session.commit()
    return status


def describe(job: ImportJob) -> dict[str, Any]:
    """What the dashboard shows of one job (its progress JSON and its page)."""
    counts = job.counts or {}
    if job.status == "done":
        message = "Imported " + ", ".join(import_summary(counts, "web")) + "."
    elif job.status == "failed":
        message = f"Import failed: {job.error or 'unknown error'}"
    elif job.status == "running":
        if job.total_documents is None:  # a big file is read, analysed and prepared in batches
            message = "Reading the file" + (
                f": {job.processed_documents} documents so far" if job.processed_documents else ""
            )
        elif job.processed_documents >= job.total_documents:
            message = f"Storing {job.total_documents} documents"
        else:
            message = f"Running: {job.processed_documents} of {job.total_documents} documents"
    else:
        message = "Queued: waiting for the worker" + (
            f" (retrying after: {job.error})" if job.error else ""
        )
    return {
        "id": job.id,
        "filename": job.filename,
        "status": job.status,
        "processed": job.processed_documents,
        "total": job.total_documents,
        "counts": counts,
        "error": job.error if job.status == "failed" else None,
        "message": message,
        "created_at": isoformat(job.created_at),
        "finished_at": isoformat(job.finished_at),
    }


def recent(session: Session, study_id: int, limit: int = RECENT_JOBS) -> list[dict[str, Any]]:
    """The study's latest import jobs, newest first, without their payloads."""
    jobs = session.scalars(
        select(ImportJob)
        .options(defer(ImportJob.payload))
        .where(ImportJob.study_id == study_id)
        .order_by(ImportJob.id.desc())
        .limit(limit)
    )
    return [describe(job) for job in jobs]


def health(session: Session) -> dict[str, Any]:
    """Import jobs per status and the oldest waiting job's age (``worker --health``)."""
    return queue.status_counts(session, ImportJob)
