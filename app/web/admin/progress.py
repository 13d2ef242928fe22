"""How far a study is: documents and assignments per study, and the dashboard's live figures."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from flask import current_app, has_app_context
from sqlalchemy import func, select

from app.detection import import_jobs
from app.llm.runs import recent_runs
from app.models import Annotation, Assignment, Document, FigureJob, Study, changes
from app.rules.work import (
    ACTIVE,
    SUBMITTED,
    Work,
    document_filter,
    human_worker,
    is_practice,
    role,
    select_documents,
    select_in_hand,
    select_work,
)


def study_progress(db, studies: list[Study]) -> dict[int, dict[str, int]]:
    """Documents that count (not a training phase's practice documents) and their
    assignments (active, submitted) per study."""
    found: dict[int, dict[str, int]] = {s.id: defaultdict(int) for s in studies}
    counted = ~is_practice(studies)
    for sid, count in db.execute(
        select(Document.study_id, func.count()).where(counted).group_by(Document.study_id)
    ):
        if sid in found:
            found[sid]["documents"] = count
    for sid, status, count in db.execute(
        select(Assignment.study_id, Assignment.status, func.count())
        .join(Document, Document.id == Assignment.document_id)
        .where(counted, human_worker())
        .group_by(Assignment.study_id, Assignment.status)
    ):
        if sid in found:
            found[sid][status] = count
    names = {"documents": "documents", ACTIVE: "active", SUBMITTED: "submitted"}
    return {
        sid: {key: counts[name] for name, key in names.items()} for sid, counts in found.items()
    }


def _count(db, query) -> int:
    return db.scalar(select(func.count()).select_from(query.subquery()))


def _in_hand_annotations(db, study: Study, work: Work) -> int:
    """Live annotations in the study's active assignments over the documents that count."""
    return _count(db, select_in_hand(study, work, Annotation.id))


def _submitted_annotations(db, study: Study, work: Work) -> int:
    """The live annotations of the counted work (:func:`app.rules.work.select_work`, the
    report's), counted once per study state.

    The count changes only with the study's counted work, and every such write is in its
    change log (app/models/changes.py), so it is kept per process under the last change and
    read again when a change comes (at a million annotations the count is ~120 ms of
    Postgres; the in-progress count is bounded by the work in hand). The change is read
    settled, once the writers in flight have committed, so no count is kept under a change
    it did not see."""
    memo: dict[tuple, tuple[int, int]] = (
        current_app.extensions.setdefault("submitted_annotations", {}) if has_app_context() else {}
    )
    key = (study.id, study.created_at, work.include_practice)
    change = changes.settled(db, study.id)
    db.commit()  # the settling lock goes at once: writers wait for nothing longer
    kept = memo.get(key)
    if kept is not None and kept[0] == change:
        return kept[1]
    count = _count(db, select_work(study, work, Annotation.id, marks_only=True, ordered=False))
    memo[key] = (change, count)
    return count


def live_progress(db, study: Study, *, include_practice: bool = False) -> dict[str, Any]:
    """Cheap counts for the dashboard's polling: assignments, documents, live annotations,
    over the documents that count (:mod:`app.rules.work`; the practice documents of a
    training phase only with ``include_practice``).

    ``fingerprint`` changes whenever anything a researcher sees on the dashboard changes;
    ``imports`` are the study's latest import jobs (queued, running N of M, done, failed).
    """
    work = Work(include_practice=include_practice)
    docs = db.execute(
        select_documents(
            study,
            work,
            Document.id,
            Document.external_id,
            Document.source,
            Document.is_gold,
            role(study),
        )
    ).all()
    per_doc: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    counts: dict[str, int] = defaultdict(int)
    for doc_id, status, n in db.execute(
        select(Assignment.document_id, Assignment.status, func.count())
        .join(Document, Document.id == Assignment.document_id)
        .where(human_worker(), *document_filter(study, work))
        .group_by(Assignment.document_id, Assignment.status)
    ):
        per_doc[doc_id][status] += n
        counts[status] += n
    annotations = {
        ACTIVE: _in_hand_annotations(db, study, work),
        SUBMITTED: _submitted_annotations(db, study, work),
    }
    needed = study.annotators_per_doc
    documents = [
        {
            "document": ext,
            "source": source or "",
            "gold": bool(gold),
            "role": document_role,
            "submitted": per_doc[doc_id]["submitted"],
            "active": per_doc[doc_id]["active"],
            "abandoned": per_doc[doc_id]["abandoned"],
            "needed": needed,
        }
        for doc_id, ext, source, gold, document_role in docs
    ]
    slots = needed * len(documents)
    submitted_slots = sum(min(d["submitted"], needed) for d in documents)
    assignments = {
        "total": sum(counts.values()),
        "active": counts["active"],
        "submitted": counts["submitted"],
        "abandoned": counts["abandoned"],
    }
    # What the server-rendered sections show (tables, charts): in-progress annotations
    # only move a counter, which the JSON updates without re-reading the page. A big study's
    # figures are its stored report's (app/quality/served.py): a new one or its job's status.
    stored = db.execute(
        select(FigureJob.report_at, FigureJob.status).where(
            FigureJob.study_id == study.id, FigureJob.include_practice.is_(include_practice)
        )
    ).first()
    llm_runs = recent_runs(db, study.id, limit=3)  # their progress moves the fingerprint too
    fingerprint = "-".join(
        str(v)
        for v in (len(documents), *assignments.values(), annotations["submitted"], *(stored or ()))
    ) + "".join(f"-{r['id']}.{r['finished']}.{r['stage']}" for r in llm_runs)
    return {
        "study": study.slug,
        "include_practice": include_practice,
        "documents": len(documents),
        "complete_documents": sum(1 for d in documents if d["submitted"] >= needed),
        "slots": slots,
        "slots_submitted": submitted_slots,
        "percent": round(100 * submitted_slots / slots, 1) if slots else 0.0,
        "assignments": assignments,
        "annotations": {
            "in_progress": annotations["active"],
            "submitted": annotations["submitted"],
        },
        "per_document": documents,
        "imports": import_jobs.recent(db, study.id),
        "llm_runs": llm_runs,
        "fingerprint": fingerprint,
        "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# --- pages -------------------------------------------------------------------------------------
