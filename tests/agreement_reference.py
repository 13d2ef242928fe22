"""Agreement's units counted span by span: the definition of docs/METRICS.md and of
:mod:`app.quality.agreement`'s module docstring written plainly, one span after another, with
alpha from the ``krippendorff`` package itself. The app computes the same figures in other
forms, fast and in bounded memory (:mod:`app.quality.agreement_units`, numpy over a batch of
documents; :mod:`app.quality.agreement_counts`, alpha from a histogram of units); the
property tests of tests/test_agreement_stream.py hold them equal to this one, and
tests/test_agreement.py checks this one against hand-computed cases."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import krippendorff
import numpy as np

from app.quality.agreement import NORMALISED, _prepare
from app.quality.agreement_units import merge_ranges, unit_bounds
from app.rules.scoring import Span, TextKey


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


class SpanLayout:
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
            bounds = tuple(unit_bounds(texts[key], level))
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


def marked_units(
    layout: SpanLayout,
    ranges: Mapping[tuple[str, str], list[tuple[int, int]]],
    categories: set[str],
) -> UnitCounts:
    """Per-unit marked counts for a set of categories (a worker marking twice counts once)."""
    diff = np.zeros(layout.size + 1, dtype=np.int64)
    per_worker: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (worker, category), worker_ranges in ranges.items():
        if category in categories:
            per_worker[worker].extend(worker_ranges)
    for worker_ranges in per_worker.values():
        for start, end in merge_ranges(worker_ranges):
            diff[start] += 1
            diff[end] -= 1
    return UnitCounts(layout.coders, np.cumsum(diff)[: layout.size])


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
    layout = SpanLayout(texts, coders, level)
    ranges: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for span in kept:
        found = layout.unit_range(span)
        if found:
            ranges[(span.source, span.category)].append(found)
    return marked_units(layout, ranges, set(categories))
