"""Running an import job in the worker: parse the uploaded file, find entities, store in bulk.

A bad file (it does not parse, a document id clashes, a gold category is unknown) fails the
job with its one-line message and stores nothing; a transient database error (locked,
connection lost) puts it back in the queue with a backoff. The documents are stored in one
transaction that also marks the job done, so they appear all at once or not at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy.orm import Session

from app.detection import import_jobs
from app.documents import staged
from app.errors import Conflict, InvalidInput, MarginaliaError
from app.models import ImportJob, Study
from app.queue import is_transient

log = logging.getLogger(__name__)

NlpLoader = Callable[[], Any]


def _options(job: ImportJob) -> tuple[int | None, bool, bool]:
    options = job.options or {}
    per_segment = options.get("sentences_per_segment")
    return (
        int(per_segment) if per_segment else None,
        bool(options.get("gold") or options.get("checks") or options.get("practice")),
        bool(options.get("ner")),
    )


def _batches(job: ImportJob) -> Iterator[list[Any]]:
    """The uploaded file's documents in batches: a big one read an entry at a time from its
    bytes (app/formats/streamed.py), never parsed whole."""
    from app.formats import parse_document_batches

    per_segment, gold, _ = _options(job)
    return parse_document_batches(
        job.filename,
        job.format,
        sentences_per_segment=per_segment,
        gold=gold,
        as_work=bool((job.options or {}).get("as_work")),
        source=(job.options or {}).get("source"),  # the upload form's source, if given
        payload=job.payload,
    )


def run_import(session: Session, job: ImportJob, load_nlp: NlpLoader) -> dict[str, Any]:
    """Parse, analyse and store one claimed job; returns its counts (raises on failure).
    The two phases of :mod:`app.documents.staged`: the file read, analysed and prepared a
    batch at a time without a lock (progress reported as it goes), then stored in one
    transaction that also marks the job done."""
    study = session.get(Study, job.study_id)
    # End the read without expiring the loaded job and study (a rollback would, and the
    # next attribute read would start a read that SQLite cannot later turn into a write).
    session.commit()
    if study is None:
        raise InvalidInput("the study was deleted")
    _, gold, ner = _options(job)
    nlp = load_nlp() if ner else None
    checks = bool((job.options or {}).get("checks"))
    practice = bool((job.options or {}).get("practice"))
    import_jobs.report_progress(session, job, 0)
    with staged.prepare(
        study,
        _batches(job),
        gold=gold,
        checks=checks,
        practice=practice,
        nlp=nlp,
        progress=lambda done: import_jobs.report_progress(session, job, done),
    ) as spill:
        import_jobs.report_progress(session, job, spill.documents, total=spill.documents)
        if session.in_transaction():
            session.commit()  # nothing pending: the write starts with the lock
        study = session.get(Study, job.study_id)
        session.commit()
        if study is None:
            raise InvalidInput("the study was deleted")
        result = staged.store(session, study, spill)
    counts = {
        "documents": result.documents,
        "segments": result.segments,
        "gold": gold and not checks,
        "checks": checks,
        "gold_errors": result.gold_errors,
        "unlocated_gold": result.unlocated_gold,
        "ambiguous_gold": result.ambiguous_gold,
        "mid_word_gold": result.mid_word_gold,
        "imported_annotations": result.imported_annotations,
        "imported_assignments": result.imported_assignments,
        "imported_suggestions": result.imported_suggestions,
        "dropped_annotations": result.dropped_annotations,
        "unplaced_annotations": result.unplaced_annotations,
        "check_documents": result.check_documents,
        "skipped_pairs": result.skipped_pairs,
        "entities": result.entities,
        "ner_available": result.ner_available,
        "detection_jobs": result.detection_jobs,
        "lock_seconds": round(result.lock_seconds, 2),
    }
    import_jobs.mark_done(session, job, counts)
    session.commit()
    return counts


def run_next(session: Session, worker: str, load_nlp: NlpLoader) -> str | None:
    """Claim and run the oldest import job; returns its outcome, or None when none waits."""
    job = import_jobs.claim(session, worker)
    if job is None:
        return None
    job_id = job.id
    try:
        with import_jobs.KeepAlive(session.get_bind(), job):
            counts = run_import(session, job, load_nlp)
    except Conflict as exc:  # another worker took the job over: it stores it, not us
        session.rollback()
        log.warning("import job %s: %s", job_id, exc)
        return "lost"
    except MarginaliaError as exc:
        import_jobs.fail(session, job_id, str(exc))
        return "failed"
    except Exception as exc:  # noqa: BLE001 - the worker must survive any file
        if is_transient(exc):
            log.warning("import job %s: transient error, retried later: %s", job_id, exc)
            return import_jobs.retry(session, job_id, str(getattr(exc, "orig", None) or exc))
        log.exception("import job %s failed", job_id)
        import_jobs.fail(session, job_id, f"{type(exc).__name__}: {exc}")
        return "failed"
    log.info("import job %s: %s documents stored", job_id, counts["documents"])
    return "done"


def nlp_loader(model: str | None) -> NlpLoader:
    """The spaCy pipeline, loaded on first use (``load_pipeline`` keeps it for the process):
    a worker that runs no import with entity cues never loads it."""

    def load() -> Any:
        from app.entities import load_pipeline

        return load_pipeline(model)

    return load
