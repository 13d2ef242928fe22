"""Scoring one assignment's live annotations: recall against the detector's suggestions,
precision/recall/F1 against gold errors. The maths lives in :mod:`app.quality.scoring`."""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation import hot_sql
from app.annotation.cache import taxonomy_of, texts_of
from app.annotation.handle import Handle
from app.models import Annotation, Assignment, Document, GoldError, Segment, Study
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
