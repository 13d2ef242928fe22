"""The study report behind ``marginalia report SLUG [--json]``: built from the database.

The work counts as :mod:`app.quality.work` reads it (live annotations of *submitted*
assignments, practice documents left out unless ``include_practice``) everywhere in the
report; active assignments appear only in the progress counts.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation.reviews import worker_states
from app.models import (
    Assignment,
    DetectorVersion,
    Document,
    GoldError,
    Segment,
    Study,
    Suggestion,
)
from app.quality import figures
from app.quality.agreement import agreement_sections, groups_from_taxonomy
from app.quality.attention import attention_report
from app.quality.booookscore import attribute_counts, booookscore
from app.quality.confident import (
    confident_recall,
    confident_thresholds,
    gold_precision,
    main_version,
)
from app.quality.report_text import format_report
from app.quality.time_on_task import add_to_report
from app.quality.work import (
    TRAINING_ROLES,
    Work,
    columns,
    document_filter,
    role,
    select_documents,
    select_work,
)
from app.quality.worker_quality import add_quality

__all__ = ["format_report", "study_report"]
from app.quality.scoring import (
    Span,
    TextKey,
    precision_recall_f1,
    scopes_from_taxonomy,
    suggestion_recall,
)


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    if (start.tzinfo is None) != (end.tzinfo is None):  # SQLite drops the zone
        start, end = start.replace(tzinfo=None), end.replace(tzinfo=None)
    return (end - start).total_seconds()


def study_report(
    session: Session, study: Study, *, include_practice: bool = False, compute_figures=False
) -> dict[str, Any]:
    """Progress, per-worker scores, agreement and category distribution of one study.

    A JSON-serialisable dict with these keys, always present, in this order:

    * ``study``: ``slug``, ``title``, ``taxonomy`` (name), ``taxonomy_version``,
      ``annotators_per_doc``, ``suggestions`` (off/shown/hidden).
    Every section but ``detector`` and ``attention`` covers the documents that count
    (:func:`app.quality.work.document_filter`: not the practice documents of a training
    phase unless ``include_practice``).

    * ``progress``: ``documents`` (count), ``practice_documents`` (in the study, counted or
      not), ``gold_documents``, ``complete_documents`` (submitted assignments >=
      annotators_per_doc), ``assignments`` (``total``, ``active``, ``submitted``, plus a
      count for any other status met), ``per_document``: a list in document order of
      ``document`` (external id), ``source``, ``role``, ``gold``, ``segments``, ``active``,
      ``submitted``, ``needed``, ``complete``.
    * ``workers``: a list sorted by worker id of ``worker_id``, ``documents_done``
      (submitted assignments), ``documents_active``, ``annotations`` (live, submitted),
      ``segments`` (segments of the documents done), ``seconds_per_segment`` (median over
      the worker's submitted assignments of (submitted_at - created_at) / segments; None
      without any), ``conditions`` (sorted, e.g. assisted/unassisted), ``suggestion_recall``
      (the share of *all* suggestions marked, capped by the detector's precision:
      :func:`app.quality.scoring.suggestion_recall` over the suggestions of the documents done,
      identical suggestions from repeated detector runs counted once),
      ``confident_recall`` (recall on the confident suggestions,
      :func:`app.quality.confident.confident_recall`) and ``gold`` (None unless the worker
      did gold documents, else ``documents`` plus
      :func:`app.quality.scoring.precision_recall_f1`'s strict ``per_category`` and
      ``overall``, ``lenient`` and ``sentence``) and ``state``
      (:func:`app.annotation.reviews.worker_state`: rejected, screened_out, active,
      submitted or abandoned).
    * ``detector``: ``version`` (the detector version most suggestions came from, None
      without suggestions) and ``confident``: per category the ``threshold`` and the
      detector's dev ``detector_precision`` there, or ``threshold: None`` and a ``reason``.
    * each worker row also has ``active_seconds_per_segment`` and ``speeder``
      (:func:`app.quality.time_on_task.add_to_report`) and ``quality``: estimated precision,
      recall and F1 with their bases, the rank by F1, marks per 100 words and
      ``over_marking`` (:func:`app.quality.worker_quality.add_quality`).
    * ``agreement``: :func:`app.quality.agreement.agreement_report` over the submitted
      assignments, per taxonomy category and group, with ``per_document`` and ``per_pair``
      (:func:`app.quality.agreement.agreement_breakdown`).
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
    """
    taxonomy = study.taxonomy or {}
    category_ids = [cat["id"] for cat in taxonomy.get("categories", [])]
    scopes = scopes_from_taxonomy(taxonomy)
    groups = groups_from_taxonomy(taxonomy)
    work = Work(include_practice=include_practice)

    documents = session.scalars(
        select(Document)
        .where(Document.study_id == study.id)
        .order_by(Document.position, Document.id)
    ).all()
    every = select_documents(study, Work(include_practice=True), Document.id, role(study))
    roles: dict[int, str] = dict(session.execute(every).all())
    counting = set(session.scalars(select_documents(study, work, Document.id)))
    counted = [doc for doc in documents if doc.id in counting]
    external = {doc.id: doc.external_id for doc in documents}
    texts: dict[TextKey, str] = {}
    segment_counts: Counter[int] = Counter()
    for doc_id, index, text in session.execute(
        select(Segment.document_id, Segment.index, Segment.text)
        .join(Document, Segment.document_id == Document.id)
        .where(Document.study_id == study.id)
    ):
        texts[(external[doc_id], index)] = text
        segment_counts[doc_id] += 1

    # assignments of the documents that count (every status: progress), and their work
    assignments = session.scalars(
        select(Assignment)
        .join(Document, Document.id == Assignment.document_id)
        .where(Assignment.study_id == study.id, *document_filter(study, work))
        .order_by(Assignment.id)
    ).all()
    submitted = [a for a in assignments if a.status == "submitted"]
    # every worker's state from all their assignments; a worker the counted work leaves out
    # (screened out on practice, or rejected) still gets a row, counting nothing, tagged
    states = worker_states(session, study)
    seen = {a.worker_id for a in assignments}
    shown = [w for w, s in states.items() if w not in seen and s in ("screened_out", "rejected")]
    fates = session.scalars(
        select(Assignment).where(Assignment.study_id == study.id, Assignment.worker_id.in_(shown))
    ).all()
    sql = columns(study, work)
    names = ("assignment_id", "id", "segment", "start", "end", "category", "text")
    annotations = sorted(
        session.execute(
            select_work(study, work, *(sql[n].label(n) for n in names), marks_only=True)
        ).all(),
        key=lambda row: row.id,
    )
    by_assignment: dict[int, list[Any]] = defaultdict(list)  # rows: id, segment, ...
    for ann in annotations:
        by_assignment[ann.assignment_id].append(ann)

    worker_spans: dict[str, list[Span]] = defaultdict(list)
    annotated: dict[str, set[str]] = defaultdict(set)
    for assignment in submitted:
        doc = external[assignment.document_id]
        annotated[assignment.worker_id].add(doc)
        for ann in by_assignment[assignment.id]:
            worker_spans[assignment.worker_id].append(
                Span(
                    doc,
                    ann.segment,
                    ann.start,
                    ann.end,
                    ann.category,
                    assignment.worker_id,
                    ann.text,
                    ann.id,
                )
            )

    suggestions: dict[str, list[Span]] = defaultdict(list)
    versions: dict[int, str] = {}
    for sug in session.scalars(
        select(Suggestion)
        .join(Document, Suggestion.document_id == Document.id)
        .where(Document.study_id == study.id)
        .order_by(Suggestion.id)
    ):
        doc = external[sug.document_id]
        suggestions[doc].append(
            Span(
                doc,
                sug.segment,
                sug.start,
                sug.end,
                sug.category,
                sug.detector,
                sug.text,
                sug.id,
                sug.score,
            )
        )
        versions[sug.id] = sug.detector_version
    version = main_version((s for spans in suggestions.values() for s in spans), versions)
    calibrations = {
        row.version: row.calibration or {}
        for row in session.scalars(
            select(DetectorVersion).where(DetectorVersion.version == version)
        )
    }
    # thresholds belong to one detector version: only its suggestions can be confident
    calibrated = {
        doc: [s for s in spans if versions.get(s.ref or -1) == version]
        for doc, spans in suggestions.items()
    }
    gold: dict[str, list[Span]] = defaultdict(list)
    for err in session.scalars(
        select(GoldError)
        .join(Document, GoldError.document_id == Document.id)
        .where(Document.study_id == study.id, GoldError.is_check.is_(False))
        .order_by(GoldError.id)
    ):
        doc = external[err.document_id]
        gold[doc].append(
            Span(doc, err.segment, err.start, err.end, err.category, "gold", err.text, err.id)
        )
    gold_docs = {doc.external_id for doc in documents if doc.is_gold} | set(gold)
    on_gold = gold_precision(
        [s for doc in sorted(gold_docs) for s in calibrated.get(doc, [])],
        [g for doc in sorted(gold_docs) for g in gold.get(doc, [])],
        texts=texts,
        scopes=scopes,
    )
    suggested = {s.category for spans in calibrated.values() for s in spans}
    thresholds = confident_thresholds(taxonomy, version, calibrations, on_gold, suggested)
    attention = attention_report(session, study)
    every = [span for spans in worker_spans.values() for span in spans]
    options: dict[str, Any] = {"categories": category_ids, "scopes": scopes}

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
        "workers": _workers(
            [*assignments, *fates],
            by_assignment,
            segment_counts,
            external,
            worker_spans,
            suggestions,
            gold,
            gold_docs,
            texts,
            scopes,
            category_ids,
            (thresholds, calibrated),
            states,
        ),
        "agreement": agreement_sections(
            every,
            texts,
            annotated,
            category_ids,
            groups,
            scopes,
        ),
        "categories": _distribution(counted, submitted, by_assignment, category_ids),
        "detector": {"version": version, "confident": thresholds},
        "attention": attention,
        "attributes": attribute_counts(session, study, work),
        "booookscore": {
            "workers": booookscore(session, study, work),
            "adjudicated": booookscore(session, study, Work("adjudicated", include_practice)),
        },
    }
    order: dict[str, list[str]] = defaultdict(list)
    for assignment in submitted:
        names = order[external[assignment.document_id]]
        if assignment.worker_id not in names:
            names.append(assignment.worker_id)
    add_quality(report["workers"], worker_spans, order, texts, scopes)
    add_to_report(session, study, report["workers"], include_practice=include_practice)
    figures.add_to_report(
        session, study, report, every, texts, annotated, **options, groups=groups,
        include_practice=include_practice, compute_figures=compute_figures,
    )  # fmt: skip
    return report


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


def _workers(
    assignments: list[Assignment],
    by_assignment: Mapping[int, list[Any]],
    segment_counts: Mapping[int, int],
    external: Mapping[int, str],
    worker_spans: Mapping[str, list[Span]],
    suggestions: Mapping[str, list[Span]],
    gold: Mapping[str, list[Span]],
    gold_docs: set[str],
    texts: Mapping[TextKey, str],
    scopes: Mapping[str, str],
    category_ids: list[str],
    confident: tuple[Mapping[str, Mapping[str, Any]], Mapping[str, list[Span]]],
    states: Mapping[str, str],
) -> list[dict[str, Any]]:
    thresholds, calibrated = confident
    by_worker: dict[str, list[Assignment]] = defaultdict(list)
    for a in assignments:
        by_worker[a.worker_id].append(a)
    rows = []
    for worker_id in sorted(by_worker):
        done = [a for a in by_worker[worker_id] if a.status == "submitted"]
        docs = [external[a.document_id] for a in done]
        rates = []
        for a in done:
            seconds = _seconds(a.created_at, a.submitted_at)
            if seconds is not None and segment_counts.get(a.document_id):
                rates.append(seconds / segment_counts[a.document_id])
        spans = worker_spans.get(worker_id, [])
        their_suggestions = [s for doc in docs for s in suggestions.get(doc, [])]
        gold_done = sorted({doc for doc in docs if doc in gold_docs})
        gold_score = None
        if gold_done:
            scored = precision_recall_f1(
                [s for s in spans if s.document in gold_done],
                [g for doc in gold_done for g in gold.get(doc, [])],
                texts=texts,
                scopes=scopes,
                categories=category_ids,
            )
            gold_score = {"documents": len(gold_done), **scored}
        rows.append(
            {
                "worker_id": worker_id,
                "documents_done": len(done),
                "documents_active": sum(1 for a in by_worker[worker_id] if a.status == "active"),
                "annotations": sum(len(by_assignment.get(a.id, [])) for a in done),
                "segments": sum(segment_counts.get(a.document_id, 0) for a in done),
                "seconds_per_segment": statistics.median(rates) if rates else None,
                "conditions": sorted({a.condition for a in by_worker[worker_id] if a.condition}),
                "suggestion_recall": suggestion_recall(
                    spans,
                    their_suggestions,
                    texts=texts,
                    scopes=scopes,
                    categories=category_ids,
                ),
                "confident_recall": confident_recall(
                    spans,
                    [s for doc in docs for s in calibrated.get(doc, [])],
                    thresholds,
                    texts=texts,
                    scopes=scopes,
                ),
                "gold": gold_score,
                "state": states[worker_id],
            }
        )
    return rows


def _distribution(
    documents: list[Document],
    submitted: list[Assignment],
    by_assignment: Mapping[int, list[Any]],
    category_ids: list[str],
) -> dict[str, Any]:
    source = {doc.id: doc.source or "" for doc in documents}
    overall: Counter[str] = Counter()
    per_source: dict[str, Counter[str]] = defaultdict(Counter)
    for a in submitted:
        for ann in by_assignment.get(a.id, []):
            overall[ann.category] += 1
            per_source[source[a.document_id]][ann.category] += 1
    order = category_ids + sorted(set(overall) - set(category_ids))
    return {
        "total": sum(overall.values()),
        "overall": {cat: overall[cat] for cat in order},
        "per_source": {
            src: {cat: per_source[src][cat] for cat in order}
            for src in sorted({source[doc.id] for doc in documents})
        },
    }
