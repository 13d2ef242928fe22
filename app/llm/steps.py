"""The worker loop's LLM step (app/detection/worker.py): one document job, else one run's
calibration. Any failure is recorded on its job or run; the loop goes on."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable

from sqlalchemy.orm import Session

from app.llm import runs
from app.llm.annotate import run_job
from model_server.llm_client import LLMUnavailable

log = logging.getLogger(__name__)


def run_next(
    sessions: Callable[[], Session], worker: str, *, gamma_seconds: float | None = None
) -> bool:
    """Run one LLM job or one calibration; False when neither was waiting."""
    with sessions() as session:
        if not runs.anything_to_do(session):
            return False
        job = runs.claim_job(session, worker)
        if job is not None:
            job_id = job.id
            try:
                outcome = run_job(sessions, session, job_id)
                log.info("llm job %s: %s", job_id, outcome)
            except LLMUnavailable as exc:
                if exc.transient:
                    failed = runs.retry_job(session, job_id, str(exc))
                    log.info("llm job %s: %s; %s", job_id, exc, failed and failed.status)
                else:
                    session.rollback()
                    runs.end_job(session, job_id, "failed", last_error=str(exc)[:4000])
                    log.warning("llm job %s failed: %s", job_id, exc)
            except Exception as exc:  # noqa: BLE001 - the loop must survive any document
                runs.retry_job(session, job_id, "".join(traceback.format_exception(exc)))
                log.warning("llm job %s: %s", job_id, (str(exc).splitlines() or [""])[0])
            return True
        runs.release_finished(session)
        run = runs.claim_run(session, worker)
        if run is None:
            return False
        run_id = run.id
        try:
            from app.llm.calibration import calibrate

            figures = calibrate(session, run.study_id, run.annotator, gamma_seconds=gamma_seconds)
            runs.end_run(session, run_id, calibration=figures)
        except Exception as exc:  # noqa: BLE001 - the loop must survive any study
            runs.end_run(session, run_id, error="".join(traceback.format_exception(exc)))
            log.warning("llm calibration %s: %s", run_id, (str(exc).splitlines() or [""])[0])
        return True
