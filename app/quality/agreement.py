"""Inter-annotator agreement on error spans: Krippendorff's alpha and two-agree %.

Set-up, for N workers and the documents each of them annotated (submitted):

* **Units** are, per segment, its tokens (level ``token``), its sentences (``sentence``) or
  the segment itself (``segment``); tokens and sentences come from the regular expressions
  of :mod:`app.rules.scoring` (:func:`~app.rules.scoring.token_bounds`,
  :func:`~app.rules.scoring.sentence_bounds`).
* **Value** of a unit for a worker and a category (or a group of categories, or ``all``
  categories): 1 when one of the worker's spans of that category overlaps the unit
  (half-open ranges intersect), else 0; *missing* when the worker did not annotate the
  document. Spans of sentence-scope categories (SceneE) are first widened to the whole
  sentences they touch. Only a span's own range counts (a paired span's earlier half is
  not a mark). At segment level a unit is 1 when the worker marked the category anywhere
  in the segment.
* **alpha** is Krippendorff's alpha, nominal, computed from a histogram of the units
  (:mod:`app.quality.agreement_counts`; the ``krippendorff`` package's value on the same
  units in the tests, tests/agreement_reference.py). As always with alpha, only units with at least two values
  (two workers on the document) enter it. It is ``None`` when undefined: no such units, or
  no variation at all (every value 0, or every value 1).
* **two_agree** is the share of marked units (at least one worker marked it, among units
  with at least two workers) that at least two workers marked. ``None`` when nothing was
  marked.
* **token_normalised** is the boundary-normalised variant (after SNaC, Tables 4 and 5):
  for each document, segment and category, all workers' spans are grouped into connected
  components of the overlap relation (spans that overlap, directly or through a chain of
  overlapping spans, are one component) and every span is replaced by the union range of
  its component. Two workers whose spans overlap therefore mark exactly the same tokens;
  then token-level alpha and two-agree are computed as above. Normalisation runs per
  category, after the sentence widening; a group's normalised value is the OR of its
  categories' normalised values. Touching spans (one ends where the other starts) are not
  connected.

A worker who marks the same unit twice (two overlapping spans) still gives it one value, 1.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from app.quality.agreement_counts import Histogram, add_units, stat_of
from app.quality.agreement_units import (
    SpanTable,
    UnitLayout,
    marked_counts,
    marked_in,
    merge_ranges,
    numbers,
)
from app.rules.scoring import Span, TextKey, widen_to_sentences

LEVELS = ("token", "sentence", "segment")
NORMALISED = "token_normalised"
VARIANTS = (*LEVELS, NORMALISED)


@dataclass(frozen=True)
class CategoryScheme:
    """What an agreement figure is computed over: the ``categories`` counted (taxonomy
    order), the ``groups`` whose categories are also counted together (group id -> category
    ids) and each category's scope (a ``sentence``-scope category's spans are widened to the
    whole sentences they touch). One value for the set-up every figure of the report shares,
    so a figure's signature names the work and this, not the same three keywords again."""

    categories: Sequence[str]
    groups: Mapping[str, Sequence[str]] = field(default_factory=dict)
    scopes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkBatch:
    """A batch of whole documents of the counted work, as every figure that is summed a batch
    at a time takes it: the workers' ``spans`` (``Span.source`` = worker id), the ``texts``
    of every segment of the batch's documents, and ``annotated``, each worker's documents
    in the batch (a worker with no span on one of them marked nothing there)."""

    spans: Sequence[Span]  # read by each figure in turn
    texts: Mapping[TextKey, str]
    annotated: Mapping[str, Iterable[str]]


def groups_from_taxonomy(snapshot: Mapping[str, Any]) -> dict[str, list[str]]:
    """Group id -> its category ids, in taxonomy order (categories with no group skipped)."""
    groups: dict[str, list[str]] = {g["id"]: [] for g in snapshot.get("groups", [])}
    for cat in snapshot.get("categories", []):
        if cat.get("group"):
            groups.setdefault(cat["group"], []).append(cat["id"])
    return groups


def _prepare(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    scopes: Mapping[str, str] | None,
) -> tuple[list[Span], dict[str, int]]:
    """Keep spans of annotated documents, widen sentence-scope ones; count coders per doc."""
    done = {worker: set(docs) for worker, docs in annotated.items()}
    coders: dict[str, int] = defaultdict(int)
    for docs in done.values():
        for doc in docs:
            coders[doc] += 1
    kept = []
    for span in spans:
        if span.document not in done.get(span.source, ()):
            continue
        if (scopes or {}).get(span.category) == "sentence" and span.located and span.key in texts:
            start, end = widen_to_sentences(texts[span.key], span.start, span.end)  # type: ignore[arg-type]
            span = replace(span, start=start, end=end)
        kept.append(span)
    return kept, dict(coders)


def agreement_report(work: WorkBatch, scheme: CategoryScheme) -> dict[str, Any]:
    """Agreement per category, per group and over all categories of ``scheme``, at every
    level, of ``work`` given whole.

    ``work.spans`` are the workers' spans (``Span.source`` = worker id); ``work.texts`` maps
    (document, segment) to the segment text for every segment of the documents;
    ``work.annotated`` maps each worker to the documents they annotated (a worker with no
    spans on a document they annotated marked nothing there; a document they did not
    annotate is missing). Spans outside ``annotated`` or ``texts`` are ignored. Returns::

        {"workers": int,              # workers who annotated at least one document
         "documents": int,            # documents annotated by at least two workers
         "units": {level: int},       # units with at least two workers, per level
         "per_category": {cat: {variant: stat}},
         "per_group": {group: {variant: stat}},
         "all": {variant: stat}}      # any category at all

    where variant is ``token``, ``sentence``, ``segment`` or ``token_normalised`` and
    stat is ``{"alpha": float | None, "two_agree": float | None, "marked_units": int}``.
    """
    figures = Agreement(
        scheme.categories, groups=scheme.groups, scopes=scheme.scopes, breakdown=False
    )
    figures.add(work)
    return figures.report()


def agreement_breakdown(work: WorkBatch, scheme: CategoryScheme) -> dict[str, Any]:
    """Token-level agreement over all the categories of ``scheme`` (its groups do not enter)
    per document and per pair of workers (the same inputs and units as
    :func:`agreement_report`, its ``all`` / ``token`` figure taken on fewer units):

    * ``per_document``: for each document annotated by at least two workers, its tokens, its
      workers as coders: ``{"document", "workers", "token": stat}``, by document id;
    * ``per_pair``: for each two workers who annotated at least one document both, the tokens
      of the documents both annotated, the two of them as the only coders:
      ``{"workers": [a, b], "documents", "token": stat}``, workers sorted.

    stat is ``{"alpha", "two_agree", "marked_units"}`` as in :func:`agreement_report`.
    """
    figures = Agreement(scheme.categories, scopes=scheme.scopes, report=False)
    figures.add(work)
    return figures.breakdown()


def pairable_units(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    categories: Iterable[str],
    *,
    level: str = "token",
    scopes: Mapping[str, str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The units of one level with two coders or more, as :func:`agreement_report` lays
    them out: per unit its coders and how many of them marked it with one of
    ``categories`` (an LLM annotator's pooled alpha sums them, app/llm/agreeing.py)."""
    kept, coders = _prepare(spans, texts, annotated, scopes)
    layout = UnitLayout(texts, coders, level)
    wanted = set(categories)
    names = numbers(span.source for span in kept)
    category_numbers = numbers(sorted({span.category for span in kept}))
    table = SpanTable.of(kept, names, category_numbers)
    rows, first, last = table.units(layout)
    mask = np.array([c in wanted for c in category_numbers], dtype=bool)
    marked = marked_counts(layout.size, table.worker[rows], table.category[rows], first, last, mask)
    pairable = layout.coders >= 2
    return layout.coders[pairable], marked[pairable]


class Agreement:
    """:func:`agreement_report` and :func:`agreement_breakdown` summed over batches of
    documents (:meth:`add`; each document with all its workers' spans in one batch, and
    ``annotated`` naming only the batch's documents). A batch's per-unit counts become
    histograms of (coders, marked) pairs (:mod:`app.quality.agreement_counts`), per pair of
    workers three counts, so memory holds one batch, never the study. Only documents with
    two workers or more are laid out: the others have no pairable unit."""

    def __init__(
        self,
        categories: Sequence[str],
        *,
        groups: Mapping[str, Sequence[str]] | None = None,
        scopes: Mapping[str, str] | None = None,
        report: bool = True,
        breakdown: bool = True,
    ) -> None:
        self.categories = list(categories)
        self.scopes = scopes
        sets: dict[tuple[str, str], set[str]] = {("category", c): {c} for c in categories}
        sets |= {("group", g): set(cats) for g, cats in (groups or {}).items()}
        sets[("all", "")] = set(categories)
        self.numbers = numbers(c for found in sets.values() for c in sorted(found))
        self.masks = {
            name: np.array([c in found for c in self.numbers], dtype=bool)
            for name, found in sets.items()
        }
        self.with_report, self.with_breakdown = report, breakdown
        self.workers: set[str] = set()
        self.documents = 0
        self.units = dict.fromkeys(LEVELS, 0)
        self.hist: dict[tuple[str, str, str], Histogram] = defaultdict(Counter)
        self.per_document: list[dict[str, Any]] = []
        self.pairs: dict[tuple[str, str], list[int]] = {}  # documents, units marked 0, 1, 2

    def add(self, work: WorkBatch) -> None:
        """Add one batch of whole documents."""
        texts = work.texts
        annotated = {worker: set(docs) for worker, docs in work.annotated.items()}
        self.workers.update(worker for worker, docs in annotated.items() if docs)
        kept, coders = _prepare(work.spans, texts, annotated, self.scopes)
        shared = {doc for doc, n in coders.items() if n >= 2}
        self.documents += len(shared)
        if not shared:
            return
        texts = {key: text for key, text in texts.items() if key[0] in shared}
        kept = [span for span in kept if span.document in shared]
        names = numbers(span.source for span in kept)
        table = SpanTable.of(kept, names, self.numbers)
        token = UnitLayout(texts, coders, "token")
        if self.with_report:
            layouts = {level: UnitLayout(texts, coders, level) for level in LEVELS[1:]}
            self._add_report(table, {"token": token, **layouts})
        if self.with_breakdown:
            self._add_breakdown(table, token, list(names), coders, annotated)

    def _add_report(self, table: SpanTable, layouts: Mapping[str, UnitLayout]) -> None:
        normalised = table.normalised()
        for level in LEVELS:
            self.units[level] += int((layouts[level].coders >= 2).sum())
        for variant in VARIANTS:
            layout = layouts["token" if variant == NORMALISED else variant]
            found = normalised if variant == NORMALISED else table
            rows, first, last = found.units(layout)
            worker, category = found.worker[rows], found.category[rows]
            for (kind, name), wanted in self.masks.items():
                marked = marked_counts(layout.size, worker, category, first, last, wanted)
                add_units(self.hist[(kind, name, variant)], layout.coders, marked)

    def report(self) -> dict[str, Any]:
        """:func:`agreement_report`'s figures over every batch added."""

        def stats(kind: str, name: str) -> dict[str, Any]:
            return {variant: stat_of(self.hist[(kind, name, variant)]) for variant in VARIANTS}

        return {
            "workers": len(self.workers),
            "documents": self.documents,
            "units": dict(self.units),
            "per_category": {cat: stats("category", cat) for cat in self.categories},
            "per_group": {
                name: stats("group", name) for kind, name in self.masks if kind == "group"
            },
            "all": stats("all", ""),
        }

    def _add_breakdown(
        self,
        table: SpanTable,
        layout: UnitLayout,
        named: list[str],
        coders: Mapping[str, int],
        annotated: Mapping[str, set[str]],
    ) -> None:
        rows, first, last = table.units(layout)
        worker, category = table.worker[rows], table.category[rows]
        every = self.masks[("all", "")]
        total = marked_counts(layout.size, worker, category, first, last, every)
        by_worker: dict[str, list[tuple[int, int]]] = defaultdict(list)
        columns = (worker.tolist(), category.tolist(), first.tolist(), last.tolist())
        for w, c, f, e in zip(*columns, strict=True):
            if c >= 0 and every[c]:
                by_worker[named[w]].append((f, e))
        merged = {worker: merge_ranges(ranges) for worker, ranges in by_worker.items()}
        ends = {worker: [end for _, end in ranges] for worker, ranges in merged.items()}
        slices: dict[str, tuple[int, int]] = {}
        for key, offset in layout.offset.items():  # a document's segments are laid end to end
            start, end = slices.get(key[0], (offset, offset))
            slices[key[0]] = (min(start, offset), max(end, offset + layout.count[key]))
        for doc, (s, e) in slices.items():
            hist: Histogram = Counter()
            add_units(hist, layout.coders[s:e], total[s:e])
            self.per_document.append(
                {"document": doc, "workers": coders[doc], "token": stat_of(hist)}
            )
        workers_of: dict[str, list[str]] = defaultdict(list)
        for worker_id, docs in annotated.items():
            for doc in docs & set(slices):
                workers_of[doc].append(worker_id)
        for doc, pair_names in workers_of.items():
            pair_names.sort()
            s, e = slices[doc]
            for i, one in enumerate(pair_names):
                for other in pair_names[i + 1 :]:
                    marked = marked_in(merged.get(one, []), ends.get(one, []), s, e)
                    marked += marked_in(merged.get(other, []), ends.get(other, []), s, e)
                    found = np.bincount(marked, minlength=3)
                    pair = self.pairs.setdefault((one, other), [0, 0, 0, 0])
                    pair[0] += 1
                    for k in range(3):
                        pair[k + 1] += int(found[k])

    def breakdown(self) -> dict[str, Any]:
        """:func:`agreement_breakdown`'s figures over every batch added."""
        per_pair = [
            {
                "workers": [first, second],
                "documents": documents,
                "token": stat_of({(2, k): n for k, n in enumerate(counts) if n}),
            }
            for (first, second), (documents, *counts) in sorted(self.pairs.items())
        ]
        per_document = sorted(self.per_document, key=lambda row: row["document"])
        return {"per_document": per_document, "per_pair": per_pair}
