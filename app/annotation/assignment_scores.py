"""Scoring one assignment's live annotations: recall against the detector's suggestions,
precision/recall/F1 against gold errors. The maths lives in :mod:`app.rules.scoring`."""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation import hot_sql
from app.annotation.cache import taxonomy_of, texts_of
from app.annotation.handle import Handle
from app.models import Annotation, Assignment, Document, GoldError, Segment, Study, span_columns
from app.rules.scoring import (
    Span,
    TextKey,
    precision_recall_f1,
    scopes_from_taxonomy,
    suggestion_recall,
)


def _texts(session: Session, document: Document) -> dict[TextKey, str]:
    return {
        (document.external_id, index): text
        for index, text in session.execute(
            select(Segment.index, Segment.text).where(Segment.document_id == document.id)
        )
    }


def worker_spans(session: Session, assignment: Assignment) -> list[Span]:
    """The assignment's live (not removed) annotations as spans, in creation order."""
    doc_key = assignment.document.external_id
    return [
        Span(doc_key, a.segment, a.start, a.end, a.category, assignment.worker_id, a.text, a.id)
        for a in session.execute(  # rows, not ORM objects
            select(Annotation.id, *span_columns(Annotation.__table__.c))
            .where(Annotation.assignment_id == assignment.id, Annotation.removed_at.is_(None))
            .order_by(Annotation.id)
        )
    ]


class SuggestionScore(NamedTuple):
    """The submit's suggestion recall (``assignment.scores["suggestions"]``) and
    ``hot_sql.MARK_CHANGES`` read with it (the submit's write is guarded by it)."""

    score: dict[str, Any]
    changes: int


def score_against_suggestions(db: Handle, assignment: Assignment) -> SuggestionScore:
    """Recall of the worker's live annotations over the document's suggestions.

    A suggestion counts as caught when the worker marked the same category over an
    overlapping span (whole-sentence categories: anywhere in the same sentence). One read
    (``hot_sql.SUBMIT_SPANS``, on the submit's handle); the document's segment texts and the
    study's scopes come from the actions' per-process cache
    (:func:`app.annotation.cache.texts_of`, :func:`app.annotation.cache.taxonomy_of`), both
    only when the document has suggestions. Reads ``assignment``'s id and worker_id, its
    document's id, external_id and created_at, its study's id and taxonomy_hash.
    """
    document: Document = assignment.document
    study: Study = assignment.study
    params = {"document_id": document.id, "assignment_id": assignment.id}
    rows = db.run(hot_sql.SUBMIT_SPANS, params, alone=True).all()
    spans: tuple[list[Span], list[Span]] = ([], [])
    changes = 0
    for kind, ref, segment, start, end, category, source, text in rows:
        if kind == 2:
            changes = ref
            continue
        source = source if kind == 0 else assignment.worker_id
        spans[kind].append(
            Span(document.external_id, segment, start, end, category, source, text, ref)
        )
    suggested, worker = spans
    if not suggested:  # nothing to catch: the worker's spans and the texts change nothing
        return SuggestionScore({**suggestion_recall([], []), "detector": []}, changes)
    result = suggestion_recall(
        worker,
        suggested,
        texts={
            (document.external_id, index): text
            for index, text in enumerate(texts_of(db, document.id, document.created_at))
        },
        scopes=taxonomy_of(db, study.id, study.taxonomy_hash).scopes,
        categories=sorted({s.category for s in suggested}),
    )
    result["detector"] = sorted({s.source for s in suggested})
    return SuggestionScore(result, changes)


def score_against_gold(session: Session, assignment: Assignment) -> dict[str, Any] | None:
    """P/R/F1 of the assignment's live annotations against its document's gold errors.

    ``None`` when the document is not a gold document (not imported with ``--gold`` and
    no gold errors); else ``{"documents": 1, "per_category": ..., "overall": ...}``.
    """
    document: Document = assignment.document
    errors = session.scalars(
        select(GoldError)
        .where(GoldError.document_id == document.id, GoldError.is_check.is_(False))
        .order_by(GoldError.id)
    ).all()
    if not errors and not document.is_gold:
        return None
    gold = [
        Span(document.external_id, e.segment, e.start, e.end, e.category, "gold", e.text, e.id)
        for e in errors
    ]
    taxonomy = assignment.study.taxonomy or {}
    scored = precision_recall_f1(
        worker_spans(session, assignment),
        gold,
        texts=_texts(session, document),
        scopes=scopes_from_taxonomy(taxonomy),
        categories=[cat["id"] for cat in taxonomy.get("categories", [])],
    )
    return {"documents": 1, **scored}


# the statuses of an assignment whose work is done and can be scored against gold: submitted,
# a screened-out worker's training documents, and a rejected worker's (the worker pages keep
# showing the figures that led to the reject)
SCORED_STATUSES = ("submitted", "screened_out", "rejected")


def gold_documents(session: Session, study: Study) -> dict[int, bool]:
    """The study's gold documents (flagged gold, or carrying gold errors that are not
    attention checks: the report's rule), each with whether it is a practice document."""
    carrying = select(GoldError.document_id).where(GoldError.is_check.is_(False))
    return dict(
        session.execute(
            select(Document.id, Document.is_practice).where(
                Document.study_id == study.id,
                Document.is_gold.is_(True) | Document.id.in_(carrying),
            )
        ).all()
    )


def gold_f1(session: Session, assignment: Assignment, gold: dict[int, bool]) -> float | None:
    """An assignment's **gold F1** (docs/METRICS.md, "Against gold"): the strict overall F1
    of its live annotations against its document's gold errors, for a done assignment
    (:data:`SCORED_STATUSES`) on a gold document (``gold``: :func:`gold_documents`), else
    None. The stored score where the qualification or the pause rule stored one (the same
    function's result), else computed now and not stored: a page or an export never writes."""
    if assignment.status not in SCORED_STATUSES or assignment.document_id not in gold:
        return None
    stored = (assignment.scores or {}).get("gold") or {}
    scored = stored if stored.get("rule") == "strict" else score_against_gold(session, assignment)
    return ((scored or {}).get("overall") or {}).get("f1")


def best_gold_f1(scored: list[tuple[int, float | None]], gold: dict[int, bool]) -> float | None:
    """A worker's **best gold F1**: the highest gold F1 of their assignments (``scored``:
    each one's document id and :func:`gold_f1`) on graded gold documents, every gold
    document but the practice ones (practice is never graded); None without any."""
    graded = [f1 for doc, f1 in scored if f1 is not None and not gold.get(doc, True)]
    return max(graded) if graded else None
