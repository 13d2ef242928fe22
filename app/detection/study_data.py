"""A study's curated work as the learned detector's training data: the plain
values of :mod:`model_server.study_data`, read through the one reader of the work that
counts (:mod:`app.rules.work`) and the candidate rule of the review
(:mod:`app.quality.candidates`).

Layers (``marginalia detector train --study SLUG --layer ...``):

* ``adjudicated`` (default): the accepted rows of the documents whose review is done; a done
  document without an accepted row teaches "no error here".
* ``workers``: the candidate errors (the review's grouping of the submitted workers' marks)
  that at least ``min_workers`` workers marked, each at its proposal's offsets, on the
  documents at least ``min_workers`` workers submitted.
* ``gold``: the gold errors of the gold documents (attention checks left out).

The training phase (practice and qualification documents) stays out of the first two, as it
does from every figure; the gold layer is those documents' answer keys.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import distinct, func, select
from sqlalchemy.orm import Session

from app.documents.studies import MAX_ANNOTATORS
from app.errors import InvalidInput
from app.models import Document, GoldError, Segment, Study
from app.quality.review_state import candidates_of
from app.rules.work import ADJUDICATED, WORKERS, Work, columns, select_documents, select_work
from model_server.study_data import LabelledSpan, StudyData, StudyDocument, categories_of

LAYERS = (ADJUDICATED, WORKERS, "gold")
PAIRED = ("paired_segment", "paired_start", "paired_end", "paired_end_segment")


def check_layer(layer: str, min_workers: int) -> None:
    """Refuse an unknown layer, or a ``min_workers`` below 1 or above 1 outside the workers'
    layer (``detector train --study`` and ``study detector --retrain-every``)."""
    if layer not in LAYERS:
        raise InvalidInput(f"unknown layer {layer!r} (use {', '.join(LAYERS)})")
    if not 1 <= min_workers <= MAX_ANNOTATORS:  # a larger one overflows the SQL's integer
        raise InvalidInput(f"--min-workers must be from 1 to {MAX_ANNOTATORS}")
    if min_workers > 1 and layer != WORKERS:
        raise InvalidInput("--min-workers applies to the workers' layer only")


def curated_documents(session: Session, study: Study, layer: str, min_workers: int = 1) -> int:
    """How many documents :func:`read_study` would return for ``layer``, counted in SQL over
    the same readers (what :mod:`app.detection.retraining` compares with ``--retrain-every``)."""
    if layer == ADJUDICATED:
        work = Work(layer=ADJUDICATED)
        documents = select_work(study, work, columns(study, work)["document_id"]).subquery()
        return session.scalar(select(func.count(distinct(documents.c[0])))) or 0
    if layer == WORKERS:
        work = Work()
        sql = columns(study, work)
        pairs = select_work(study, work, sql["document_id"], sql["worker_id"]).subquery()
        per_document = (
            select(pairs.c[0])
            .group_by(pairs.c[0])
            .having(func.count(distinct(pairs.c[1])) >= min_workers)
            .subquery()
        )
        return session.scalar(select(func.count()).select_from(per_document)) or 0
    query = select(func.count()).where(Document.study_id == study.id, Document.is_gold.is_(True))
    return session.scalar(query) or 0


def _segments(session: Session, ids: list[int]) -> dict[int, tuple[str, ...]]:
    texts: dict[int, list[str]] = defaultdict(list)
    for chunk in range(0, len(ids), 500):
        rows = session.execute(
            select(Segment.document_id, Segment.text)
            .where(Segment.document_id.in_(ids[chunk : chunk + 500]))
            .order_by(Segment.document_id, Segment.index)
        )
        for doc_id, text in rows:
            texts[doc_id].append(text)
    return {doc_id: tuple(segments) for doc_id, segments in texts.items()}


def _adjudicated(session: Session, study: Study) -> dict[int, list[LabelledSpan]]:
    work = Work(layer=ADJUDICATED)
    sql = columns(study, work)
    names = ("document_id", "category", "segment", "start", "end", *PAIRED)
    spans: dict[int, list[LabelledSpan]] = {}
    for row in session.execute(select_work(study, work, *(sql[n] for n in names))):
        found = spans.setdefault(row[0], [])
        if row[1] is not None:  # a done document without an accepted row: no error
            found.append(LabelledSpan(*row[1:]))
    return spans


def _workers(session: Session, study: Study, min_workers: int) -> dict[int, list[LabelledSpan]]:
    spans: dict[int, list[LabelledSpan]] = {}
    for document in session.scalars(select_documents(study, Work(), Document)):
        candidates = candidates_of(session, document)
        workers = candidates[0].workers if candidates else _submitted(session, study, document)
        if workers < min_workers:
            continue
        spans[document.id] = [
            LabelledSpan(c.category, c.segment, c.proposal.start, c.proposal.end, *_pair(c))
            for c in candidates
            if c.votes >= min_workers
        ]
    return spans


def _submitted(session: Session, study: Study, document: Document) -> int:
    work = Work()
    query = select_work(study, work, columns(study, work)["worker_id"], document_id=document.id)
    return len(set(session.scalars(query)))


def _pair(candidate: Any) -> tuple[Any, ...]:
    paired = candidate.proposal.paired  # (segment, start, end, text, end_segment)
    return (paired[0], paired[1], paired[2], paired[4])


def _gold(session: Session, study: Study) -> tuple[dict[int, list[LabelledSpan]], int]:
    gold_docs = session.scalars(
        select(Document.id).where(Document.study_id == study.id, Document.is_gold.is_(True))
    ).all()
    spans: dict[int, list[LabelledSpan]] = {doc_id: [] for doc_id in gold_docs}
    unplaced = 0
    rows = session.scalars(
        select(GoldError)
        .where(GoldError.document_id.in_(gold_docs), GoldError.is_check.is_(False))
        .order_by(GoldError.document_id, GoldError.id)
    )
    for err in rows:
        if err.start is None or err.end is None:  # a gold span the import could not place
            unplaced += 1
            continue
        spans[err.document_id].append(LabelledSpan(err.category, err.segment, err.start, err.end))
    return spans, unplaced


def read_study(session: Session, study: Study, layer: str, min_workers: int = 1) -> StudyData:
    """The study's curated documents with their errors in ``layer`` (the module's rules);
    errors of categories the taxonomy no longer has are left out and counted."""
    check_layer(layer, min_workers)
    unplaced = 0
    if layer == ADJUDICATED:
        spans = _adjudicated(session, study)
    elif layer == WORKERS:
        spans = _workers(session, study, min_workers)
    else:
        spans, unplaced = _gold(session, study)
    categories = categories_of(study.taxonomy or {})
    known = {c.id for c in categories}
    texts = _segments(session, sorted(spans))
    external, positions = {}, {}
    ids = sorted(spans)
    for chunk in range(0, len(ids), 500):
        query = select(Document.id, Document.external_id, Document.position)
        for doc_id, name, position in session.execute(
            query.where(Document.id.in_(ids[chunk : chunk + 500]))
        ):
            external[doc_id], positions[doc_id] = name, position
    documents, other = [], 0
    for doc_id in sorted(spans, key=lambda d: (positions.get(d, 0), d)):
        kept = [s for s in spans[doc_id] if s.category in known]
        other += len(spans[doc_id]) - len(kept)
        documents.append(StudyDocument(external[doc_id], texts.get(doc_id, ()), tuple(kept)))
    source = {
        "study": study.slug,
        "taxonomy": study.taxonomy_name,
        "taxonomy_hash": study.taxonomy_hash,
        "layer": layer,
        "min_workers": min_workers,
        "documents": len(documents),
        "errors": sum(len(d.spans) for d in documents),
        "left_out": {"unplaced_gold": unplaced, "unknown_category": other},
    }
    return StudyData(study.slug, categories, tuple(documents), source)
