"""The figure job's run (:mod:`app.quality.figures` and :mod:`app.quality.served` queue it):
the worker loop (app/detection/worker.py) claims a queued ``figure_jobs`` row, computes the
study's report and stores it as the served report (:func:`app.quality.served.store`), then,
when the job asks for them (``with_figures``) and they are not current, the slow figures (γ,
unitizing α, worker models: minutes at a million annotations), storing the report again with
them. The report's figures arrive first. Apart from :mod:`app.quality.figures` because it
calls the report, which reads the figures' cache."""

from __future__ import annotations

import logging
import time
import traceback
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation import pausing
from app.db import begin_write
from app.detection import queue
from app.models import FigureJob, Study, changes
from app.quality import served
from app.quality.figures import job_state
from app.quality.reporting import study_report

log = logging.getLogger(__name__)
STALE_AFTER = timedelta(minutes=60)  # a running job's worker counts as dead after it


def _give_up(job: FigureJob, now: Any) -> None:
    job.status, job.finished_at = "failed", now
    job.last_error = f"the worker stopped while computing these figures {job.attempts} times"


def _report(
    session: Session, study: Study, practice: bool, *, compute_figures: bool
) -> dict[str, Any]:
    """Compute the study's report and store it as served, marked with the study's last work
    change read before (a change during the computation leaves it stale)."""
    change = changes.settled(session, study.id)
    session.commit()  # the exclusive lock goes: writers wait for it only this long
    started = time.monotonic()
    report = study_report(
        session, study, include_practice=practice, compute_figures=compute_figures
    )
    seconds = time.monotonic() - started
    session.commit()
    begin_write(session)
    study = session.get(Study, study.id) or study
    unitized = report["agreement"].get("unitized")
    if isinstance(unitized, dict):  # report.json serves it as stored: the job's end state
        row = session.scalar(
            select(FigureJob).where(
                FigureJob.study_id == study.id, FigureJob.include_practice.is_(practice)
            )
        )
        unitized.update(job_state(row) | {"job": "done", "error": None})
    served.store(session, study, practice, report, change=change, seconds=seconds)
    changes.prune(session, study.id, change)
    session.commit()
    return report


def run_next(session: Session, worker: str) -> bool:
    """Claim one figure job and run it (the study's report with ``compute_figures``); False
    when none is runnable. A failure is recorded and retried after a backoff."""
    job = queue.claim(
        session,
        FigureJob,
        worker,
        alive=FigureJob.claimed_at,
        stale_after=STALE_AFTER,
        give_up=_give_up,
    )
    if job is None:
        return False
    session.commit()
    job_id, study_id, practice = job.id, job.study_id, job.include_practice
    slow = job.with_figures
    try:
        study = session.get(Study, study_id)
        if study is not None:
            report = _report(session, study, practice, compute_figures=False)
            unitized = report["agreement"].get("unitized") or {}
            if slow and unitized.get("state") != "current":
                _report(session, study, practice, compute_figures=True)
        begin_write(session)
        study = session.get(Study, study_id)
        if study is not None and not practice:
            pausing.check(session, study)  # the pause rule reads the new expected F1
        done = session.get(FigureJob, job_id)
        if done is not None:
            done.status, done.last_error = "done", None  # finished_at: the figures' (cached)
        session.commit()
    except Exception as exc:  # noqa: BLE001 - the worker loop must survive any study
        session.rollback()
        begin_write(session)
        failed = session.get(FigureJob, job_id)
        if failed is not None:
            failed.last_error = "".join(traceback.format_exception(exc))[-4000:]
            queue.requeue(failed)
        session.commit()
        log.warning("figure job %s failed: %s", job_id, str(exc).splitlines()[:1])
    return True
