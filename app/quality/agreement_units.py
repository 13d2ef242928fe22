"""The units of agreement as arrays, so that a batch of documents costs one numpy pass and a
big study's report stays in bounded memory: the same layout, unit ranges, boundary
normalisation and per-unit marked counts as the span-by-span definition
(tests/agreement_reference.py: ``SpanLayout``, ``normalise_boundaries``, ``marked_units``),
computed over a whole batch instead of span by span (a property test holds both forms
equal: tests/test_agreement_stream.py).

Every segment's units are laid end to end in (document, segment) order; each segment also
gets a base in one long character axis (its characters, then a gap), so a span's first unit
is the number of units ending at or before its start, and its last the number starting
before its end, both one ``searchsorted`` over the whole batch.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.rules.spans import Span, TextKey, sentence_bounds, token_bounds


def unit_bounds(text: str, level: str) -> Sequence[tuple[int, int]]:
    """A segment's units of one level: its tokens, its sentences, or itself whole."""
    if level == "token":
        return token_bounds(text)
    if level == "sentence":
        return sentence_bounds(text)
    return ((0, len(text)),)


class UnitLayout:
    """The units of one level (``token``, ``sentence`` or ``segment``) of the segments of the
    documents with a coder, and each unit's coders."""

    def __init__(self, texts: Mapping[TextKey, str], coders: Mapping[str, int], level: str):
        self.level = level
        self.offset: dict[TextKey, int] = {}
        self.count: dict[TextKey, int] = {}
        self.base: dict[TextKey, int] = {}
        flat: list[tuple[int, int]] = []
        bases: list[int] = []
        counts: list[int] = []
        per_key: list[int] = []
        base = 0
        for key in sorted(k for k in texts if coders.get(k[0], 0) > 0):
            text = texts[key]
            bounds = unit_bounds(text, level)
            self.offset[key], self.count[key], self.base[key] = len(flat), len(bounds), base
            flat.extend(bounds)
            bases.append(base)
            counts.append(len(bounds))
            per_key.append(coders[key[0]])
            base += len(text) + 1
        self.size = len(flat)
        found = np.array(flat, dtype=np.int64).reshape(-1, 2)
        shift = np.repeat(np.array(bases, dtype=np.int64), counts)
        self.starts, self.ends = found[:, 0] + shift, found[:, 1] + shift
        self.coders = np.repeat(np.array(per_key, dtype=np.int64), counts)


@dataclass
class SpanTable:
    """A batch's spans as columns: worker and category as small integers, the segment as
    its key, start and end (-1 where a span has no offsets)."""

    keys: list[TextKey]
    worker: np.ndarray
    category: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @classmethod
    def of(
        cls, spans: Sequence[Span], workers: Mapping[str, int], categories: Mapping[str, int]
    ) -> SpanTable:
        """``categories``: a category's number (a category missing from it gets -1)."""
        return cls(
            [(span.document, span.segment) for span in spans],
            np.array([workers[span.source] for span in spans], dtype=np.int64),
            np.array([categories.get(span.category, -1) for span in spans], dtype=np.int64),
            np.array([-1 if span.start is None else span.start for span in spans], np.int64),
            np.array([-1 if span.end is None else span.end for span in spans], np.int64),
        )

    @property
    def located(self) -> np.ndarray:
        return (self.start >= 0) & (self.end >= 0) & (self.start < self.end)

    def normalised(self) -> SpanTable:
        """Each located span replaced by the union of its overlap component (same segment
        and category; touching spans are not connected), as ``normalise_boundaries``."""
        start, end = self.start.copy(), self.end.copy()
        located = np.flatnonzero(self.located)
        if located.size:
            index = {key: n for n, key in enumerate(dict.fromkeys(self.keys))}
            width = int(self.category.max()) + 2
            group = np.array([index[self.keys[i]] for i in located], dtype=np.int64)
            group = group * width + self.category[located] + 1
            order = np.lexsort((end[located], start[located], group))
            rows = located[order]
            start[rows], end[rows] = _components(group[order], start[rows], end[rows])
        return SpanTable(self.keys, self.worker, self.category, start, end)

    def units(self, layout: UnitLayout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices of the spans that mark a unit, their first unit, their end unit)."""
        known = np.array([key in layout.offset for key in self.keys], dtype=bool)
        if layout.level == "segment":
            rows = np.flatnonzero(known)
            first = np.array([layout.offset[self.keys[i]] for i in rows], dtype=np.int64)
            return rows, first, first + 1
        rows = np.flatnonzero(known & self.located)
        base = np.array([layout.base[self.keys[i]] for i in rows], dtype=np.int64)
        first = np.searchsorted(layout.ends, base + self.start[rows], side="right")
        last = np.searchsorted(layout.starts, base + self.end[rows], side="left")
        keep = first < last
        return rows[keep], first[keep], last[keep]


def _components(
    group: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For spans sorted by (group, start, end): the start and end of each one's component (a
    span joins the one before it when it starts before that component's end). Each group
    is shifted onto its own stretch of one axis, so one running maximum serves them all."""
    width = int(end.max()) + 1
    shifted_start, shifted_end = start + group * width, end + group * width
    reach = np.maximum.accumulate(shifted_end)
    new = np.ones(len(start), dtype=bool)
    new[1:] = shifted_start[1:] >= reach[:-1]
    component = np.cumsum(new) - 1
    firsts = np.flatnonzero(new)
    ends = np.maximum.reduceat(shifted_end, firsts) - group[firsts] * width
    return start[firsts][component], ends[component]


def marked_counts(
    size: int,
    worker: np.ndarray,
    category: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
    wanted: np.ndarray,
) -> np.ndarray:
    """Per unit, how many workers marked it with a category of ``wanted`` (a boolean mask
    over category numbers; a worker's overlapping spans count once), as ``marked_units``."""
    keep = (category >= 0) & wanted[np.maximum(category, 0)]
    if not keep.any():
        return np.zeros(size, dtype=np.int64)
    shift = worker[keep] * (size + 1)  # each worker's ranges on their own stretch
    starts, ends = first[keep] + shift, last[keep] + shift
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    new = np.ones(len(starts), dtype=bool)
    new[1:] = starts[1:] > reach[:-1]
    merged_starts = starts[new]
    merged_ends = np.maximum.reduceat(ends, np.flatnonzero(new))
    diff = np.bincount(merged_starts % (size + 1), minlength=size + 1)
    diff -= np.bincount(merged_ends % (size + 1), minlength=size + 1)
    return np.cumsum(diff)[:size]


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching ranges joined, sorted."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def numbers(names: Iterable[str]) -> dict[str, int]:
    """Each distinct name's number, in order of first appearance."""
    return {name: n for n, name in enumerate(dict.fromkeys(names))}


def marked_in(ranges: list[tuple[int, int]], ends: list[int], start: int, end: int) -> np.ndarray:
    """1 for each unit of [start, end) one of the merged ``ranges`` covers (``ends`` ascending)."""
    out = np.zeros(end - start, dtype=np.int64)
    for first, last in ranges[bisect_right(ends, start) :]:
        if first >= end:
            break
        out[max(first, start) - start : min(last, end) - start] = 1
    return out
