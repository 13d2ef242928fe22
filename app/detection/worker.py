"""Running the detector over stored documents: the worker loop and ``marginalia detect``.

The detector itself (backends, batching, label grammar) lives in ``model_server``; this
module moves documents in and suggestions out of the database.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import traceback
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from app.annotation.cache import segment_texts
from app.db import begin_write
from app.detection import importing, jobs, retraining
from app.detection.clusters import stored_clusters
from app.detection.importing import NlpLoader
from app.detection.learned_models import detector_for
from app.llm import steps as llm_steps
from app.models import (
    DetectionJob,
    DetectorVersion,
    Document,
    Study,
    Suggestion,
    changes,
    span_place,
)
from app.quality.figure_jobs import queue_changed
from app.quality.figure_jobs import run_next as run_figures
from app.queue import is_transient
from model_server.interface import DetectionStats, at_hint_level

log = logging.getLogger(__name__)


def store_suggestions(session: Session, document: Document, rows: list[Any]) -> int:
    """Replace the document's suggestions with ``rows`` (model_server SuggestionRow)."""
    session.execute(delete(Suggestion).where(Suggestion.document_id == document.id))
    changes.mark(session, document.study_id, "suggestions")  # a Core delete
    session.add_all(
        Suggestion(
            document_id=document.id,
            **span_place(r),
            score=float(r.score),
            detector=r.detector,
            detector_version=r.detector_version,
            reason=getattr(r, "reason", "") or None,
            paired_segment=getattr(r, "paired_segment", None),
            paired_start=getattr(r, "paired_start", None),
            paired_end=getattr(r, "paired_end", None),
            paired_text=getattr(r, "paired_text", None),
        )
        for r in rows
    )
    return len(rows)


def record_detector_version(session: Session, detector: Any) -> DetectorVersion:
    """The row of this detector version, made on first use with its ``calibration`` (the
    confident thresholds it ships, ``{}`` when it has none). Never changed afterwards."""
    name, version = str(detector.name), str(detector.version)
    query = select(DetectorVersion).where(
        DetectorVersion.detector == name, DetectorVersion.version == version
    )
    row = session.scalar(query)
    if row is not None:
        return row
    row = DetectorVersion(
        detector=name, version=version, calibration=getattr(detector, "calibration", None) or {}
    )
    try:
        with session.begin_nested():  # another worker may insert the same version meanwhile
            session.add(row)
    except IntegrityError:
        row = session.scalars(query).one()
    return row


def detect_one(session: Session, document: Document, detector: Any) -> DetectionStats:
    """Run the detector over one document and store its suggestions (caller commits);
    returns what it cost (tokens, seconds) and what was dropped, logged per document.

    The detector runs after the reads' transaction has ended, and the suggestions are
    stored in a write transaction begun for them: on SQLite a read transaction cannot turn
    into a write once another writer (an annotator's save) committed meanwhile ("database
    is locked" at once, whatever the busy timeout), while a write begun afresh waits for
    the lock."""
    from model_server.pipeline import detect_document_with_stats

    study = session.get(Study, document.study_id)
    assert study is not None
    detector = detector_for(session, study, detector)  # the study's learned model, if chosen
    segments = segment_texts(session, document.id)
    level = (study.settings or {}).get("hints")
    # the import's entity clusters: MiniLM's CharE heads read them (whole-document evidence)
    clusters = stored_clusters(session, document.id)
    taxonomy = study.taxonomy
    if session.in_transaction():
        session.commit()  # nothing pending: ends the reads before the model runs
    rows, stats = detect_document_with_stats(
        segments, at_hint_level(detector, level), taxonomy, clusters
    )
    begin_write(session)
    record_detector_version(session, detector)
    store_suggestions(session, document, rows)
    log.info(
        "document %s: %d suggestions, %.2f s, %d tokens (%d prompt, %d completion), "
        "%d requests, %d cached, %d retries, %d dropped (%d malformed, %d truncated, "
        "%d refused, %d bad items, %d unknown category, %d unlocatable)",
        document.id,
        stats.suggestions,
        stats.seconds,
        stats.tokens,
        stats.prompt_tokens,
        stats.completion_tokens,
        stats.requests,
        stats.cache_hits,
        stats.retries,
        stats.dropped,
        stats.malformed,
        stats.truncated,
        stats.refused,
        stats.bad_items,
        stats.unknown_category,
        stats.unlocatable,
    )
    return stats


def run_job(session: Session, job: DetectionJob, detector: Any) -> DetectionStats:
    document = session.get(Document, job.document_id)
    if document is None:  # deleted since it was queued
        jobs.complete(session, job)
        return DetectionStats()
    stats = detect_one(session, document, detector)
    jobs.complete(session, job)
    return stats


def work(
    session_factory: Callable[[], Session],
    detector: Any,
    *,
    once: bool = False,
    poll_seconds: float = 2.0,
    should_stop: Callable[[], bool] = lambda: False,
    load_nlp: NlpLoader | None = None,
    figures: bool = True,
    trainings: bool = True,
    llm: bool = True,
) -> dict[str, float]:
    """Claim and run jobs until stopped (or, with ``once``, until the queues are empty).

    Import jobs (when ``load_nlp`` is given) go first, then detection jobs (when
    ``detector`` is not None), then an LLM annotator's document or calibration (with
    ``llm``: app/llm/steps.py), then keeping each study's report and slow figures current
    (with ``figures``: a job queued for each study whose counted work changed,
    app/quality/figure_jobs.py; ``once``: at once, not debounced), then a retraining of a study's learned detector (with
    ``trainings``: app/detection/retraining.py). One bad document or file never stops the loop: its error is
    recorded (and, for detection or a transient import error, retried later).
    """
    name = f"{socket.gethostname()}:{os.getpid()}"
    stats: dict[str, float] = {"done": 0, "failed": 0, "suggestions": 0, "tokens": 0}
    stats.update(dropped=0, seconds=0.0)
    if load_nlp is not None:
        stats |= {"imports": 0, "imports_failed": 0}
    while not should_stop():
        try:
            claimed = _work_once(session_factory, name, detector, load_nlp, stats)
            if not claimed and llm:
                claimed = llm_steps.run_next(session_factory, name)
            if not claimed and figures:
                with session_factory() as session:
                    queue_changed(session, at_once=once)  # studies whose work changed
                    claimed = run_figures(session, name)
            if not claimed and trainings:
                with session_factory() as session:
                    every = 0.0 if once else retraining.CHECK_EVERY
                    claimed = retraining.run_next(session, name, check_every=every)
        except OperationalError as exc:  # the database is away or locked: wait, try again
            log.warning("worker: database error, retrying: %s", str(exc).splitlines()[0])
            claimed = False
        if not claimed:
            if once:
                break
            time.sleep(poll_seconds)
    return stats


def _work_once(
    session_factory: Callable[[], Session],
    name: str,
    detector: Any,
    load_nlp: NlpLoader | None,
    stats: dict[str, float],
) -> bool:
    """Run one import or detection job; False when none was runnable."""
    with session_factory() as session:
        if load_nlp is not None:
            outcome = importing.run_next(session, name, load_nlp)
            if outcome is not None:
                key = "imports" if outcome == "done" else f"imports_{outcome}"
                stats[key] = stats.get(key, 0) + 1
                return True
        job = jobs.claim(session, name) if detector is not None else None
        if job is None:
            return False
        job_id = job.id
        try:
            cost = run_job(session, job, detector)
            stats["suggestions"] += cost.suggestions
            stats["tokens"] += cost.tokens
            stats["dropped"] += cost.dropped
            stats["seconds"] += cost.seconds
            stats["done"] += 1
        except Exception as exc:  # noqa: BLE001 - the loop must survive any document
            failed = jobs.fail(session, job_id, "".join(traceback.format_exception(exc)))
            first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
            if is_transient(exc) and failed.status == "queued":
                # the database was busy or away: the job is tried again, not failed
                log.info("detection job %s: %s; tried again shortly", job_id, first_line)
                stats["retried"] = stats.get("retried", 0) + 1
            else:
                log.warning("detection job %s failed: %s", job_id, first_line)
                stats["failed"] += 1
        return True


def detect_study(session: Session, study: Study, detector: Any, progress: bool = True) -> int:
    """Run the detector over every document of a study now; returns the suggestion count."""
    from rich.progress import track

    documents = session.scalars(
        select(Document).where(Document.study_id == study.id).order_by(Document.position)
    ).all()
    total = 0
    iterator = track(documents, description="detecting") if progress else documents
    for document in iterator:
        total += detect_one(session, document, detector).suggestions
        for job in session.scalars(
            select(DetectionJob).where(DetectionJob.document_id == document.id)
        ):
            job.status, job.last_error = "done", None
        session.commit()
    return total
