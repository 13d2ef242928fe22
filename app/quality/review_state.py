"""Reading the review of a document: its candidates with their decisions, the errors added,
the review status, the detector's suggestions (one more lane), per-document progress, and
every worker scored against the adjudicated layer (the gold report's figures)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import (
    AdjudicatedError,
    Annotation,
    Assignment,
    Document,
    DocumentReview,
    Segment,
    Study,
    Suggestion,
    isoformat,
)
from app.quality.candidates import (
    PAIRED_FIELDS,
    Candidate,
    document_marks,
    group_candidates,
    paired_json,
)
from app.quality.scoring import Span, TextKey, precision_recall_f1, scopes_from_taxonomy


def texts_of(session: Session, document: Document) -> dict[TextKey, str]:
    rows = session.execute(
        select(Segment.index, Segment.text).where(Segment.document_id == document.id)
    )
    return {(document.external_id, index): text for index, text in rows}


def candidates_of(session: Session, document: Document) -> list[Candidate]:
    """The document's candidate errors (:func:`app.quality.candidates.group_candidates`)."""
    workers, marks = document_marks(session, document)
    scopes = scopes_from_taxonomy(document.study.taxonomy or {})
    return group_candidates(
        document.external_id, workers, marks, texts_of(session, document), scopes
    )


def row_json(row: AdjudicatedError) -> dict[str, Any]:
    return {
        "id": row.id,
        "candidate": row.candidate,
        "decision": row.decision,
        "origin": row.origin,
        "segment": row.segment,
        "start": row.start,
        "end": row.end,
        "text": row.text,
        "category": row.category,
        "paired": paired_json([getattr(row, name) for name in PAIRED_FIELDS]),
        "comment": row.comment,
        "version": row.version,
        "decided_by": row.decided_by,
        "decided_at": isoformat(row.decided_at),
    }


def status_json(review: DocumentReview | None) -> dict[str, Any]:
    if review is None:
        return {"status": "unreviewed", "version": 0, "updated_by": None, "updated_at": None}
    return {
        "status": review.status,
        "version": review.version,
        "updated_by": review.updated_by,
        "updated_at": isoformat(review.updated_at),
    }


def review_json(session: Session, document: Document) -> dict[str, Any]:
    """Everything the review page draws, JSON-ready (text stays text: the page uses nodes)."""
    workers, marks = document_marks(session, document)
    texts = texts_of(session, document)
    scopes = scopes_from_taxonomy(document.study.taxonomy or {})
    candidates = group_candidates(document.external_id, workers, marks, texts, scopes)
    rows = session.scalars(
        select(AdjudicatedError)
        .where(AdjudicatedError.document_id == document.id)
        .order_by(AdjudicatedError.id)
    ).all()
    by_candidate = {row.candidate: row for row in rows if row.candidate is not None}
    current = {c.key for c in candidates}
    suggestions = session.scalars(
        select(Suggestion)
        .where(Suggestion.document_id == document.id)
        .order_by(Suggestion.segment, Suggestion.start)
    ).all()
    return {
        "document": document.external_id,
        "segments": [texts[(document.external_id, i)] for i in range(len(texts))],
        "workers": workers,
        "marks": [mark.json() for mark in marks],
        "candidates": [
            {
                "key": c.key,
                "segment": c.segment,
                "category": c.category,
                "votes": c.votes,
                "workers": c.workers,
                "unanimous": c.unanimous,
                "proposal": {**c.proposal.json(), "comment": c.comment},
                "marks": [m.id for m in c.marks],
                "decision": row_json(by_candidate[c.key]) if c.key in by_candidate else None,
            }
            for c in candidates
        ],
        # errors researchers added, and decisions on candidates that workers' later marks
        # regrouped (``stale``): still in the layer when accepted, shown apart
        "added": [
            {**row_json(row), "stale": row.candidate is not None}
            for row in rows
            if row.candidate is None or row.candidate not in current
        ],
        "status": status_json(session.get(DocumentReview, document.id)),
        "suggestions": [
            {
                "id": s.id,
                "segment": s.segment,
                "start": s.start,
                "end": s.end,
                "text": s.text,
                "category": s.category,
                "score": s.score,
            }
            for s in suggestions
        ],
    }


def review_progress(session: Session, study: Study) -> list[dict[str, Any]]:
    """Per document in order: submitted workers, review status, accepted / rejected rows."""
    documents = session.execute(
        select(Document.id, Document.external_id)
        .where(Document.study_id == study.id)
        .order_by(Document.position, Document.id)
    ).all()
    statuses = dict(
        session.execute(
            select(DocumentReview.document_id, DocumentReview.status)
            .join(Document, Document.id == DocumentReview.document_id)
            .where(Document.study_id == study.id)
        ).all()
    )
    decided: dict[int, Counter[str]] = defaultdict(Counter)
    for document_id, decision in session.execute(
        select(AdjudicatedError.document_id, AdjudicatedError.decision)
        .join(Document, Document.id == AdjudicatedError.document_id)
        .where(Document.study_id == study.id)
    ):
        decided[document_id][decision] += 1
    workers: Counter[int] = Counter(
        session.scalars(
            select(Assignment.document_id).where(
                Assignment.study_id == study.id, Assignment.status == "submitted"
            )
        )
    )
    return [
        {
            "document": external_id,
            "workers": workers[document_id],
            "status": statuses.get(document_id, "unreviewed"),
            "accepted": decided[document_id]["accepted"],
            "rejected": decided[document_id]["rejected"],
        }
        for document_id, external_id in documents
    ]


def layer_spans(session: Session, study: Study, *, done_only: bool) -> dict[str, list[Span]]:
    """The accepted rows of the study's documents (reviewed ones only with ``done_only``)."""
    query = (
        select(AdjudicatedError, Document.external_id)
        .join(Document, Document.id == AdjudicatedError.document_id)
        .where(Document.study_id == study.id, AdjudicatedError.decision == "accepted")
        .order_by(AdjudicatedError.segment, AdjudicatedError.start, AdjudicatedError.id)
    )
    if done_only:
        query = query.join(DocumentReview, DocumentReview.document_id == Document.id).where(
            DocumentReview.status == "done"
        )
    out: dict[str, list[Span]] = defaultdict(list)
    for row, doc in session.execute(query):
        out[doc].append(
            Span(
                doc, row.segment, row.start, row.end, row.category, "adjudicated", row.text, row.id
            )
        )
    return out


def adjudicated_scores(session: Session, study: Study) -> list[dict[str, Any]]:
    """Each worker's P/R/F1 against the adjudicated layer of the documents marked done
    that they submitted (the shape of the report's ``gold``: strict, lenient, sentence)."""
    done = set(
        session.scalars(
            select(Document.external_id)
            .join(DocumentReview, DocumentReview.document_id == Document.id)
            .where(Document.study_id == study.id, DocumentReview.status == "done")
        )
    )
    layer = layer_spans(session, study, done_only=True)
    texts = {
        (doc, index): text
        for doc, index, text in session.execute(
            select(Document.external_id, Segment.index, Segment.text)
            .join(Document, Document.id == Segment.document_id)
            .where(Document.study_id == study.id, Document.external_id.in_(done))
        )
    }
    spans: dict[str, list[Span]] = defaultdict(list)
    docs: dict[str, set[str]] = defaultdict(set)
    for worker, doc in session.execute(
        select(Assignment.worker_id, Document.external_id)
        .join(Document, Document.id == Assignment.document_id)
        .where(Assignment.study_id == study.id, Assignment.status == "submitted")
    ):
        if doc in done:
            docs[worker].add(doc)
    for worker, doc, a in session.execute(
        select(Assignment.worker_id, Document.external_id, Annotation)
        .join(Assignment, Assignment.id == Annotation.assignment_id)
        .join(Document, Document.id == Assignment.document_id)
        .where(
            Assignment.study_id == study.id,
            Assignment.status == "submitted",
            Annotation.removed_at.is_(None),
        )
        .order_by(Annotation.id)
    ):
        if doc in done:
            spans[worker].append(
                Span(doc, a.segment, a.start, a.end, a.category, worker, a.text, a.id)
            )
    taxonomy = study.taxonomy or {}
    categories = [cat["id"] for cat in taxonomy.get("categories", [])]
    return [
        {
            "worker_id": worker,
            "documents": len(docs[worker]),
            **precision_recall_f1(
                spans[worker],
                [g for doc in sorted(docs[worker]) for g in layer.get(doc, [])],
                texts=texts,
                scopes=scopes_from_taxonomy(taxonomy),
                categories=categories,
            ),
        }
        for worker in sorted(docs)
    ]
