"""Scoring one assignment's live annotations: recall against the detector's suggestions,
precision/recall/F1 against gold errors. The maths lives in :mod:`app.quality.scoring`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Annotation, Assignment, Document, GoldError, Segment, Suggestion
from app.quality.scoring import (
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
            select(
                Annotation.id,
                Annotation.segment,
                Annotation.start.label("start"),
                Annotation.end.label("end"),
                Annotation.category,
                Annotation.text,
            )
            .where(Annotation.assignment_id == assignment.id, Annotation.removed_at.is_(None))
            .order_by(Annotation.id)
        )
    ]


def score_against_suggestions(session: Session, assignment: Assignment) -> dict[str, Any]:
    """Recall of the worker's live annotations over the document's suggestions.

    A suggestion counts as caught when the worker marked the same category over an
    overlapping span (whole-sentence categories: anywhere in the same sentence).
    """
    document: Document = assignment.document
    suggested = [
        Span(document.external_id, s.segment, s.start, s.end, s.category, s.detector, s.text, s.id)
        for s in session.execute(
            select(
                Suggestion.id,
                Suggestion.segment,
                Suggestion.start.label("start"),
                Suggestion.end.label("end"),
                Suggestion.category,
                Suggestion.detector,
                Suggestion.text,
            )
            .where(Suggestion.document_id == document.id)
            .order_by(Suggestion.segment, Suggestion.start)
        )
    ]
    if not suggested:  # nothing to catch: the worker's spans and the texts change nothing
        return {**suggestion_recall([], []), "detector": []}
    result = suggestion_recall(
        worker_spans(session, assignment),
        suggested,
        texts=_texts(session, document),
        scopes=scopes_from_taxonomy(assignment.study.taxonomy),
        categories=sorted({s.category for s in suggested}),
    )
    result["detector"] = sorted({s.source for s in suggested})
    return result


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
