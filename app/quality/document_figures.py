"""Each document's part of γ and unitizing α, cached per its counted-work state (the
``document_figures`` table), and the study's figures summed from those parts (docs/METRICS.md,
"Unitized agreement"; docs/PERFORMANCE.md, "Figures kept current").

The report walks the counted work a batch of whole documents at a time
(:mod:`app.quality.report_stream`); :meth:`UnitizedFigures.add` takes each batch:

* a document is keyed by its state (:func:`app.quality.figures.document_digests`: its
  texts, workers and marks) with the taxonomy, the figures' version and the study's number
  of slots ``m``;
* its cached part is used when its key is the same, else (the figure job, while its time
  budget lasts) computed: its γ (:func:`app.quality.unitizing.gamma`, its workers as
  annotators), the observed disorder of its alignment for each study figure (its first
  ``m`` workers as slots) and for each pair of its workers
  (:func:`app.quality.corpus_gamma.alignment_part`), and stored;
* its units are kept for the sums (unitizing α, the sampler's statistics).

:meth:`UnitizedFigures.report` then gives what :func:`app.quality.unitizing.unitized_report`
gave: γ per category, group and over all categories, per document and per pair (each a sum of
the documents' parts with a chance disorder per set of statistics, cached by them), uα as
before. A document whose part is still to compute leaves the figures it enters out
(``missing``): the job comes back for it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from app.db import begin_write
from app.models import DocumentFigures, Study, utcnow
from app.quality import corpus_gamma
from app.quality.agreement import CategoryScheme, WorkBatch
from app.quality.document_parts import (
    _slotted,
    document_digests,
    document_parts,
    slots_of,
    wanted_figures,
)
from app.quality.unitizing import (
    PRECISION,
    SAMPLES,
    SEED,
    Unit,
    _laid,
    document_units,
    unitizing_alpha,
)
from app.rules.scoring import Span, TextKey

STORE_EVERY = 30.0  # seconds between two writes of the parts computed meanwhile


@dataclass
class _Document:
    id: int
    name: str
    workers: list[str]
    units: list[Unit]
    length: int
    parts: dict[str, Any] | None
    key: str = ""
    by_worker: dict[str, str] | None = None  # each worker's units' digest (all categories)

    def worker_digest(self, worker: str, every: set[str]) -> str:
        """A digest of ``worker``'s units of the categories ``every`` in this document."""
        if self.by_worker is None:
            grouped: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
            for u in self.units:
                if u.category in every:
                    grouped[u.annotator].append((u.start, u.end, u.category))
            self.by_worker = {
                name: hashlib.sha256(json.dumps(sorted(found)).encode()).hexdigest()
                for name, found in grouped.items()
            }
        return self.by_worker.get(worker, "")


@dataclass
class UnitizedFigures:
    """The study's γ and uα, a batch of documents at a time (module docstring)."""

    session: Session | None  # None: no cache (a computation from nothing)
    study: Study | None
    categories: Sequence[str]
    groups: Mapping[str, Sequence[str]]
    scopes: Mapping[str, str]
    head: bytes  # the figures' version and the taxonomy (figures.WorkKey.head)
    m: int
    budget: float | None = None  # seconds of γ per job; 0: γ off (its figures left out)
    documents: list[_Document] = field(default_factory=list)
    fresh: list[dict[str, Any]] = field(default_factory=list)
    missing: int = 0  # parts still to compute: documents', and chance disorders
    computed: int = 0  # documents' parts computed by this run

    def __post_init__(self) -> None:
        self.figures = wanted_figures(self.categories, self.groups)
        self.deadline = None if self.budget is None else time.monotonic() + self.budget
        self.stored_at = time.monotonic()

    def _late(self) -> bool:
        """The time budget has run out (after the first document: every job makes progress)."""
        late = self.deadline is not None and time.monotonic() > self.deadline
        return late and self.computed > 0

    def key(self, digest: bytes) -> str:
        return hashlib.sha256(self.head + f"|m={self.m}|".encode() + digest).hexdigest()

    def add(
        self,
        spans: Iterable[Span],
        texts: Mapping[TextKey, str],
        annotated: Mapping[str, Iterable[str]],
        digests: Mapping[str, bytes],
        ids: Mapping[str, int],
    ) -> None:
        """One batch of whole documents (what the report's walk gives), ``ids``: each
        document's database id by its external id."""
        units, lengths, workers = document_units(spans, texts, annotated, self.scopes)
        names = [name for name in sorted(workers) if len(workers[name]) >= 2]
        cached = self._cached([ids[name] for name in names])
        for name in names:
            key = self.key(digests[name])
            hit = cached.get(ids[name])
            parts = hit[1] if hit is not None and hit[0] == key else None
            if self.budget is not None and self.budget <= 0:  # γ off: its figures left out
                doc_units = units.get(name, [])
                parts = document_parts(
                    doc_units, workers[name], lengths[name], self.m, self.figures, with_gamma=False
                )
            elif parts is None and not self._late():
                started = time.process_time()
                parts = document_parts(
                    units.get(name, []), workers[name], lengths[name], self.m, self.figures
                )
                seconds = round(time.process_time() - started, 3)
                self.fresh.append({"document_id": ids[name], "key": key, "parts": parts})
                self.fresh[-1]["seconds"] = seconds
                self.computed += 1
            self.missing += parts is None
            mine = units.get(name, [])
            found = _Document(ids[name], name, workers[name], mine, lengths[name], parts, key)
            self.documents.append(found)
        if self.fresh and time.monotonic() - self.stored_at > STORE_EVERY:
            self.store()

    def _cached(self, ids: list[int]) -> dict[int, tuple[str, dict[str, Any]]]:
        found: dict[int, tuple[str, dict[str, Any]]] = {}
        if self.session is None:
            return found
        for start in range(0, len(ids), 500):
            rows = self.session.execute(
                select(
                    DocumentFigures.document_id, DocumentFigures.key, DocumentFigures.parts
                ).where(DocumentFigures.document_id.in_(ids[start : start + 500]))
            )
            found.update({row[0]: (row[1], row[2]) for row in rows})
        return found

    def store(self) -> None:
        """Write the parts computed since the last write, in a transaction of their own on a
        connection of their own (the walk's read goes on: nothing computed is lost if the
        job stops later)."""
        if not self.fresh or self.session is None or self.study is None:
            self.fresh = []
            return
        rows = [{"study_id": self.study.id, "computed_at": utcnow(), **row} for row in self.fresh]
        with Session(bind=self.session.get_bind()) as writer:
            begin_write(writer)
            ids = [row["document_id"] for row in rows]
            writer.execute(delete(DocumentFigures).where(DocumentFigures.document_id.in_(ids)))
            writer.execute(insert(DocumentFigures), rows)
            writer.commit()
        self.fresh, self.stored_at = [], time.monotonic()

    def report(self, cache: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The figures of :func:`unitized_report`, plus ``missing`` (parts still to compute:
        documents', chance disorders) and ``computed`` (documents' parts computed now); and
        what the next run may reuse (``{"chances"``: the chance disorders used, by their
        statistics' hash; ``"pairs"``: each pair's figures, by its documents' states;
        ``"drawn"``: each study figure's chance with the statistics it was drawn from``}``),
        ``cache`` being the last run's."""
        self.store()
        sums = _Sums(self, cache)
        m = self.m
        entered = sorted(
            (d for d in self.documents if m >= 2 and len(d.workers) >= m), key=lambda d: d.name
        )
        slots = [f"slot {i + 1}" for i in range(m)]
        laid = {d.name: _slotted(d.units, d.workers, m) for d in entered}
        gammas, alphas = {}, {}
        for name, cats in self.figures.items():
            units = {d.name: [u for u in laid[d.name] if u.category in cats] for d in entered}
            parts = [d.parts["figures"].get(name) if d.parts else False for d in entered]
            laid_out = [(units[d.name], d.length) for d in entered]
            gammas[name] = sums.gamma(parts, laid_out, slots, figure=name)
            renamed = {d.name: {s: s for s in slots} for d in entered}
            lengths = {d.name: d.length for d in entered}
            together, total = _laid([d.name for d in entered], units, lengths, renamed)
            alphas[name] = unitizing_alpha(together, slots, total)
        per_document = []
        for d in self.documents:
            sums.skipped += bool(d.parts and d.parts.get("gamma_skipped"))
            per_document.append(
                {
                    "document": d.name,
                    "workers": len(d.workers),
                    "gamma": d.parts.get("gamma") if d.parts else None,
                    "unitized_alpha": d.parts.get("unitized_alpha") if d.parts else None,
                }
            )

        def split(values: Mapping[str, Any]) -> dict[str, Any]:
            return {
                "per_category": {c: values[f"category:{c}"] for c in self.categories},
                "per_group": {g: values[f"group:{g}"] for g in self.groups},
                "all": values["all"],
            }

        return {
            "gamma": split(gammas),
            "unitized_alpha": split(alphas),
            "study": {
                "annotators": m,
                "documents": len(entered),
                "left_out": len(self.documents) - len(entered),
            },
            "per_document": per_document,
            "pairs": self._pairs(sums),
            "seed": SEED,
            "samples": SAMPLES,
            "precision": PRECISION,
            "skipped": sums.skipped,
            "missing": self.missing,
            "computed": self.computed,
        }, {"chances": sums.used, "pairs": sums.pairs_used, "drawn": sums.drawn_used}

    def _pairs(self, sums: _Sums) -> dict[str, Any]:
        """The per-pair matrices: γ, uα and shared documents of each two workers."""
        names = sorted({w for d in self.documents for w in d.workers})
        index = {w: i for i, w in enumerate(names)}
        size = len(names)
        matrix: dict[str, list[list[Any]]] = {
            key: [[None] * size for _ in range(size)] for key in ("gamma", "unitized_alpha")
        }
        shared: dict[tuple[str, str], list[_Document]] = defaultdict(list)
        for d in sorted(self.documents, key=lambda d: d.name):
            for a, b in combinations(d.workers, 2):
                shared[(a, b)].append(d)
        documents = [[0] * size for _ in range(size)]
        every = self.figures["all"]
        for (a, b), docs in sorted(shared.items()):
            # a pair whose documents are as they were keeps its figures (a submission touches
            # the pairs of one document's workers)
            key = self._pair_key(a, b, docs, every)
            kept = sums.pairs.get(key)
            if kept is None or any(d.parts is None for d in docs):
                kept = self._pair(sums, a, b, docs, every)
            else:
                sums.skipped += kept.get("skipped", 0)
            if all(d.parts is not None for d in docs) and not (kept["gamma"] is None and sums.late):
                sums.pairs_used[key] = kept
            i, j = index[a], index[b]
            matrix["gamma"][i][j] = matrix["gamma"][j][i] = kept["gamma"]
            alpha = kept["unitized_alpha"]
            matrix["unitized_alpha"][i][j] = matrix["unitized_alpha"][j][i] = alpha
            documents[i][j] = documents[j][i] = len(docs)
        return {"workers": names, **matrix, "documents": documents}

    def _pair_key(self, a: str, b: str, docs: list[_Document], every: set[str]) -> str:
        """What a pair's figures read: the two workers' units in each document they share
        (another worker joining a document leaves the pair's figures as they were)."""
        found = [
            [d.name, d.length, d.worker_digest(a, every), d.worker_digest(b, every)] for d in docs
        ]
        return hashlib.sha256(self.head + json.dumps([a, b, found]).encode()).hexdigest()

    @staticmethod
    def _pair(
        sums: _Sums, a: str, b: str, docs: list[_Document], every: set[str]
    ) -> dict[str, Any]:
        """One pair's γ and uα over the documents they share."""
        units = {
            d.name: [u for u in d.units if u.annotator in (a, b) and u.category in every]
            for d in docs
        }
        parts = [_pair_part(d, a, b) for d in docs]
        skipped = sums.skipped
        value = sums.gamma(parts, [(units[d.name], d.length) for d in docs], [a, b])
        renamed = {d.name: {a: a, b: b} for d in docs}
        lengths = {d.name: d.length for d in docs}
        together, total = _laid([d.name for d in docs], units, lengths, renamed)
        alpha = unitizing_alpha(together, [a, b], total)
        return {"gamma": value, "unitized_alpha": alpha, "skipped": sums.skipped - skipped}


def _pair_part(document: _Document, a: str, b: str) -> Any:
    if document.parts is None:
        return False  # still to compute
    for first, second, part in document.parts["pairs"]:
        if (first, second) == (a, b):
            return part
    return False


class _Sums:
    """A figure's γ from its documents' parts (False: still to compute; None: left out for
    its size) and its chance disorder, computed once per set of statistics; a study figure
    keeps the chance it last drew while its statistics stay near those it was drawn from
    (:func:`corpus_gamma.still_drawn`: any submission moves the pooled statistics a little)."""

    def __init__(self, figures: UnitizedFigures, cache: Mapping[str, Any]):
        self.figures, self.skipped, self.late = figures, 0, False
        self.chances: Mapping[str, Any] = cache.get("chances") or {}
        self.pairs: Mapping[str, Any] = cache.get("pairs") or {}
        self.drawn: Mapping[str, Any] = cache.get("drawn") or {}
        self.used: dict[str, Any] = {}
        self.pairs_used: dict[str, Any] = {}
        self.drawn_used: dict[str, Any] = {}

    def gamma(
        self,
        parts: Sequence[Any],
        documents: Sequence[tuple[Sequence[Unit], int]],
        annotators: Sequence[str],
        figure: str | None = None,
    ) -> dict[str, Any] | None:
        """``documents``: each document's units and length, in the order they are laid;
        ``figure``: the study figure's name (None: a pair's, whose statistics move only when
        one of its own documents changes)."""
        if not any(units for units, _ in documents):
            return None
        if any(part is False for part in parts):
            return None  # counted in ``missing`` by document
        if any(part is None for part in parts):
            self.skipped += 1
            return None
        parameters = corpus_gamma.laid_parameters(documents, annotators)
        if parameters is None:
            return None
        key = hashlib.sha256(json.dumps(parameters, sort_keys=True).encode()).hexdigest()
        last = self.drawn.get(figure or "")
        if last is not None and corpus_gamma.still_drawn(last["parameters"], parameters):
            self.drawn_used[figure or ""] = last
            chance = last["chance"]
        else:
            chance = self.used.get(key) or self.chances.get(key)
            if chance is None:
                if self.figures._late():
                    self.figures.missing += 1
                    self.late = True
                    return None
                chance = corpus_gamma.expected(parameters)
            self.used[key] = chance
            if figure is not None:
                self.drawn_used[figure] = {"parameters": parameters, "chance": chance}
        observed = [sum(p[0] for p in parts), sum(p[1] for p in parts)]
        return corpus_gamma.gamma(observed, len(annotators), chance)


def unitized_report(
    work: WorkBatch, scheme: CategoryScheme, *, budget: float | None = None
) -> dict[str, Any]:
    """γ and uα per category, per group and over all categories of ``scheme``, per document
    and per pair, of the work given whole, computed from nothing (no cache): what the figure
    job stores.

    Returns ``{"gamma": {"per_category", "per_group", "all"}`` (each value ``{"gamma",
    "low", "high", "samples"}`` or None), ``"unitized_alpha"`` (the same, floats or None),
    ``"study": {"annotators", "documents", "left_out"}``, ``"per_document": [{"document",
    "workers", "gamma", "unitized_alpha"}]``, ``"pairs": {"workers", "gamma",
    "unitized_alpha", "documents"}`` (n x n matrices, None on the diagonal or where
    undefined), ``"seed"``, ``"samples"``, ``"precision"``, ``"skipped"`` (figures left out
    for their size), ``"missing"`` (parts left for the time budget), ``"computed"``."""
    spans, texts, annotated = work.spans, work.texts, work.annotated
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, docs in annotated.items():
        for doc in set(docs):
            workers[doc].add(worker)
    figures = UnitizedFigures(
        None, None, scheme.categories, scheme.groups, scheme.scopes, b"",
        slots_of(len(names) for names in workers.values()), budget=budget,
    )  # fmt: skip
    names = sorted({key[0] for key in texts} | set(workers))
    digests = document_digests(spans, texts, annotated)
    figures.add(spans, texts, annotated, digests, {name: n for n, name in enumerate(names)})
    return figures.report({})[0]
