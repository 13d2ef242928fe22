"""Inter-annotator agreement on error spans: Krippendorff's alpha and two-agree %.

Set-up, for N workers and the documents each of them annotated (submitted):

* **Units** are, per segment, its tokens (level ``token``), its sentences (``sentence``) or
  the segment itself (``segment``); tokens and sentences come from the regular expressions
  of :mod:`app.quality.scoring` (:func:`~app.quality.scoring.token_bounds`,
  :func:`~app.quality.scoring.sentence_bounds`).
* **Value** of a unit for a worker and a category (or a group of categories, or ``all``
  categories): 1 when one of the worker's spans of that category overlaps the unit
  (half-open ranges intersect), else 0; *missing* when the worker did not annotate the
  document. Spans of sentence-scope categories (SceneE) are first widened to the whole
  sentences they touch. Only a span's own range counts (a paired span's earlier half is
  not a mark). At segment level a unit is 1 when the worker marked the category anywhere
  in the segment.
* **alpha** is Krippendorff's alpha, nominal, computed by the ``krippendorff`` package from
  per-unit value counts. As always with alpha, only units with at least two values
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

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import krippendorff
import numpy as np

from app.quality.scoring import Span, TextKey, sentence_bounds, token_bounds, widen_to_sentences

LEVELS = ("token", "sentence", "segment")
NORMALISED = "token_normalised"
VARIANTS = (*LEVELS, NORMALISED)


@dataclass(frozen=True)
class UnitCounts:
    """Per unit: how many workers annotated its document, and how many of them marked it."""

    coders: np.ndarray
    marked: np.ndarray

    def pairable(self) -> UnitCounts:
        keep = self.coders >= 2
        return UnitCounts(self.coders[keep], self.marked[keep])


def krippendorff_alpha(counts: UnitCounts) -> float | None:
    """Nominal alpha over binary units via ``krippendorff.alpha(value_counts=...)``."""
    pairable = counts.pairable()
    if pairable.coders.size == 0:
        return None
    value_counts = np.stack([pairable.coders - pairable.marked, pairable.marked], axis=1)
    totals = value_counts.sum(axis=0)
    if totals[0] == 0 or totals[1] == 0:
        return None
    value = krippendorff.alpha(
        value_counts=value_counts, value_domain=[0, 1], level_of_measurement="nominal"
    )
    return None if np.isnan(value) else float(value)


def two_agree(counts: UnitCounts) -> float | None:
    """Share of marked pairable units that at least two workers marked."""
    pairable = counts.pairable()
    marked = int((pairable.marked >= 1).sum())
    if marked == 0:
        return None
    return int((pairable.marked >= 2).sum()) / marked


def groups_from_taxonomy(snapshot: Mapping[str, Any]) -> dict[str, list[str]]:
    """Group id -> its category ids, in taxonomy order (categories with no group skipped)."""
    groups: dict[str, list[str]] = {g["id"]: [] for g in snapshot.get("groups", [])}
    for cat in snapshot.get("categories", []):
        if cat.get("group"):
            groups.setdefault(cat["group"], []).append(cat["id"])
    return groups


def normalise_boundaries(spans: Iterable[Span]) -> list[Span]:
    """Replace each span by the union of its overlap component (same doc, segment, category).

    Touching spans (``a.end == b.start``) are not connected. Spans without offsets are
    returned unchanged. The order of the input is kept.
    """
    spans = list(spans)
    groups: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    for i, span in enumerate(spans):
        if span.located:
            groups[(span.document, span.segment, span.category)].append(i)
    out = list(spans)
    for indices in groups.values():
        indices.sort(key=lambda i: (spans[i].start, spans[i].end))
        components: list[list[Any]] = []  # [member indices, start, end]
        for i in indices:
            span = spans[i]
            if components and span.start < components[-1][2]:  # type: ignore[operator]
                components[-1][0].append(i)
                components[-1][2] = max(components[-1][2], span.end)
            else:
                components.append([[i], span.start, span.end])
        for members, start, end in components:
            for j in members:
                out[j] = replace(spans[j], start=start, end=end)
    return out


class _Layout:
    """All units of one level laid end to end: segment by segment, in (document, segment) order."""

    def __init__(self, texts: Mapping[TextKey, str], coders: Mapping[str, int], level: str):
        self.level = level
        self.offset: dict[TextKey, int] = {}
        self.bounds: dict[TextKey, tuple[tuple[int, int], ...]] = {}
        self.starts: dict[TextKey, list[int]] = {}
        self.ends: dict[TextKey, list[int]] = {}
        coder_blocks = []
        total = 0
        for key in sorted(k for k in texts if coders.get(k[0], 0) > 0):
            text = texts[key]
            if level == "token":
                bounds = token_bounds(text)
            elif level == "sentence":
                bounds = sentence_bounds(text)
            else:
                bounds = ((0, len(text)),)
            self.offset[key] = total
            self.bounds[key] = bounds
            self.starts[key] = [s for s, _ in bounds]
            self.ends[key] = [e for _, e in bounds]
            coder_blocks.append(np.full(len(bounds), coders[key[0]], dtype=np.int64))
            total += len(bounds)
        self.size = total
        self.coders = np.concatenate(coder_blocks) if coder_blocks else np.zeros(0, np.int64)

    def unit_range(self, span: Span) -> tuple[int, int] | None:
        """Global [i, j) of the units the span marks, or None."""
        if span.key not in self.offset:
            return None
        offset, bounds = self.offset[span.key], self.bounds[span.key]
        if self.level == "segment":
            return (offset, offset + 1) if bounds else None
        if not span.located:
            return None
        first = bisect_right(self.ends[span.key], span.start)  # first unit ending after start
        last = bisect_left(self.starts[span.key], span.end)  # units starting before end
        return (offset + first, offset + last) if first < last else None


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _counts(
    layout: _Layout, ranges: Mapping[tuple[str, str], list[tuple[int, int]]], categories: set[str]
) -> UnitCounts:
    """Per-unit marked counts for a set of categories (a worker marking twice counts once)."""
    diff = np.zeros(layout.size + 1, dtype=np.int64)
    per_worker: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (worker, category), worker_ranges in ranges.items():
        if category in categories:
            per_worker[worker].extend(worker_ranges)
    for worker_ranges in per_worker.values():
        for start, end in _merge(worker_ranges):
            diff[start] += 1
            diff[end] -= 1
    return UnitCounts(layout.coders, np.cumsum(diff)[: layout.size])


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


def unit_counts(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    categories: Iterable[str],
    level: str,
    *,
    scopes: Mapping[str, str] | None = None,
) -> UnitCounts:
    """Per-unit counts for one level (``token``, ``sentence``, ``segment`` or
    ``token_normalised``) and a set of categories; see the module docstring."""
    kept, coders = _prepare(spans, texts, annotated, scopes)
    if level == NORMALISED:
        kept, level = normalise_boundaries(kept), "token"
    layout = _Layout(texts, coders, level)
    ranges: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for span in kept:
        found = layout.unit_range(span)
        if found:
            ranges[(span.source, span.category)].append(found)
    return _counts(layout, ranges, set(categories))


def _stat(counts: UnitCounts) -> dict[str, Any]:
    pairable = counts.pairable()
    return {
        "alpha": krippendorff_alpha(counts),
        "two_agree": two_agree(counts),
        "marked_units": int((pairable.marked >= 1).sum()),
    }


def agreement_report(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    *,
    categories: Sequence[str],
    groups: Mapping[str, Sequence[str]] | None = None,
    scopes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Agreement per category, per group and over all categories, at every level.

    ``spans`` are the workers' spans (``Span.source`` = worker id); ``texts`` maps
    (document, segment) to the segment text for every segment of the documents;
    ``annotated`` maps each worker to the documents they annotated (a worker with no spans
    on a document they annotated marked nothing there; a document they did not annotate
    is missing). Spans outside ``annotated`` or ``texts`` are ignored. Returns::

        {"workers": int,              # workers who annotated at least one document
         "documents": int,            # documents annotated by at least two workers
         "units": {level: int},       # units with at least two workers, per level
         "per_category": {cat: {variant: stat}},
         "per_group": {group: {variant: stat}},
         "all": {variant: stat}}      # any category at all

    where variant is ``token``, ``sentence``, ``segment`` or ``token_normalised`` and
    stat is ``{"alpha": float | None, "two_agree": float | None, "marked_units": int}``.
    """
    kept, coders = _prepare(spans, texts, annotated, scopes)
    by_variant = {level: kept for level in LEVELS}
    by_variant[NORMALISED] = normalise_boundaries(kept)
    layouts = {level: _Layout(texts, coders, level) for level in LEVELS}
    ranges: dict[str, dict[tuple[str, str], list[tuple[int, int]]]] = {}
    for variant, variant_spans in by_variant.items():
        layout = layouts["token" if variant == NORMALISED else variant]
        ranges[variant] = defaultdict(list)
        for span in variant_spans:
            found = layout.unit_range(span)
            if found:
                ranges[variant][(span.source, span.category)].append(found)

    def stats(category_set: set[str]) -> dict[str, Any]:
        return {
            variant: _stat(
                _counts(
                    layouts["token" if variant == NORMALISED else variant],
                    ranges[variant],
                    category_set,
                )
            )
            for variant in VARIANTS
        }

    groups = groups or {}
    return {
        "workers": sum(1 for docs in annotated.values() if set(docs)),
        "documents": sum(1 for n in coders.values() if n >= 2),
        "units": {level: int((layouts[level].coders >= 2).sum()) for level in LEVELS},
        "per_category": {cat: stats({cat}) for cat in categories},
        "per_group": {group: stats(set(cats)) for group, cats in groups.items()},
        "all": stats(set(categories)),
    }


def agreement_breakdown(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    *,
    categories: Sequence[str],
    scopes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Token-level agreement over all ``categories`` per document and per pair of workers
    (the same inputs and units as :func:`agreement_report`, its ``all`` / ``token`` figure
    taken on fewer units):

    * ``per_document``: for each document annotated by at least two workers, its tokens, its
      workers as coders: ``{"document", "workers", "token": stat}``, by document id;
    * ``per_pair``: for each two workers who annotated at least one document both, the tokens
      of the documents both annotated, the two of them as the only coders:
      ``{"workers": [a, b], "documents", "token": stat}``, workers sorted.

    stat is ``{"alpha", "two_agree", "marked_units"}`` as in :func:`agreement_report`.
    """
    kept, coders = _prepare(spans, texts, annotated, scopes)
    layout = _Layout(texts, coders, "token")
    wanted = set(categories)
    by_worker: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for span in kept:
        if span.category in wanted and (found := layout.unit_range(span)):
            by_worker[span.source].append(found)
    merged = {worker: _merge(ranges) for worker, ranges in by_worker.items()}
    ends = {worker: [end for _, end in ranges] for worker, ranges in merged.items()}
    total = _counts(layout, {(w, "all"): r for w, r in merged.items()}, {"all"})
    slices: dict[str, tuple[int, int]] = {}
    for key, offset in layout.offset.items():  # a document's segments are laid end to end
        start, end = slices.get(key[0], (offset, offset))
        slices[key[0]] = (min(start, offset), max(end, offset + len(layout.bounds[key])))
    per_document = [
        {
            "document": doc,
            "workers": coders[doc],
            "token": _stat(UnitCounts(total.coders[s:e], total.marked[s:e])),
        }
        for doc, (s, e) in sorted(slices.items(), key=lambda item: item[1])
        if coders[doc] >= 2
    ]
    shared_docs: dict[tuple[str, str], list[str]] = defaultdict(list)
    workers_of: dict[str, list[str]] = defaultdict(list)
    for worker, docs in annotated.items():
        for doc in set(docs) & set(slices):
            workers_of[doc].append(worker)
    for doc, names in workers_of.items():
        names.sort()
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                shared_docs[(first, second)].append(doc)
    per_pair = []
    for (first, second), docs in sorted(shared_docs.items()):
        shared = sorted(slices[d] for d in docs)
        marked = np.concatenate(
            [
                _marked_in(merged.get(first, []), ends.get(first, []), s, e)
                + _marked_in(merged.get(second, []), ends.get(second, []), s, e)
                for s, e in shared
            ]
        )
        counts = UnitCounts(np.full(marked.size, 2, dtype=np.int64), marked)
        per_pair.append(
            {"workers": [first, second], "documents": len(shared), "token": _stat(counts)}
        )
    return {"per_document": per_document, "per_pair": per_pair}


def agreement_sections(
    spans: list[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, set[str]],
    categories: list[str],
    groups: Mapping[str, list[str]],
    scopes: Mapping[str, str],
) -> dict[str, Any]:
    """The report's ``agreement``: :func:`agreement_report` plus its breakdown per document
    and per pair of workers (:func:`agreement_breakdown`), from the same spans and units."""
    return {
        **agreement_report(
            spans, texts, annotated, categories=categories, groups=groups, scopes=scopes
        ),
        **agreement_breakdown(spans, texts, annotated, categories=categories, scopes=scopes),
    }


def _marked_in(ranges: list[tuple[int, int]], ends: list[int], start: int, end: int) -> np.ndarray:
    """1 for each unit of [start, end) that one of the merged ``ranges`` (``ends``: their
    ends, ascending) covers, else 0."""
    out = np.zeros(end - start, dtype=np.int64)
    for first, last in ranges[bisect_right(ends, start) :]:
        if first >= end:
            break
        out[max(first, start) - start : min(last, end) - start] = 1
    return out
