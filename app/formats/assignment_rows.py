"""The assignment-level export's rows (one per assignment of the study), shared by the
``assignments-csv`` and ``assignments-jsonl`` writers; CONTRACT.md lists the columns.

The worker's attention-check catch rate and flag come from ``app/quality/attention.py``, the
questionnaire answers from ``app/documents/journey.py``, the worker's MACE competence and
consensus F1 from the stored figures (``app/quality/figures.py``: as last computed). A new column is added here, to
:data:`COLUMNS` and to the row, and to CONTRACT.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.annotation.assignment_scores import gold_documents, gold_f1
from app.annotation.reviews import reviews
from app.documents.journey import answers_by_assignment
from app.documents.studies import segments_per_document
from app.models import (
    Annotation,
    Assignment,
    Document,
    Study,
    SuggestionEvent,
    isoformat,
)
from app.quality.attention import WITH_REJECTED, catch_rates
from app.quality.time_on_task import segment_seconds, worker_times
from app.rules.stored_figures import stored_reliability
from app.rules.work import human_worker, is_live

COLUMNS = (
    "study",
    "worker_id",
    "assignment",
    "document",
    "platform",
    "prolific_pid",
    "prolific_study_id",
    "prolific_session_id",
    "mturk_worker_id",
    "mturk_assignment_id",
    "mturk_hit_id",
    "condition",
    "status",
    "opened_at",
    "submitted_at",
    "active_seconds",
    "segment_seconds",
    "segments",
    "annotations",
    "suggestions_shown",
    "suggestions_accepted",
    "suggestions_dismissed",
    "gold_f1",
    "suggestion_recall",
    "speeder",
    "review_status",
    "blocked",
    "check_catch_rate",
    "check_flagged",
    "questionnaire",
    "mace_competence",
    "consensus_f1",
    "expected_f1",
    "session",
)


def columns() -> tuple[str, ...]:
    return COLUMNS


def _counts(session: Session, study: Study) -> tuple[dict, dict, dict]:
    mine = select(Assignment.id).where(Assignment.study_id == study.id)
    live = dict(
        session.execute(
            select(Annotation.assignment_id, func.count())
            .where(Annotation.assignment_id.in_(mine), is_live())
            .group_by(Annotation.assignment_id)
        ).all()
    )
    events: dict[int, Counter] = defaultdict(Counter)
    for aid, event, n in session.execute(
        select(SuggestionEvent.assignment_id, SuggestionEvent.event, func.count())
        .where(SuggestionEvent.assignment_id.in_(mine))
        .group_by(SuggestionEvent.assignment_id, SuggestionEvent.event)
    ):
        events[aid][event] = n
    segments = segments_per_document(session, study)
    return live, events, segments


def assignment_rows(session: Session, study: Study) -> Iterator[dict[str, Any]]:
    """One dict per assignment (document order, then assignment id), keyed by :func:`columns`."""
    assignments = session.execute(
        select(Assignment, Document.external_id)
        .join(Document, Document.id == Assignment.document_id)
        .where(Assignment.study_id == study.id, human_worker())
        .order_by(Document.position, Assignment.id)
    ).all()
    live, events, segments = _counts(session, study)
    seconds = segment_seconds(session, [a.id for a, _ in assignments])
    times = worker_times(session, study)
    verdicts = reviews(session, study)
    rates = catch_rates(session, study, work=WITH_REJECTED)
    answers = answers_by_assignment(session, study)
    models, _ = stored_reliability(session, study)
    gold = gold_documents(session, study)
    for a, external_id in assignments:
        data = a.platform_data or {}
        prolific, mturk = a.platform == "prolific", a.platform == "mturk"
        measured = seconds.get(a.id)
        scores = a.scores or {}
        verdict = verdicts.get(a.worker_id)
        yield {
            "study": study.slug,
            "worker_id": a.worker_id,
            "assignment": a.token,
            "document": external_id,
            "platform": a.platform,
            "prolific_pid": a.worker_id if prolific else None,
            "prolific_study_id": data.get("study_id") if prolific else None,
            "prolific_session_id": data.get("session_id") if prolific else None,
            "mturk_worker_id": a.worker_id if mturk else None,
            "mturk_assignment_id": data.get("assignment_id") if mturk else None,
            "mturk_hit_id": data.get("hit_id") if mturk else None,
            "condition": a.condition,
            "status": a.status,
            "opened_at": isoformat(a.created_at),
            "submitted_at": isoformat(a.submitted_at),
            "active_seconds": round(sum(measured.values()), 3) if measured else None,
            "segment_seconds": (
                {str(k): v for k, v in sorted(measured.items())} if measured else None
            ),
            "segments": segments.get(a.document_id, 0),
            "annotations": live.get(a.id, 0),
            "suggestions_shown": events[a.id]["shown"] if a.id in events else 0,
            "suggestions_accepted": events[a.id]["accepted"] if a.id in events else 0,
            "suggestions_dismissed": events[a.id]["dismissed"] if a.id in events else 0,
            "gold_f1": gold_f1(session, a, gold),
            "suggestion_recall": (scores.get("suggestions") or {}).get("recall"),
            "speeder": bool(times.get(a.worker_id, {}).get("speeder")),
            "review_status": verdict.status if verdict else None,
            "blocked": bool(verdict.blocked) if verdict else False,
            "check_catch_rate": rates[a.worker_id].rate if a.worker_id in rates else None,
            "check_flagged": rates[a.worker_id].flagged if a.worker_id in rates else False,
            "questionnaire": answers.get(a.id) or None,
            "mace_competence": (models.get(a.worker_id) or {}).get("competence"),
            "consensus_f1": (models.get(a.worker_id) or {}).get("consensus_f1"),
            "expected_f1": (models.get(a.worker_id) or {}).get("expected_f1"),
            "session": a.session_id,
        }
