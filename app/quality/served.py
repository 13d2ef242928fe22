"""The study report as the dashboard, ``report.json`` and the dataset card serve it: computed in
the request for a small study (exact, instant, as before), else the last computation stored by
the figure job (:mod:`app.quality.figure_jobs`) with its state, never an O(study) read.

* **small**: at most ``REPORT_INLINE_ANNOTATIONS`` (5,000) live annotations in submitted
  assignments, counted with a ``LIMIT`` (the count stops there: bounded cost at any size).
* **current**: the stored report saw the study's last work change (:mod:`app.models.changes`,
  one index look-up); else **stale** (or **none**: never computed), and a recomputation is
  queued unless one is queued or running (one ``figure_jobs`` row per study and practice
  setting: never two jobs), no sooner than ``REPORT_REFRESH_SECONDS`` (30 s) or the last
  computation's own time, whichever is longer, after the last one finished (the worker spends
  at most half its time on one busy study; a researcher sees figures at most that old).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import current_app, has_app_context
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import begin_write
from app.models import Annotation, FigureJob, Study, changes, utcnow
from app.quality.digest import digest
from app.quality.figures import enqueue, job_state
from app.quality.reporting import study_report
from app.rules.work import Work, select_work

INLINE_ANNOTATIONS = 5000
REFRESH_SECONDS = 30.0


def _setting(name: str, default: float) -> float:
    return float(current_app.config.get(name, default)) if has_app_context() else default


def is_small(session: Session, study: Study, limit: int | None = None) -> bool:
    """At most ``limit`` live annotations in the study's submitted assignments (reads at most
    ``limit`` + 1 of them)."""
    limit = int(
        _setting("REPORT_INLINE_ANNOTATIONS", INLINE_ANNOTATIONS) if limit is None else limit
    )
    everything = Work(include_practice=True)  # the study's submitted work, any document
    found = (
        select_work(study, everything, Annotation.id, marks_only=True, ordered=False)
        .limit(limit + 1)
        .subquery()
    )
    return session.scalar(select(func.count()).select_from(found)) <= limit


def _row(session: Session, study: Study, include_practice: bool) -> FigureJob | None:
    return session.scalar(
        select(FigureJob).where(
            FigureJob.study_id == study.id, FigureJob.include_practice.is_(include_practice)
        )
    )


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def state(row: FigureJob | None, change: int, now: datetime) -> dict[str, Any]:
    """The ``served`` object of a stored report (docs/CONTRACT.md, report.json)."""
    computed = _aware(row.report_at) if row is not None else None
    stored = row is not None and row.report_at is not None
    job = row.status if row is not None and row.status in ("queued", "running", "failed") else None
    return {
        "mode": "stored",
        "state": "none" if not stored else "current" if row.report_change == change else "stale",
        "computed_at": computed.isoformat() if stored and computed else None,
        "age_seconds": round((now - computed).total_seconds(), 1) if stored and computed else None,
        "seconds": row.report_seconds if stored else None,
        "job": job,
        "runs_after": _aware(row.run_after).isoformat() if job == "queued" else None,
        "error": (row.last_error or "").splitlines()[-1][:300]
        if job == "failed" and row.last_error
        else None,
    }


def queue(session: Session, study: Study, include_practice: bool, row: FigureJob | None) -> None:
    """Queue a recomputation of the report and its figures, debounced."""
    refresh = _setting("REPORT_REFRESH_SECONDS", REFRESH_SECONDS)
    wait = max(refresh, (row.report_seconds or 0.0) if row is not None else 0.0)
    finished = _aware(row.report_at) if row is not None else None
    after = finished + timedelta(seconds=wait) if finished is not None else None
    enqueue(session, study, include_practice, run_after=max(after, utcnow()) if after else None)


def served_report(
    session: Session, study: Study, *, include_practice: bool, queue_when_stale: bool = True
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The report to show and its ``served`` state (the report is None while none is stored).
    A stale or missing stored report is queued for recomputation (``queue_when_stale``; this
    writes and commits the job's row)."""
    if is_small(session, study):
        return study_report(session, study, include_practice=include_practice), inline()
    row, served = _stored(session, study, include_practice, queue_when_stale)
    if row is None or row.report_at is None:
        return None, served
    return _now(json.loads(row.report), row), served


def served_digest(
    session: Session, study: Study, *, include_practice: bool
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """What the dashboard shows (:func:`app.quality.digest.digest`) and its ``served`` state:
    a small study's computed in the request, a big one's stored digest (kilobytes at any
    size; a report stored before digests were is digested once here). Queues like
    :func:`served_report`."""
    if is_small(session, study):
        return digest(study_report(session, study, include_practice=include_practice)), inline()
    row, served = _stored(session, study, include_practice, True)
    if row is None or row.report_at is None:
        return None, served
    found = json.loads(row.digest) if row.digest else digest(json.loads(row.report))
    return _now(found, row), served


def _now(report: dict[str, Any], row: FigureJob) -> dict[str, Any]:
    """``report`` (or its digest) with the slow figures' job as it is now, not as it was."""
    unitized = (report.get("agreement") or {}).get("unitized")
    if isinstance(unitized, dict):
        unitized.update(job_state(row))
    return report


def inline() -> dict[str, Any]:
    """The ``served`` object of a report computed in the request."""
    return {
        "mode": "inline",
        "state": "current",
        "computed_at": datetime.now(UTC).isoformat(),
        "age_seconds": 0.0,
        "seconds": None,
        "job": None,
        "runs_after": None,
        "error": None,
    }


def stored_text(
    session: Session, study: Study, *, include_practice: bool
) -> tuple[str | None, dict[str, Any]]:
    """report.json's body for a big study without parsing the stored report: its JSON text
    with ``served`` spliced in as the last key (``agreement.unitized`` as of the computation),
    or None while none is stored. Queues like :func:`served_report`."""
    row, served = _stored(session, study, include_practice, True)
    if row is None or not (row.report or "").endswith("}"):
        return None, served
    return row.report[:-1] + ', "served": ' + json.dumps(served, ensure_ascii=False) + "}", served


def _stored(
    session: Session, study: Study, include_practice: bool, queue_when_stale: bool
) -> tuple[FigureJob | None, dict[str, Any]]:
    """The study's stored report's row and state; queues a recomputation when stale."""
    now = datetime.now(UTC)
    change = changes.latest(session, study.id)
    row = _row(session, study, include_practice)
    served = state(row, change, now)
    if queue_when_stale and served["state"] != "current" and served["job"] in (None, "failed"):
        session.commit()
        begin_write(session)
        queue(session, study, include_practice, _row(session, study, include_practice))
        session.commit()
        row = _row(session, study, include_practice)
        served = state(row, change, now)
    return row, served


def store(
    session: Session, study: Study, include_practice: bool, report: dict[str, Any], *,
    change: int, seconds: float,
) -> None:  # fmt: skip
    """Keep ``report`` (computed after work change ``change``) as the study's served report;
    the caller commits."""
    row = _row(session, study, include_practice) or FigureJob(
        study_id=study.id, include_practice=include_practice, status="done", attempts=0
    )
    row.report = json.dumps(report, ensure_ascii=False, default=str)
    row.digest = json.dumps(digest(report), ensure_ascii=False, default=str)
    row.report_change, row.report_at, row.report_seconds = change, utcnow(), round(seconds, 3)
    session.add(row)


def read_current(
    session: Session, study: Study, *, include_practice: bool
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The stored report and its ``served`` state when it is current (no change to the
    counted work since it was computed: one index look-up, no read of the work), else None
    and the state (a recomputation queued as for the dashboard)."""
    text, found = stored_text(session, study, include_practice=include_practice)
    if text is None or found["state"] != "current":
        return None, found
    return json.loads(text), found


def figures_done(report: dict[str, Any] | None) -> bool:
    """Whether a report's slow figures are current (not stale, partial or none)."""
    unitized = ((report or {}).get("agreement") or {}).get("unitized") or {}
    return unitized.get("state") == "current"


def command_report(
    session: Session,
    study: Study,
    *,
    include_practice: bool,
    wait: float | None = None,
    poll: float = 1.0,
    computing: Callable[[dict[str, Any]], None] | None = None,
    as_text: bool = False,
) -> dict[str, Any] | str:
    """What ``marginalia report`` prints (docs/CONTRACT.md), never a silent recomputation of
    the slow figures: the stored report when the counted work has not changed since it was
    computed; else, with ``wait`` seconds, the one the worker stores meanwhile (its figures
    brought current; :class:`TimeoutError` when it does not come); else the report computed
    now with the slow figures as last stored (their state and age in
    ``agreement.unitized``; ``computing`` is told the stored report's state first). ``served``
    says which (``stored`` or ``inline``). ``as_text``: a current stored report comes as its
    JSON text, never parsed (megabytes at a million annotations)."""
    deadline = None if wait is None else time.monotonic() + wait
    if as_text and deadline is None:
        text, found = stored_text(session, study, include_practice=include_practice)
        if text is not None and found["state"] == "current":
            return text
    while True:
        report, found = read_current(session, study, include_practice=include_practice)
        if report is not None and (deadline is None or figures_done(report)):
            return report
        if deadline is None:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(found.get("job") or "none")
        session.commit()  # a fresh read at the next look
        time.sleep(poll)
    if computing is not None:
        computing(found)
    report = study_report(session, study, include_practice=include_practice)
    report["served"] = inline()
    return report
