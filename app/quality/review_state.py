"""Reading the review of a document: its candidates with their decisions, the errors added,
the review status, the detector's suggestions (one more lane), per-document progress, and
every worker scored against the adjudicated layer (the gold report's figures)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from sqlalchemy import distinct, func, select
from sqlalchemy.orm import Session

from app.models import (
    AdjudicatedError,
    ConsensusUnit,
    Document,
    DocumentReview,
    Segment,
    Study,
    Suggestion,
    isoformat,
    span_place,
)
from app.quality.candidates import (
    PAIRED_FIELDS,
    Candidate,
    document_marks,
    group_candidates,
    paired_json,
)
from app.rules.scoring import Span, TextKey, precision_recall_f1, scopes_from_taxonomy
from app.rules.work import (
    ADJUDICATED,
    Work,
    columns,
    review_status,
    select_documents,
    select_work,
)


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
        "attributes": row.attributes or {},
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


def consensus_posteriors(
    session: Session, document: Document, candidates: list[Candidate]
) -> dict[str, float | None]:
    """Each candidate's consensus posterior: the highest stored MACE posterior of a consensus
    unit of its category (a sentence some worker marked, app/quality/figures.py) that its
    proposal overlaps; None where no unit does. A candidate is in the consensus at P when
    this is at least P (auto-accept by posterior, one rule for the page's count and the
    write)."""
    units = session.execute(
        select(
            ConsensusUnit.segment,
            ConsensusUnit.start,
            ConsensusUnit.end,
            ConsensusUnit.category,
            ConsensusUnit.posterior,
        ).where(ConsensusUnit.document_id == document.id)
    ).all()
    return {
        c.key: max(
            (
                p
                for seg, start, end, cat, p in units
                if (seg, cat) == (c.segment, c.category)
                and start < c.proposal.end
                and c.proposal.start < end
            ),
            default=None,
        )
        for c in candidates
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
    posteriors = consensus_posteriors(session, document, candidates)
    suggestions = session.scalars(
        select(Suggestion)
        .where(Suggestion.document_id == document.id)
        .order_by(Suggestion.segment, Suggestion.start)
    ).all()
    return {
        "document": document.external_id,
        "segments": [texts[(document.external_id, i)] for i in range(len(texts))],
        "workers": workers,
        # each category's declared attributes (the edit form offers them)
        "attributes": {
            c["id"]: c["attributes"]
            for c in (document.study.taxonomy or {}).get("categories", [])
            if c.get("attributes")
        },
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
                "posterior": posteriors[c.key],
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
                **span_place(s),
                "score": s.score,
            }
            for s in suggestions
        ],
    }


def review_progress(session: Session, study: Study) -> list[dict[str, Any]]:
    """Per document that counts (:mod:`app.rules.work`), in order: submitted workers,
    review status, accepted / rejected rows."""
    work = Work()
    documents = session.execute(
        select_documents(study, work, Document.id, Document.external_id, review_status())
    ).all()
    decided: dict[int, Counter[str]] = defaultdict(Counter)
    for document_id, decision in session.execute(
        select(AdjudicatedError.document_id, AdjudicatedError.decision)
        .join(Document, Document.id == AdjudicatedError.document_id)
        .where(Document.study_id == study.id)
    ):
        decided[document_id][decision] += 1
    sql = columns(study, work)
    workers = dict(
        session.execute(
            select_work(study, work, sql["document_id"], func.count(distinct(sql["assignment_id"])))
            .order_by(None)
            .group_by(sql["document_id"])
        ).all()
    )
    return [
        {
            "document": external_id,
            "workers": workers.get(document_id, 0),
            "status": status,
            "accepted": decided[document_id]["accepted"],
            "rejected": decided[document_id]["rejected"],
        }
        for document_id, external_id, status in documents
    ]


def adjudicated_scores(session: Session, study: Study) -> list[dict[str, Any]]:
    """Each worker's P/R/F1 against the adjudicated layer of the documents marked done
    that they submitted (the shape of the report's ``gold``: strict, lenient, sentence)."""
    names = ("document", "worker_id", "id", "segment", "start", "end", "category", "text")

    def rows(work: Work) -> list[Any]:
        sql = columns(study, work)
        return session.execute(select_work(study, work, *(sql[n] for n in names))).all()

    layer: dict[str, list[Span]] = defaultdict(list)
    for doc, worker, ref, segment, start, end, category, text in rows(Work(layer=ADJUDICATED)):
        found = layer[doc]  # a document marked done without an error still counts
        if ref is not None:
            found.append(Span(doc, segment, start, end, category, worker, text, ref))
    docs: dict[str, set[str]] = defaultdict(set)
    spans: dict[str, list[Span]] = defaultdict(list)
    for doc, worker, ref, segment, start, end, category, text in sorted(
        rows(Work()), key=lambda row: row[2] or 0
    ):
        if doc in layer:
            docs[worker].add(doc)
            if ref is not None:
                spans[worker].append(Span(doc, segment, start, end, category, worker, text, ref))
    done = set(layer)
    texts = {
        (doc, index): text
        for doc, index, text in session.execute(
            select(Document.external_id, Segment.index, Segment.text)
            .join(Document, Document.id == Segment.document_id)
            .where(Document.study_id == study.id, Document.external_id.in_(done))
        )
    }
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
