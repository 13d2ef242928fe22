"""The study report behind ``marginalia report SLUG [--json]``: built from the database.

The work counts as :mod:`app.rules.work` reads it (live annotations of *submitted*
assignments, practice documents left out unless ``include_practice``) everywhere in the
report; active assignments appear only in the progress counts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.annotation.reviews import worker_states
from app.documents.studies import segments_per_document
from app.models import (
    Assignment,
    DetectorVersion,
    Document,
    Segment,
    Study,
    Suggestion,
)
from app.quality import figures
from app.quality.agreement import Agreement, WorkBatch, groups_from_taxonomy
from app.quality.attention import attention_report, study_gold
from app.quality.booookscore import attribute_counts, booookscore
from app.quality.confident import confident_thresholds, gold_precision
from app.quality.ranking import rank_rows
from app.quality.report_stream import counted_batches
from app.quality.report_text import format_report
from app.quality.report_workers import WorkerTally
from app.quality.time_on_task import add_to_report
from app.quality.vote_ranks import agreement_note
from app.rules.scoring import Span, TextKey, scopes_from_taxonomy
from app.rules.work import (
    TRAINING_ROLES,
    Work,
    document_filter,
    human_worker,
    is_counted,
    role,
    select_documents,
)

__all__ = ["format_report", "study_report"]


def study_report(
    session: Session, study: Study, *, include_practice: bool = False, compute_figures=False
) -> dict[str, Any]:
    """Progress, per-worker scores, agreement and category distribution of one study.

    A JSON-serialisable dict with these keys, always present, in this order:

    * ``study``: ``slug``, ``title``, ``taxonomy`` (name), ``taxonomy_version``,
      ``annotators_per_doc``, ``suggestions`` (off/shown/hidden).
    Every section but ``detector`` and ``attention`` covers the documents that count
    (:func:`app.rules.work.document_filter`: not the practice documents of a training
    phase unless ``include_practice``).

    * ``progress``: ``documents`` (count), ``practice_documents`` (in the study, counted or
      not), ``gold_documents``, ``complete_documents`` (submitted assignments >=
      annotators_per_doc), ``assignments`` (``total``, ``active``, ``submitted``, plus a
      count for any other status met), ``per_document``: a list in document order of
      ``document`` (external id), ``source``, ``role``, ``gold``, ``segments``, ``active``,
      ``submitted``, ``needed``, ``complete``.
    * ``workers``: a list in rank order (:func:`app.quality.ranking.rank_rows`: ``rank`` 1
      the highest expected F1; workers without one after, by worker id) of ``worker_id``,
      ``rank``, ``documents_done``
      (submitted assignments), ``documents_active``, ``annotations`` (live, submitted),
      ``segments`` (segments of the documents done), ``seconds_per_segment`` (median over
      the worker's submitted assignments of (submitted_at - created_at) / segments; None
      without any), ``conditions`` (sorted, e.g. assisted/unassisted), ``suggestion_recall``
      (the share of *all* suggestions marked, capped by the detector's precision:
      :func:`app.rules.scoring.suggestion_recall` over the suggestions of the documents done,
      identical suggestions from repeated detector runs counted once),
      ``confident_recall`` (recall on the confident suggestions,
      :func:`app.quality.confident.confident_recall`) and ``gold`` (None unless the worker
      did gold documents, else ``documents`` plus
      :func:`app.rules.scoring.precision_recall_f1`'s strict ``per_category`` and
      ``overall``, ``lenient`` and ``sentence``) and ``state``
      (:func:`app.annotation.reviews.worker_state`: rejected, screened_out, active,
      submitted or abandoned).
    * ``detector``: ``version`` (the detector version most suggestions came from, None
      without suggestions) and ``confident``: per category the ``threshold`` and the
      detector's dev ``detector_precision`` there, or ``threshold: None`` and a ``reason``.
    * each worker row also has ``active_seconds_per_segment`` and ``speeder``
      (:func:`app.quality.time_on_task.add_to_report`) and ``quality``: estimated precision,
      recall and F1 with their bases, marks per 100 words and ``over_marking``
      (:func:`app.quality.worker_quality.set_quality`); not a ranking.
    * ``agreement``: :func:`app.quality.agreement.agreement_report` over the submitted
      assignments, per taxonomy category and group, with ``per_document`` and ``per_pair``
      (:func:`app.quality.agreement.agreement_breakdown`), and ``vote_ranks``: None, or the
      imported vote ranks among the workers, whose agreement is not inter-annotator
      agreement (:func:`app.quality.vote_ranks.agreement_note`).
    * ``attention``: :func:`app.quality.attention.attention_report`: ``checks`` planted,
      ``documents`` carrying them, ``min_catch_rate`` (the flagging threshold or None) and
      ``workers``: {worker id: ``checks``, ``caught``, ``catch_rate``, ``flagged``} for each
      worker who met a check in a submitted assignment.
    * ``categories``: ``total`` (annotations), ``overall`` ({category: count}, taxonomy
      order, then any unknown category), ``per_source`` ({source: {category: count}},
      sources sorted; documents without a source under ``""``); a multi-label mark counts
      once per category.
    * ``attributes``: {attribute id: {value: marks}}
      (:func:`app.quality.booookscore.attribute_counts`).
    * ``booookscore``: ``workers`` and ``adjudicated`` (the layer of documents whose review
      is done), each :func:`app.quality.booookscore.booookscore`.
    * the worker's figures (:func:`app.quality.figures.add_to_report`): γ, unitizing α,
      the worker models, as last computed (``compute_figures``: brought current first, the
      figure job's part).
    """
    taxonomy = study.taxonomy or {}
    category_ids = [cat["id"] for cat in taxonomy.get("categories", [])]
    scopes = scopes_from_taxonomy(taxonomy)
    work = Work(include_practice=include_practice)

    documents = session.execute(
        select(Document.id, Document.external_id, Document.source, Document.is_gold)
        .where(Document.study_id == study.id)
        .order_by(Document.position, Document.id)
    ).all()
    every = select_documents(study, Work(include_practice=True), Document.id, role(study))
    roles: dict[int, str] = dict(session.execute(every).all())
    counting = set(session.scalars(select_documents(study, work, Document.id)))
    counted = [doc for doc in documents if doc.id in counting]
    external = {doc.id: doc.external_id for doc in documents}
    segment_counts = segments_per_document(session, study)

    # assignments of the documents that count (every status: progress), as plain rows
    assignments = session.execute(
        select(*ASSIGNMENT_COLUMNS)
        .join(Document, Document.id == Assignment.document_id)
        .where(Assignment.study_id == study.id, human_worker(), *document_filter(study, work))
        .order_by(Assignment.id)
    ).all()
    submitted = [a for a in assignments if is_counted(a.status, work)]
    # every worker's state from all their assignments; a worker the counted work leaves out
    # (screened out on practice, or rejected) still gets a row, counting nothing, tagged
    states = worker_states(session, study)
    seen = {a.worker_id for a in assignments}
    shown = [w for w, s in states.items() if w not in seen and s in ("screened_out", "rejected")]
    fates = session.execute(
        select(*ASSIGNMENT_COLUMNS)
        .where(Assignment.study_id == study.id, Assignment.worker_id.in_(shown))
        .order_by(Assignment.id)
    ).all()
    gold_docs, gold, gold_texts = gold_documents(session, study, documents)
    version, thresholds = detector_thresholds(session, study, gold_docs, gold, gold_texts)

    # the counted work a batch of documents at a time: memory holds a batch, not the study
    by_document: dict[int, list[Any]] = defaultdict(list)
    for a in submitted:
        by_document[a.document_id].append(a)
    tally = WorkerTally(
        categories=category_ids,
        scopes=scopes,
        thresholds=thresholds,
        version=version,
        gold_docs=gold_docs,
    )
    groups = groups_from_taxonomy(taxonomy)
    agreement = Agreement(category_ids, groups=groups, scopes=scopes)
    categories: dict[str, Counter[str]] = defaultdict(Counter)
    # the slow figures' state key is summed a batch at a time; the figure job
    # (compute_figures) brings each document's part current as the walk passes it
    key = figures.WorkKey(categories=category_ids, groups=groups, scopes=scopes)
    fresh = (
        figures.fresh(session, study, key, category_ids, groups, scopes, by_document)
        if compute_figures
        else None
    )
    for batch in counted_batches(session, study, work):
        spans, done, texts = tally.add(batch, by_document)
        batch_work = WorkBatch([s for found in spans.values() for s in found], texts, done)
        agreement.add(batch_work)
        digests = key.add(batch_work)
        if fresh is not None:
            fresh.add(batch, batch_work, digests)
        for doc in batch:
            categories[doc.source].update(row.category for row in doc.marks)

    report = {
        "study": {
            "slug": study.slug,
            "title": study.title,
            "taxonomy": study.taxonomy_name,
            "taxonomy_version": taxonomy.get("version", ""),
            "annotators_per_doc": study.annotators_per_doc,
            "suggestions": study.suggestions,
        },
        "progress": _progress(study, counted, assignments, segment_counts, gold_docs, roles),
        "workers": tally.rows(
            [*assignments, *fates], segment_counts, external, states, gold, gold_texts
        ),
        "agreement": {
            **agreement.report(),
            **agreement.breakdown(),
            "vote_ranks": agreement_note(session, study, work),  # not annotators: not IAA
        },
        "categories": _distribution(counted, categories, category_ids),
        "detector": {"version": version, "confident": thresholds},
        "attention": attention_report(session, study),
        "attributes": attribute_counts(session, study, work),
        "booookscore": {
            "workers": booookscore(session, study, work),
            "adjudicated": booookscore(session, study, Work("adjudicated", include_practice)),
        },
    }
    add_to_report(session, study, report["workers"], include_practice=include_practice)
    figures.add_to_report(
        session, study, report, include_practice=include_practice, key=key.hexdigest(),
        fresh=fresh,
    )  # fmt: skip
    rank_rows(report["workers"], lambda row: row.get("reliability"))  # the one ranking
    return report


ASSIGNMENT_COLUMNS = (
    Assignment.id,
    Assignment.document_id,
    Assignment.worker_id,
    Assignment.status,
    Assignment.condition,
    Assignment.created_at,
    Assignment.submitted_at,
)


def gold_documents(
    session: Session, study: Study, documents: Sequence[Any]
) -> tuple[set[str], dict[str, list[Span]], dict[TextKey, str]]:
    """The study's gold documents (flagged gold, or carrying gold errors that are not
    attention checks), their gold spans and their texts: a few documents, kept whole."""
    external = {doc.id: doc.external_id for doc in documents}
    gold: dict[str, list[Span]] = defaultdict(list)
    for err in study_gold(session, study, checks=False):
        doc = external[err.document_id]
        gold[doc].append(
            Span(doc, err.segment, err.start, err.end, err.category, "gold", err.text, err.id)
        )
    gold_docs = {doc.external_id for doc in documents if doc.is_gold} | set(gold)
    ids = [doc.id for doc in documents if doc.external_id in gold_docs]
    texts: dict[TextKey, str] = {}
    for start in range(0, len(ids), 500):
        for doc_id, index, text in session.execute(
            select(Segment.document_id, Segment.index, Segment.text).where(
                Segment.document_id.in_(ids[start : start + 500])
            )
        ):
            texts[(external[doc_id], index)] = text
    return gold_docs, gold, texts


def detector_thresholds(
    session: Session,
    study: Study,
    gold_docs: set[str],
    gold: Mapping[str, list[Span]],
    texts: Mapping[TextKey, str],
) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """The detector version most of the study's suggestions come from (ties: the one met
    first) and the confident thresholds of its categories
    (:func:`app.quality.confident.confident_thresholds`, measured on the gold documents)."""
    in_study = (Document.id == Suggestion.document_id) & (Document.study_id == study.id)
    counts = session.execute(
        select(Suggestion.detector_version, func.count(), func.min(Suggestion.id))
        .join(Document, in_study)
        .group_by(Suggestion.detector_version)
    ).all()
    found = max(
        (row for row in counts if row[0] is not None),
        key=lambda row: (row[1], -row[2]),
        default=None,
    )
    version = found[0] if found is not None else None
    calibrations = {
        row.version: row.calibration or {}
        for row in session.scalars(
            select(DetectorVersion).where(DetectorVersion.version == version)
        )
    }
    # thresholds belong to one detector version: only its suggestions can be confident
    on_gold_suggestions = [
        Span(ext, *row)
        for ext, *row in session.execute(
            select(
                Document.external_id,
                Suggestion.segment,
                Suggestion.start,
                Suggestion.end,
                Suggestion.category,
                Suggestion.detector,
                Suggestion.text,
                Suggestion.id,
                Suggestion.score,
            )
            .join(Document, in_study)
            .where(Suggestion.detector_version == version, Document.external_id.in_(gold_docs))
            .order_by(Suggestion.id)
        )
    ]
    on_gold = gold_precision(
        sorted(on_gold_suggestions, key=lambda s: s.document),
        [g for doc in sorted(gold_docs) for g in gold.get(doc, [])],
        texts=texts,
        scopes=scopes_from_taxonomy(study.taxonomy or {}),
    )
    suggested = set(
        session.scalars(
            select(Suggestion.category)
            .join(Document, in_study)
            .where(Suggestion.detector_version == version)
            .distinct()
        )
    )
    thresholds = confident_thresholds(
        study.taxonomy or {}, version, calibrations, on_gold, suggested
    )
    return version, thresholds


def _progress(
    study: Study,
    documents: list[Document],
    assignments: list[Assignment],
    segment_counts: Mapping[int, int],
    gold_docs: set[str],
    roles: Mapping[int, str],
) -> dict[str, Any]:
    status_counts: Counter[str] = Counter(a.status for a in assignments)
    per_doc: dict[int, Counter[str]] = defaultdict(Counter)
    for a in assignments:
        per_doc[a.document_id][a.status] += 1
    needed = study.annotators_per_doc
    rows = [
        {
            "document": doc.external_id,
            "source": doc.source or "",
            "role": roles[doc.id],
            "gold": doc.external_id in gold_docs,
            "segments": segment_counts.get(doc.id, 0),
            "active": per_doc[doc.id]["active"],
            "submitted": per_doc[doc.id]["submitted"],
            "needed": needed,
            "complete": per_doc[doc.id]["submitted"] >= needed,
        }
        for doc in documents
    ]
    counts = {
        "total": len(assignments),
        "active": status_counts.pop("active", 0),
        "submitted": status_counts.pop("submitted", 0),
    }
    counts.update(sorted(status_counts.items()))
    return {
        "documents": len(documents),
        "practice_documents": sum(1 for r in roles.values() if r in TRAINING_ROLES),
        "gold_documents": sum(1 for row in rows if row["gold"]),
        "complete_documents": sum(1 for row in rows if row["complete"]),
        "assignments": counts,
        "per_document": rows,
    }


def _distribution(
    documents: Sequence[Any],
    per_source: Mapping[str, Counter[str]],
    category_ids: list[str],
) -> dict[str, Any]:
    overall: Counter[str] = Counter()
    for counts in per_source.values():
        overall.update(counts)
    order = category_ids + sorted(set(overall) - set(category_ids))
    return {
        "total": sum(overall.values()),
        "overall": {cat: overall[cat] for cat in order},
        "per_source": {
            src: {cat: per_source.get(src, Counter())[cat] for cat in order}
            for src in sorted({doc.source or "" for doc in documents})
        },
    }
