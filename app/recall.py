"""Scoring a submitted assignment against its document's detector suggestions."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Annotation, Assignment, Document, Segment, Suggestion
from app.scoring import Span, scopes_from_taxonomy, suggestion_recall


def score_against_suggestions(session: Session, assignment: Assignment) -> dict[str, Any]:
    """Recall of the worker's live annotations over the document's suggestions.

    A suggestion counts as caught when the worker marked the same category over an
    overlapping span (whole-sentence categories: anywhere in the same sentence).
    """
    document: Document = assignment.document
    doc_key = document.external_id
    texts = {
        (doc_key, index): text
        for index, text in session.execute(
            select(Segment.index, Segment.text).where(Segment.document_id == document.id)
        )
    }
    marked = [
        Span(doc_key, a.segment, a.start, a.end, a.category, assignment.worker_id, a.text, a.id)
        for a in session.scalars(
            select(Annotation).where(
                Annotation.assignment_id == assignment.id, Annotation.removed_at.is_(None)
            )
        )
    ]
    suggested = [
        Span(doc_key, s.segment, s.start, s.end, s.category, s.detector, s.text, s.id)
        for s in session.scalars(
            select(Suggestion)
            .where(Suggestion.document_id == document.id)
            .order_by(Suggestion.segment, Suggestion.start)
        )
    ]
    taxonomy = assignment.study.taxonomy
    result = suggestion_recall(
        marked,
        suggested,
        texts=texts,
        scopes=scopes_from_taxonomy(taxonomy),
        categories=sorted({s.category for s in suggested}),
    )
    result["detector"] = sorted({s.source for s in suggested})
    return result
