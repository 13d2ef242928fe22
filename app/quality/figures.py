"""A study's slow figures: γ and unitizing α (:mod:`app.quality.unitizing`, summed from each
document's cached part by :mod:`app.quality.document_figures`), MACE and Dawid-Skene
(:mod:`app.quality.reliability`), kept current by the worker and cached per counted-work state
(docs/METRICS.md, "Unitized agreement", "Worker reliability"; docs/PERFORMANCE.md).

* :class:`WorkKey` hashes what the figures read (and :data:`VERSION`), summed a document at a
  time: the figures are **current** while the key of the work now equals the key they were
  computed from (**partial** when some document's part or chance disorder was still to
  compute when the job's time budget ran out: the job comes back for them).
* :func:`add_to_report` puts the stored figures in the report with their state; given the
  walk's :class:`Fresh` parts (the worker's figure job, :mod:`app.quality.figure_jobs`) it
  brings them current first: the documents whose state changed are recomputed, the rest are
  read from their cache, then the study's sums and the models' fit. A web request or
  ``marginalia report`` never computes them: they show what is stored, with its age.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flask import current_app, has_app_context
from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from app.db import begin_write
from app.models import ConsensusUnit, Document, FigureJob, Study, utcnow
from app.quality.agreement import WorkBatch
from app.quality.document_figures import UnitizedFigures
from app.quality.document_parts import document_digests, slots_of
from app.quality.reliability import Labels, fit
from app.rules.scoring import Span, TextKey
from app.rules.stored_figures import figure_row

log = logging.getLogger(__name__)
# change when a figure's definition changes: every stored figure goes stale (3: the study's
# and the pairs' γ summed from each document's alignment, app/quality/corpus_gamma.py)
VERSION = "3"
BUDGET = 20 * 60.0  # seconds of γ per job; the parts after it are left for the next job


def budget() -> float:
    """Seconds of γ per job (config ``FIGURES_GAMMA_SECONDS``)."""
    config = current_app.config if has_app_context() else {}  # a library call: the default
    return float(config.get("FIGURES_GAMMA_SECONDS", BUDGET))


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

    def add(self, work: WorkBatch) -> dict[str, bytes]:
        """Add one batch of whole documents; returns each document's digest
        (:func:`document_digests`)."""
        digests = document_digests(work.spans, work.texts, work.annotated)
        for digest in digests.values():
            self.total = (self.total + int.from_bytes(digest, "big")) % 2**256
        return digests

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
    key.add(WorkBatch(list(spans), texts, annotated))
    return key.hexdigest()


@dataclass
class Fresh:
    """What the figure job's walk gathers to bring the figures current: each document's part
    (:class:`~app.quality.document_figures.UnitizedFigures`) and the models' labels
    (:class:`~app.quality.reliability.Labels`)."""

    unitized: UnitizedFigures
    labels: Labels

    def add(self, batch: Sequence[Any], work: WorkBatch, digests: Mapping[str, bytes]) -> None:
        """One batch of the walk (its documents, their work and digests)."""
        ids = {document.external_id: document.id for document in batch}
        self.unitized.add(work.spans, work.texts, work.annotated, digests, ids)
        self.labels.add(work)


def fresh(
    session: Session,
    study: Study,
    key: WorkKey,
    categories: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    scopes: Mapping[str, str],
    submitted: Mapping[int, Sequence[Any]],
) -> Fresh:
    """A :class:`Fresh` for the report's walk; ``submitted``: each counted document's
    submitted assignments (rows with ``worker_id``), which set the study's slots."""
    m = slots_of(len({a.worker_id for a in rows}) for rows in submitted.values())
    unitized = UnitizedFigures(
        session, study, categories, groups, scopes, key.head, m, budget=budget()
    )
    return Fresh(unitized, Labels(categories, scopes))


def state(row: FigureJob | None, key: str) -> str:
    """``current``, ``partial``, ``stale`` or ``none`` (module docstring)."""
    if row is None or row.result is None:
        return "none"
    if row.result_key != key:
        return "stale"
    missing = ((row.result or {}).get("unitized") or {}).get("missing") or 0
    return "partial" if missing else "current"


def bring_current(
    session: Session, study: Study, include_practice: bool, key: str, fresh: Fresh
) -> None:
    """Compute the figures of the work keyed ``key`` from ``fresh`` (the documents' parts
    computed or read, the chance disorders and the models' fit reused while their inputs are
    the same) and store them; the session's read transaction is committed first."""
    started = time.monotonic()
    row = figure_row(session, study, include_practice)
    previous = (row.result if row is not None else None) or {}
    cache = {name: previous.get(name) or {} for name in ("chances", "pairs", "drawn")}
    unitized, used = fresh.unitized.report(cache)
    same_work = row is not None and row.result_key == key  # a partial run's second part
    models = previous.get("models") if same_work and previous.get("models") else None
    refitted = models is None
    if refitted:
        models = fit(fresh.labels)
    seconds = round(time.monotonic() - started, 3)
    session.commit()
    begin_write(session)
    row = figure_row(session, study, include_practice) or FigureJob(
        study_id=study.id, include_practice=include_practice, status="done", attempts=0
    )
    row.result = {"unitized": unitized, "models": models, **used}
    row.result_key, row.seconds, row.finished_at = key, seconds, utcnow()
    if row.status != "running":  # a running job marks itself done
        row.status = "done"
    session.add(row)
    if refitted and not include_practice:
        store_consensus(session, study, (models or {}).get("posteriors", []))
    session.commit()


def job_state(row: FigureJob | None) -> dict[str, Any]:
    """The job's part of the figures' state: ``job`` (its status), ``computed_at`` and
    ``seconds`` of the stored figures, ``error`` (the last line of the last failure)."""
    stored = row is not None and row.result is not None
    return {
        "job": row.status if row is not None else None,
        "computed_at": _aware(row.finished_at).isoformat() if stored and row.finished_at else None,
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
    session: Session, study: Study, include_practice: bool, *, run_after: Any = None
) -> FigureJob:
    """Queue the study's report and figures to be brought current (no sooner than
    ``run_after``, default now; a no-op while a job is running, and a queued one only moves
    earlier); caller commits."""
    when = run_after or utcnow()
    row = figure_row(session, study, include_practice)
    if row is None:
        row = FigureJob(study_id=study.id, include_practice=include_practice, attempts=0)
        session.add(row)
    elif row.status == "running":
        return row
    elif row.status == "queued":
        row.run_after = min(_aware(row.run_after), when)
        return row
    row.status, row.attempts, row.run_after, row.last_error = "queued", 0, when, None
    row.with_figures = True
    session.flush()
    return row


def _aware(moment: Any) -> Any:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=utcnow().tzinfo)


def add_to_report(
    session: Session,
    study: Study,
    report: dict[str, Any],
    *,
    include_practice: bool,
    key: str,
    fresh: Fresh | None = None,
) -> None:
    """The stored figures into the report (brought current first from ``fresh``, the figure
    job's walk): ``agreement.gamma``, ``agreement.unitized_alpha``, ``agreement.pairs``,
    ``gamma`` and ``unitized_alpha`` on each ``agreement.per_document`` row,
    ``agreement.unitized`` (the state, seed, samples, slots, what was left out or is still
    to compute), ``agreement.worker_models`` (the models' set-up) and ``reliability`` on each
    worker row (None without figures). ``key``: the work's :class:`WorkKey`."""
    if fresh is not None:
        bring_current(session, study, include_practice, key, fresh)
    row = figure_row(session, study, include_practice)
    result = (row.result if row is not None else None) or {}
    unitized, models = result.get("unitized") or {}, result.get("models") or {}
    agreement = report["agreement"]
    agreement["gamma"] = unitized.get("gamma")
    agreement["unitized_alpha"] = unitized.get("unitized_alpha")
    agreement["pairs"] = unitized.get("pairs")
    setup = ("seed", "samples", "precision", "study", "skipped", "missing")
    agreement["unitized"] = {
        "state": state(row, key),
        **job_state(row),
        **{name: unitized.get(name) for name in setup},
    }
    agreement["worker_models"] = {k: v for k, v in models.items() if k != "posteriors"} or None
    by_document = {row["document"]: row for row in unitized.get("per_document", [])}
    for row in agreement.get("per_document", []):
        found = by_document.get(row["document"], {})
        row["gamma"], row["unitized_alpha"] = found.get("gamma"), found.get("unitized_alpha")
    competence = models.get("workers", {})
    for row in report["workers"]:
        row["reliability"] = competence.get(row["worker_id"])
