"""The figure job: the worker keeps every study's report and slow figures current.

* :func:`queue_changed` (the worker loop, app/detection/worker.py, when it has nothing else
  to do) queues a job for each study whose counted work changed since its report was
  computed (the change log, :mod:`app.models.changes`), debounced: no sooner than
  :data:`SETTLE_SECONDS` after the last change, nor than ``REPORT_REFRESH_SECONDS`` (30 s)
  or the last computation's own time after the last one. The one-shot worker
  (``marginalia worker --once``) runs them at once.
* :func:`run_next` claims a job and computes the study's report with its figures brought
  current (:func:`app.quality.figures.add_to_report`: only the documents whose work changed
  are recomputed), storing it as the served report (:func:`app.quality.served.store`). A
  study whose documents have no cached part yet (its first computation: minutes of γ at a
  thousand documents) gets its report stored first, without γ. Parts left for the next job
  when the time budget ran out (``partial``) bring the job back at once.

Apart from :mod:`app.quality.figures` because it calls the report, which reads the figures'
cache."""

from __future__ import annotations

import logging
import time
import traceback
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import current_app, has_app_context
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app import queue
from app.annotation import pausing
from app.db import begin_write
from app.models import Document, DocumentFigures, FigureJob, Study, WorkChange, changes, utcnow
from app.quality import served
from app.quality.figures import enqueue, job_state
from app.quality.reporting import study_report

log = logging.getLogger(__name__)
STALE_AFTER = timedelta(minutes=60)  # a running job's worker counts as dead after it
SETTLE_SECONDS = 5.0  # a study's changes settle this long before its figures are recomputed
REFRESH_SECONDS = served.REFRESH_SECONDS


_give_up = queue.gave_up("computing these figures")


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


def _first_computation(session: Session, study: Study) -> bool:
    """Whether most of the study's documents have no cached part of the figures yet."""
    parts = session.scalar(
        select(func.count())
        .select_from(DocumentFigures)
        .where(DocumentFigures.study_id == study.id)
    )
    documents = session.scalar(
        select(func.count()).select_from(Document).where(Document.study_id == study.id)
    )
    return (parts or 0) * 2 < (documents or 0)


def run_next(session: Session, worker: str) -> bool:
    """Claim one figure job and run it (the study's report with its figures brought
    current); False when none is runnable. A failure is recorded and retried after a
    backoff; figures left partial by the time budget queue the job again at once."""
    job = queue.claim_committed(
        session, FigureJob, worker, stale_after=STALE_AFTER, give_up=_give_up
    )
    if job is None:
        return False
    job_id, study_id, practice = job.id, job.study_id, job.include_practice
    try:
        partial = False
        study = session.get(Study, study_id)
        if study is not None:
            if _first_computation(session, study):
                _report(session, study, practice, compute_figures=False)
            report = _report(session, study, practice, compute_figures=True)
            partial = bool((report["agreement"].get("unitized") or {}).get("missing"))
        begin_write(session)
        study = session.get(Study, study_id)
        if study is not None and not practice:
            pausing.check(session, study)  # the pause rule reads the new expected F1
        done = session.get(FigureJob, job_id)
        if done is not None:
            done.status, done.last_error = "done", None  # finished_at: the figures' (cached)
            if partial:  # the time budget ran out: the rest at once, by the next job
                done.status, done.attempts, done.run_after = "queued", 0, utcnow()
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


def queue_changed(session: Session, *, at_once: bool = False) -> int:
    """Queue a job for every study whose counted work changed since its report (and each
    setting of it already stored: practice in or out) was computed, debounced (module
    docstring); ``at_once`` (the one-shot worker): runnable now, queued ones too. Returns how
    many were queued; commits."""
    latest = (
        select(
            WorkChange.study_id,
            func.max(WorkChange.id).label("change"),
            func.max(WorkChange.created_at).label("at"),
        )
        .group_by(WorkChange.study_id)
        .subquery()
    )
    rows = session.execute(
        select(latest.c.study_id, latest.c.change, latest.c.at, FigureJob.id)
        .outerjoin(FigureJob, FigureJob.study_id == latest.c.study_id)
        .order_by(latest.c.study_id, FigureJob.id)
    ).all()
    now, refresh = utcnow(), _refresh_seconds()
    queued = 0
    begin_write(session)
    for study_id, change, at, row_id in rows:
        row = session.get(FigureJob, row_id) if row_id is not None else None
        if row is not None and row.status in ("running", "failed"):
            continue  # a failed job is queued again by a page that finds it (served.py)
        if row is not None and row.status == "queued":
            if at_once and _aware(row.run_after) > now:
                row.run_after = now
            continue
        if row is not None and (row.report_change or 0) >= change:
            continue
        when = now
        if not at_once:
            when = max(now, _aware(at) + timedelta(seconds=SETTLE_SECONDS))
            if row is not None and row.report_at is not None:
                wait = max(refresh, row.report_seconds or 0.0)
                when = max(when, _aware(row.report_at) + timedelta(seconds=wait))
        study = session.get(Study, study_id)
        if study is None:
            continue
        practice = row.include_practice if row is not None else False
        enqueue(session, study, practice, run_after=when)
        queued += 1
    session.commit()
    return queued


def _refresh_seconds() -> float:
    config = current_app.config if has_app_context() else {}
    return float(config.get("REPORT_REFRESH_SECONDS", REFRESH_SECONDS))


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
