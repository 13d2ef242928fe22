"""A study's maintained figures (issue 34): its report, computed by a queued job when its
counted work changes, stored, and served with its age.

* **State**: ``study_figures.version``, which every write that changes the counted work
  bumps (app/documents/work_state.py), and the study's settings hashed
  (:func:`~app.documents.work_state.settings_key`). Stored figures are *stale* when either
  differs from what they were computed at.
* **The job**: one row per study and variant (with or without the training phase's
  practice documents), claimed by the worker under the other queues' claim rule
  (app/detection/queue.py). It records the version it starts from, computes
  :func:`app.quality.reporting.study_report` (batch by batch, in bounded memory) and stores
  the report as JSON text; if the work changed meanwhile it is queued again.
* **Serving** (:func:`served`): a small study (at most ``inline_max`` submitted
  assignments, ``REPORT_INLINE_MAX_ASSIGNMENTS``, 200 by default) is computed in the
  request, as before: it takes well under a second. A bigger one is answered from the store:
  the figures of the last completed computation with their time, stale or not; the first
  request queues the first computation. Nothing of a big study is computed in a web request.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db import begin_write
from app.detection import queue
from app.documents.work_state import DEBOUNCE, settings_key
from app.models import Assignment, Study, StudyFigures, isoformat, utcnow

log = logging.getLogger(__name__)

INLINE_MAX_ASSIGNMENTS = 200
STALE_AFTER = timedelta(minutes=15)  # a running job older than this lost its worker


@dataclass
class Figures:
    """A study's report as served: ``report`` (None before the first computation ends) and
    ``text`` (the stored JSON; None when computed in the request), with their state."""

    report: dict[str, Any] | None
    text: str | None
    computed_at: datetime | None
    seconds: float | None
    stale: bool
    status: str  # "live" (computed in this request), or the job's: queued, running, done, failed
    error: str | None = None

    def meta(self) -> dict[str, Any]:
        """What the dashboard and ``report.json`` say of the figures' age."""
        age = None
        if self.computed_at is not None:
            at = self.computed_at
            at = at if at.tzinfo else at.replace(tzinfo=utcnow().tzinfo)
            age = max(0.0, round((utcnow() - at).total_seconds(), 1))
        return {
            "computed_at": isoformat(self.computed_at),
            "age_seconds": age,
            "seconds": None if self.seconds is None else round(self.seconds, 2),
            "stale": self.stale,
            "status": self.status,
            "recomputing": self.stale or self.status in ("queued", "running"),
            "error": self.error,
        }


def submitted_assignments(session: Session, study: Study) -> int:
    return session.scalar(
        select(func.count())
        .select_from(Assignment)
        .where(Assignment.study_id == study.id, Assignment.status == "submitted")
    )


def served(
    session: Session,
    study: Study,
    *,
    include_practice: bool = False,
    inline_max: int = INLINE_MAX_ASSIGNMENTS,
    parsed: bool = True,
) -> Figures:
    """The study's figures for a page or ``report.json`` (module docstring). ``parsed``: also
    the report as a dict (the dashboard; ``report.json`` sends the stored text as it is)."""
    from app.quality.reporting import study_report

    if submitted_assignments(session, study) <= inline_max:
        report = study_report(session, study, include_practice=include_practice)
        return Figures(report, None, utcnow(), None, False, "live")
    row = session.execute(
        select(
            StudyFigures.id,
            StudyFigures.version,
            StudyFigures.computed_version,
            StudyFigures.settings_key,
            StudyFigures.computed_at,
            StudyFigures.seconds,
            StudyFigures.status,
            StudyFigures.last_error,
        ).where(
            StudyFigures.study_id == study.id, StudyFigures.include_practice == include_practice
        )
    ).first()
    key = settings_key(study)
    if row is None:
        _queue(session, study.id, include_practice)
        return Figures(None, None, None, None, True, "queued")
    status = row.status
    moved = row.settings_key is not None and row.settings_key != key  # settings changed since
    if moved and status in ("done", "failed"):
        _queue(session, study.id, include_practice)
        status = "queued"
    stale = row.computed_version != row.version or moved
    if row.computed_version is None:
        return Figures(None, None, None, None, True, status, row.last_error)
    text = session.scalar(select(StudyFigures.figures).where(StudyFigures.id == row.id))
    report = json.loads(text) if parsed and text else None
    return Figures(report, text, row.computed_at, row.seconds, stale, status, row.last_error)


def state(session: Session, study: Study, *, include_practice: bool = False) -> dict[str, Any]:
    """The stored figures' state without the figures (``progress.json``'s poll)."""
    row = session.execute(
        select(
            StudyFigures.version,
            StudyFigures.computed_version,
            StudyFigures.computed_at,
            StudyFigures.status,
        ).where(
            StudyFigures.study_id == study.id, StudyFigures.include_practice == include_practice
        )
    ).first()
    if row is None:
        return {"computed_at": None, "stale": None, "status": None}
    return {
        "computed_at": isoformat(row.computed_at),
        "stale": row.computed_version != row.version,
        "status": row.status,
    }


def _queue(session: Session, study_id: int, include_practice: bool) -> None:
    """Create the study's row (queued now) or queue its idle job again, in a short write of
    its own (the request's session stays a reader)."""
    with Session(bind=session.get_bind()) as writer:
        begin_write(writer)
        found = writer.scalar(
            select(StudyFigures.id).where(
                StudyFigures.study_id == study_id,
                StudyFigures.include_practice == include_practice,
            )
        )
        if found is None:
            writer.add(
                StudyFigures(
                    study_id=study_id,
                    include_practice=include_practice,
                    version=0,
                    status="queued",
                    attempts=0,
                    run_after=utcnow(),
                )
            )
        else:
            writer.execute(
                update(StudyFigures)
                .where(StudyFigures.id == found, StudyFigures.status.in_(("done", "failed")))
                .values(status="queued", run_after=utcnow(), attempts=0)
            )
        try:
            writer.commit()
        except IntegrityError:  # another request created it meanwhile
            writer.rollback()


# --- the job -------------------------------------------------------------------------------


def _give_up(job: StudyFigures, now: datetime) -> None:
    job.status, job.finished_at = "failed", now
    job.last_error = f"the worker stopped while computing these figures {job.attempts} times"


def claim(session: Session, worker: str) -> StudyFigures | None:
    """Take the oldest runnable recomputation (a stale running one too); commits."""
    job = queue.claim(
        session,
        StudyFigures,
        worker,
        alive=StudyFigures.claimed_at,
        stale_after=STALE_AFTER,
        give_up=_give_up,
    )
    if job is not None:
        job.claimed_version = job.version
        session.commit()
    return job


def compute(session: Session, study: Study, *, include_practice: bool) -> tuple[str, float]:
    """The report as the stored JSON text, and the seconds it took."""
    from app.quality.reporting import study_report

    started = time.perf_counter()
    report = study_report(session, study, include_practice=include_practice)
    text = json.dumps(report, sort_keys=True, separators=(",", ":"), default=str)
    return text, time.perf_counter() - started


def run(session: Session, job: StudyFigures) -> None:
    """Compute and store a claimed job's figures; queued again when the work moved meanwhile."""
    job_id, mine = job.id, job.claimed_by
    study = session.get(Study, job.study_id)
    if study is None:  # deleted since (its row went with it)
        session.rollback()
        return
    key = settings_key(study)
    text, seconds = compute(session, study, include_practice=job.include_practice)
    session.rollback()  # the long read ends before the write begins
    begin_write(session)
    moved = StudyFigures.version != StudyFigures.claimed_version
    now = utcnow()
    session.execute(
        update(StudyFigures)
        .where(StudyFigures.id == job_id, StudyFigures.claimed_by == mine)
        .values(
            figures=text,
            computed_version=StudyFigures.claimed_version,
            settings_key=key,
            computed_at=now,
            seconds=seconds,
            last_error=None,
            finished_at=now,
            status=case((moved, "queued"), else_="done"),
            run_after=case((moved, now + DEBOUNCE), else_=StudyFigures.run_after),
            attempts=case((moved, 0), else_=StudyFigures.attempts),
        )
        .execution_options(synchronize_session=False)
    )
    session.commit()
    log.info("figures of study %s: %.1f s, %d bytes", study.slug, seconds, len(text))


def run_next(session: Session, worker: str) -> bool:
    """Claim and run one recomputation; False when none is runnable. A failure is recorded
    and retried with the queue's backoff; it never stops the worker."""
    job = claim(session, worker)
    if job is None:
        return False
    job_id = job.id
    try:
        run(session, job)
    except Exception as exc:  # noqa: BLE001 - the worker loop must survive any study
        session.rollback()
        begin_write(session)
        failed = session.get(StudyFigures, job_id)
        if failed is not None:
            failed.last_error = "".join(traceback.format_exception(exc))[-4000:]
            queue.requeue(failed)
        session.commit()
        log.warning("figures job %s failed: %s", job_id, (str(exc).splitlines() or [""])[0])
    return True


def refresh(session: Session, study: Study, *, include_practice: bool = False) -> StudyFigures:
    """Compute the figures now and store them (``marginalia report --store``, tests): as the
    job does, without waiting for the queue."""
    _queue(session, study.id, include_practice)
    session.rollback()
    begin_write(session)
    job = session.scalar(
        select(StudyFigures).where(
            StudyFigures.study_id == study.id, StudyFigures.include_practice == include_practice
        )
    )
    assert job is not None
    job.status, job.claimed_by, job.claimed_version = "running", "refresh", job.version
    job.claimed_at = utcnow()
    session.commit()
    run(session, job)
    session.refresh(job)
    return job
