"""The LLM annotators' queue on the worker (the claim rules of app/queue.py): a
run (``llm_runs``) is one ``marginalia llm annotate`` or one press of the Settings page's
button, with one job per document (``llm_jobs``); once no job of a run is left to do, the
run itself is queued for its calibration (app/llm/calibration.py).

A job's outcome: ``annotated``, ``skipped`` (the annotator had submitted the document
already: a re-run pays nothing) or ``failed``: an answer malformed twice, the endpoint
refusing the request (a bad key, an unknown model), or the endpoint down through every
attempt (retried by the queue with its backoff first).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import exists, func, select, update
from sqlalchemy.orm import Session

from app import queue
from app.db import begin_write
from app.errors import InvalidInput
from app.llm.annotators import Annotator
from app.models import Document, LlmJob, LlmRun, Study, utcnow
from app.rules.work import Work, select_documents

STALE_AFTER = timedelta(minutes=30)  # a document's requests may take minutes
UNFINISHED = ("queued", "running")


def queue_run(
    session: Session,
    study: Study,
    annotator: Annotator,
    *,
    documents: list[str] | None = None,
    requested_by: str | None = None,
) -> LlmRun:
    """Queue the annotator over ``documents`` (external ids; default: every document that
    counts, app/rules/work.py) in the caller's write transaction; the caller commits."""
    if documents:
        found = dict(
            session.execute(
                select(Document.external_id, Document.id).where(
                    Document.study_id == study.id, Document.external_id.in_(documents)
                )
            ).all()
        )
        missing = [d for d in documents if d not in found]
        if missing:
            raise InvalidInput(f"study {study.slug} has no document {missing[0]!r}")
        ids = [found[d] for d in dict.fromkeys(documents)]
    else:
        ids = list(session.scalars(select_documents(study, Work(), Document.id)))
    if not ids:
        raise InvalidInput(f"study {study.slug} has no document to annotate")
    run = LlmRun(
        study_id=study.id,
        annotator=annotator.name,
        config=annotator.setting(),
        documents=len(ids),
        requested_by=(requested_by or "")[:320] or None,
        status="waiting",
        attempts=0,
    )
    session.add(run)
    session.flush()
    session.add_all(
        LlmJob(run_id=run.id, document_id=doc, status="queued", attempts=0, problems=[])
        for doc in ids
    )
    session.flush()
    return run


_stopped_annotating = queue.gave_up("annotating this document")


def _give_up_job(job: LlmJob, now: datetime) -> None:
    _stopped_annotating(job, now)
    job.outcome = "failed"


_give_up_run = queue.gave_up("calibrating")


def claim_job(session: Session, worker: str) -> LlmJob | None:
    """The oldest runnable document job, marked running and committed."""
    return queue.claim_committed(
        session, LlmJob, worker, stale_after=STALE_AFTER, give_up=_give_up_job
    )


def anything_to_do(session: Session) -> bool:
    """Whether a job or a run is waiting or running (one read: an idle worker's poll writes
    nothing)."""
    jobs = exists().where(LlmJob.status.in_(UNFINISHED))
    pending = exists().where(LlmRun.status.in_(("waiting", *UNFINISHED)))
    found = session.execute(select(jobs | pending)).scalar()
    session.rollback()
    return bool(found)


def release_finished(session: Session) -> int:
    """Queue for calibration every waiting run none of whose jobs is left to do (one
    statement: any worker may run it any time). Commits; how many were released."""
    begin_write(session)
    left = exists().where(LlmJob.run_id == LlmRun.id, LlmJob.status.in_(UNFINISHED))
    released = session.execute(
        update(LlmRun)
        .where(LlmRun.status == "waiting", ~left)
        .values(status="queued", run_after=utcnow())
        .execution_options(synchronize_session=False)
    ).rowcount
    session.commit()
    return released


def claim_run(session: Session, worker: str) -> LlmRun | None:
    """The oldest run due its calibration, marked running and committed."""
    return queue.claim_committed(
        session, LlmRun, worker, stale_after=STALE_AFTER, give_up=_give_up_run
    )


def end_job(session: Session, job_id: int, outcome: str, **fields: Any) -> None:
    """Record a job's outcome (``annotated``, ``skipped``, ``failed`` for good) and its counts,
    in the caller's write transaction if one is open (the marks' own); commits."""
    begin_write(session)
    job = session.get(LlmJob, job_id)
    if job is not None:
        for name, value in fields.items():
            setattr(job, name, value)
        job.outcome, job.finished_at = outcome, utcnow()
        job.status = "failed" if outcome == "failed" else "done"
        if outcome != "failed":
            job.last_error = None
    session.commit()


def retry_job(session: Session, job_id: int, error: str) -> LlmJob | None:
    """After a transient failure: back to the queue after the backoff, or failed for good
    after the queue's last attempt."""
    session.rollback()
    begin_write(session)
    job = session.get(LlmJob, job_id)
    if job is not None:
        job.last_error = error[-4000:]
        queue.requeue(job)
        if job.status == "failed":
            job.outcome = "failed"
    session.commit()
    return job


def end_run(session: Session, run_id: int, *, calibration: Any = None, error: str = "") -> None:
    session.rollback()
    begin_write(session)
    run = session.get(LlmRun, run_id)
    if run is not None:
        run.status = "failed" if error else "done"
        run.finished_at = utcnow()
        run.last_error = error[-4000:] or None
        if calibration is not None:
            run.calibration = calibration
    session.commit()


def run_state(session: Session, run: LlmRun) -> dict[str, Any]:
    """A run as the dashboard and ``marginalia llm status`` show it: documents per outcome,
    tokens spent, seconds, the stage it is in."""
    counts = dict(
        session.execute(
            select(func.coalesce(LlmJob.outcome, LlmJob.status), func.count())
            .where(LlmJob.run_id == run.id)
            .group_by(func.coalesce(LlmJob.outcome, LlmJob.status))
        ).all()
    )
    spent = session.execute(
        select(
            func.coalesce(func.sum(LlmJob.prompt_tokens), 0),
            func.coalesce(func.sum(LlmJob.completion_tokens), 0),
            func.coalesce(func.sum(LlmJob.seconds), 0.0),
            func.coalesce(func.sum(LlmJob.marks), 0),
        ).where(LlmJob.run_id == run.id)
    ).one()
    finished = sum(counts.get(k, 0) for k in ("annotated", "skipped", "failed"))
    stage = {
        "waiting": "annotating",
        "queued": "calibration queued",
        "running": "calibrating",
    }.get(run.status, run.status)
    return {
        "id": run.id,
        "annotator": run.annotator,
        "model": (run.config or {}).get("model", ""),
        "stage": stage,
        "documents": run.documents,
        "finished": finished,
        "annotated": counts.get("annotated", 0),
        "skipped": counts.get("skipped", 0),
        "failed": counts.get("failed", 0),
        "running": counts.get("running", 0),
        "percent": round(100 * finished / run.documents, 1) if run.documents else 100.0,
        "marks": int(spent[3]),
        "prompt_tokens": int(spent[0]),
        "completion_tokens": int(spent[1]),
        "seconds": round(float(spent[2]), 1),
        "error": (run.last_error or "").splitlines()[-1][:300] if run.last_error else None,
    }


def recent_runs(session: Session, study_id: int, limit: int = 5) -> list[dict[str, Any]]:
    """The study's latest runs, newest first (the dashboard's LLM section)."""
    runs = session.scalars(
        select(LlmRun).where(LlmRun.study_id == study_id).order_by(LlmRun.id.desc()).limit(limit)
    ).all()
    return [run_state(session, run) for run in runs]


def latest_calibration(session: Session, study_id: int, annotator: str) -> LlmRun | None:
    """The annotator's latest run with a calibration."""
    return session.scalar(
        select(LlmRun)
        .where(
            LlmRun.study_id == study_id,
            LlmRun.annotator == annotator,
            LlmRun.calibration.is_not(None),
        )
        .order_by(LlmRun.id.desc())
        .limit(1)
    )
