"""A study's slow figures: γ and unitizing α (:mod:`app.quality.unitizing`), MACE and
Dawid-Skene (:mod:`app.quality.reliability`), computed from the counted work by a queued job
and cached per counted-work state (docs/METRICS.md, "Unitized agreement", "Worker
reliability"; docs/PERFORMANCE.md).

* :func:`compute` is pure: the report's spans, texts and annotated documents in, the figures
  out. :func:`state_key` hashes the same inputs (and :data:`VERSION`): the figures are
  **current** while the key of the work now equals the key they were computed from.
* :func:`cached` is the one cache (a ``figure_jobs`` row per study and practice setting):
  it returns the stored figures and their state, and computes and stores them first when
  asked to (``marginalia report``, the worker's job). A web request never computes: it shows
  what is stored (current, or stale with the state saying so) and can queue a job
  (:func:`enqueue`), which the worker loop runs (:func:`app.quality.figure_jobs.run_next`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from flask import current_app, has_app_context
from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from app.db import begin_write
from app.models import ConsensusUnit, Document, FigureJob, Study, utcnow
from app.quality.reliability import worker_models
from app.quality.scoring import Span, TextKey
from app.quality.unitizing import unitized_report

log = logging.getLogger(__name__)
VERSION = "2"  # change when a figure's definition changes: every stored figure goes stale
BUDGET = 20 * 60.0  # seconds of γ per computation; the γ figures after it are left out


def compute(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    *,
    categories: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    scopes: Mapping[str, str],
    budget: float = BUDGET,
) -> dict[str, Any]:
    """``{"unitized": unitized_report(...), "models": worker_models(...)}`` of the work;
    ``budget``: seconds of γ (config ``FIGURES_GAMMA_SECONDS``)."""
    spans = list(spans)
    unitized = unitized_report(
        spans,
        texts,
        annotated,
        categories=categories,
        groups=groups,
        scopes=scopes,
        budget=budget,
    )
    models = worker_models(spans, texts, annotated, categories=categories, scopes=scopes)
    return {"unitized": unitized, "models": models}


class WorkKey:
    """:func:`state_key` summed over batches of whole documents (:meth:`add`), so the report
    keys the work a batch at a time: each document's digest (its texts, its workers, its
    marks, sorted) is added modulo 2**256, so neither the order of the documents nor how they
    are batched changes the key."""

    def __init__(
        self,
        *,
        categories: Sequence[str],
        groups: Mapping[str, Sequence[str]],
        scopes: Mapping[str, str],
    ) -> None:
        head = [VERSION, list(categories), {g: list(c) for g, c in groups.items()}, dict(scopes)]
        self.head = json.dumps(head, sort_keys=True).encode()
        self.total = 0

    def add(
        self,
        spans: Iterable[Span],
        texts: Mapping[TextKey, str],
        annotated: Mapping[str, Iterable[str]],
    ) -> None:
        """Add one batch of whole documents (``annotated`` naming the batch's documents)."""
        parts: dict[str, list[Any]] = defaultdict(lambda: [[], [], []])
        for key in texts:
            parts[key[0]][0].append([*key, texts[key]])
        for worker, docs in annotated.items():
            for doc in set(docs):
                parts[doc][1].append(worker)
        for span in spans:
            parts[span.document][2].append(
                (span.document, span.segment, span.start or 0, span.end or 0)
                + (span.category, span.source)
            )
        for doc, (doc_texts, workers, marks) in parts.items():
            found = json.dumps([doc, sorted(doc_texts), sorted(workers), sorted(marks)])
            digest = hashlib.sha256(found.encode()).digest()
            self.total = (self.total + int.from_bytes(digest, "big")) % 2**256

    def hexdigest(self) -> str:
        return hashlib.sha256(self.head + self.total.to_bytes(32, "big")).hexdigest()


def state_key(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    *,
    categories: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    scopes: Mapping[str, str],
) -> str:
    """SHA-256 of everything :func:`compute` reads (and :data:`VERSION`): :class:`WorkKey`
    of the work in one batch."""
    key = WorkKey(categories=categories, groups=groups, scopes=scopes)
    key.add(spans, texts, annotated)
    return key.hexdigest()


def _row(session: Session, study: Study, include_practice: bool) -> FigureJob | None:
    return session.scalar(
        select(FigureJob).where(
            FigureJob.study_id == study.id, FigureJob.include_practice.is_(include_practice)
        )
    )


def cached(
    session: Session,
    study: Study,
    include_practice: bool,
    key: str,
    make: Callable[[], dict[str, Any]] | None = None,
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The stored figures of the study and their state ``{"state": current | stale | none,
    "job": the job's status or None, "computed_at", "seconds", "error"}``. With ``make``,
    figures that are not current are computed by it first and stored (the session's read
    transaction is committed before the write)."""
    row = _row(session, study, include_practice)
    if make is not None and (row is None or row.result_key != key):
        started = time.monotonic()
        result = make()
        seconds = round(time.monotonic() - started, 3)
        session.commit()
        begin_write(session)
        row = _row(session, study, include_practice) or FigureJob(
            study_id=study.id, include_practice=include_practice, status="done"
        )
        row.result, row.result_key, row.seconds = result, key, seconds
        row.finished_at = utcnow()
        if row.status != "running":  # a running job marks itself done
            row.status = "done"
        session.add(row)
        if not include_practice:
            store_consensus(session, study, (result.get("models") or {}).get("posteriors", []))
        session.commit()
    if row is None or row.result is None:
        state = "none"
    else:
        state = "current" if row.result_key == key else "stale"
    return (row.result if row is not None else None), {"state": state, **job_state(row)}


def job_state(row: FigureJob | None) -> dict[str, Any]:
    """The job's part of the figures' state: ``job`` (its status), ``computed_at`` and
    ``seconds`` of the stored figures, ``error`` (the last line of the last failure)."""
    stored = row is not None and row.result is not None
    return {
        "job": row.status if row is not None else None,
        "computed_at": row.finished_at.isoformat() if stored and row.finished_at else None,
        "seconds": row.seconds if row is not None else None,
        "error": (row.last_error or "").splitlines()[-1][:300] if row and row.last_error else None,
    }


def store_consensus(session: Session, study: Study, posteriors: list[dict[str, Any]]) -> None:
    """Replace the study's consensus units (the ``consensus`` export layer) with
    ``posteriors`` (:func:`app.quality.reliability.worker_models`); caller commits."""
    session.execute(delete(ConsensusUnit).where(ConsensusUnit.study_id == study.id))
    query = select(Document.external_id, Document.id).where(Document.study_id == study.id)
    ids = {external_id: id_ for external_id, id_ in session.execute(query)}
    now, names = utcnow(), ("segment", "start", "end", "category", "posterior", "marked")
    rows = [
        {"study_id": study.id, "document_id": ids[p["document"]], "created_at": now}
        | {name: p[name] for name in names}
        for p in posteriors
        if p["document"] in ids
    ]
    if rows:
        session.execute(insert(ConsensusUnit), rows)


def enqueue(
    session: Session, study: Study, include_practice: bool, *, figures: bool = True
) -> FigureJob:
    """Queue the study's report and, with ``figures``, its slow figures (a no-op while a job
    is queued or running, but for asking a queued job for the figures too); caller commits."""
    row = _row(session, study, include_practice)
    if row is None:
        row = FigureJob(study_id=study.id, include_practice=include_practice, attempts=0)
        session.add(row)
    elif row.status in ("queued", "running"):
        if figures and row.status == "queued":
            row.with_figures, row.run_after = True, utcnow()
        return row
    row.status, row.attempts, row.run_after, row.last_error = "queued", 0, utcnow(), None
    row.with_figures = figures
    session.flush()
    return row


def add_to_report(
    session: Session,
    study: Study,
    report: dict[str, Any],
    spans: list[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    *,
    include_practice: bool,
    compute_figures: bool,
    categories: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    scopes: Mapping[str, str],
    key: str | None = None,
) -> None:
    """The stored figures into the report (computed first with ``compute_figures``):
    ``agreement.gamma``, ``agreement.unitized_alpha``, ``agreement.pairs``, ``gamma`` and
    ``unitized_alpha`` on each ``agreement.per_document`` row, ``agreement.unitized`` (the
    state, seed, samples, slots), ``agreement.worker_models`` (the models' set-up) and
    ``reliability`` on each worker row (None without figures). ``key``: the work's
    :func:`state_key` when the caller has it (the report sums it a batch at a time: then
    ``spans``, ``texts`` and ``annotated`` are read only with ``compute_figures``)."""
    options = {"categories": categories, "groups": groups, "scopes": scopes}
    key = key or state_key(spans, texts, annotated, **options)
    config = current_app.config if has_app_context() else {}  # a library call: the default
    budget = float(config.get("FIGURES_GAMMA_SECONDS", BUDGET))
    make = (
        (lambda: compute(spans, texts, annotated, **options, budget=budget))
        if compute_figures
        else None
    )
    result, state = cached(session, study, include_practice, key, make)
    unitized, models = (result or {}).get("unitized") or {}, (result or {}).get("models") or {}
    agreement = report["agreement"]
    agreement["gamma"] = unitized.get("gamma")
    agreement["unitized_alpha"] = unitized.get("unitized_alpha")
    agreement["pairs"] = unitized.get("pairs")
    setup = ("seed", "samples", "precision", "study", "skipped")
    agreement["unitized"] = {**state, **{name: unitized.get(name) for name in setup}}
    agreement["worker_models"] = {k: v for k, v in models.items() if k != "posteriors"} or None
    by_document = {row["document"]: row for row in unitized.get("per_document", [])}
    for row in agreement.get("per_document", []):
        found = by_document.get(row["document"], {})
        row["gamma"], row["unitized_alpha"] = found.get("gamma"), found.get("unitized_alpha")
    competence = models.get("workers", {})
    for row in report["workers"]:
        row["reliability"] = competence.get(row["worker_id"])


def stored_reliability(session: Session, study: Study) -> tuple[dict[str, Any], str | None]:
    """Each worker's stored model figures (counted work, practice left out: as last
    computed, current or not) and when they were computed (None: never)."""
    row = _row(session, study, False)
    if row is None or row.result is None:
        return {}, None
    models = row.result.get("models") or {}
    return dict(models.get("workers") or {}), (
        row.finished_at.isoformat() if row.finished_at else None
    )
