"""Agreement on unitized annotation: γ (Mathet et al., 2015, through ``pygamma-agreement``) and
Krippendorff's unitizing α (uα, Krippendorff 2004), which credit two workers who found the
same error and drew different boundaries (docs/METRICS.md, "Unitized agreement").

A pure function of the counted work (the same spans, texts and annotated documents as
:func:`app.quality.agreement.agreement_report`, sentence-scope spans widened the same way, a
paired span counted by its own, later, range), so a queued job can call it
(:mod:`app.quality.figures`).

* **Continuum**: a document's segments laid end to end in code points; a unit is a worker's
  span there. A worker's overlapping spans of one category are merged for uα (it needs each
  coder's units disjoint); γ aligns them as they are.
* **Study figure** (per category, per group, all categories): one continuum with the
  documents laid end to end and the annotators as **slots** (a document's workers sorted by
  id: slot 1 is the first). Both measures assume every annotator covers the whole continuum,
  so only documents with at least ``m`` workers enter, ``m`` the most common number of
  workers of the documents with two or more (ties: the larger); a document with more
  enters with its first ``m``. ``documents`` and ``left_out`` say how many.
* **Per document**: the document alone, its workers as annotators; **per pair**: the
  documents both workers did, laid end to end, the two as annotators. Both over all
  categories (as :func:`~app.quality.agreement.agreement_breakdown`).
* γ: pygamma's fast-gamma (its windowed alignment, which its authors measured equal to the
  canonical one within the precision; 4x faster at 4 annotators here),
  ``CombinedCategoricalDissimilarity(alpha=1, beta=1)`` (positional + categorical, the
  Java gamma software's defaults), the statistical sampler, :data:`SAMPLES` samples at
  precision level :data:`PRECISION` (pygamma adds samples when their disorders vary more),
  numpy's generator seeded with :data:`SEED` before each figure: the same work gives the same
  γ. ``low``/``high`` is pygamma's ``approx_gamma_range``.
* uα of a category follows Krippendorff (2004) to the letter; over several categories (a
  group, all) it is 1 − ΣDo/ΣDe (the joint coefficient). ``None`` when undefined (fewer than
  two annotators, or no unit at all).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import sys
import warnings
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import numpy as np

from app.quality.agreement import _prepare
from app.quality.agreement_units import merge_ranges
from app.rules.scoring import Span, TextKey

SEED = 4577
SAMPLES = 30
PRECISION = 0.05
MAX_ANNOTATORS = 8  # γ's alignment grows with the annotators: beyond, γ is left out
MAX_UNITS = 3000  # and with the units (an every-word marker has thousands)


@dataclass(frozen=True)
class Unit:
    """One mark on a continuum: annotator, [start, end) in code points, category."""

    annotator: str
    start: int
    end: int
    category: str


def _sections(units: list[tuple[int, int]], length: int) -> list[tuple[int, int, bool]]:
    """A coder's partition of [0, length): (start, end, annotated), units merged first."""
    out, at = [], 0
    for start, end in merge_ranges(units):
        if start > at:
            out.append((at, start, False))
        out.append((start, end, True))
        at = end
    if at < length:
        out.append((at, length, False))
    return out


def _delta(u: tuple[int, int, bool], v: tuple[int, int, bool]) -> int:
    """Krippendorff's squared difference of two sections of two coders (0 unless they
    overlap)."""
    (bu, eu, au), (bv, ev, av) = u, v
    if au and av:
        return (bu - bv) ** 2 + (eu - ev) ** 2 if bu < ev and bv < eu else 0
    if au and bv <= bu and eu <= ev:  # u's unit lies inside v's gap
        return (eu - bu) ** 2
    if av and bu <= bv and ev <= eu:
        return (ev - bv) ** 2
    return 0


def alpha_disorders(coders: Sequence[list[tuple[int, int]]], length: int) -> tuple[float, float]:
    """(observed, expected) disagreement of uα for one category: ``coders`` holds each
    coder's units on the continuum [0, length)."""
    m = len(coders)
    parts = [_sections(units, length) for units in coders]
    observed = 0
    for i in range(m):
        for j in range(i + 1, m):  # overlapping sections of i and j, two pointers
            a, b, x, y = parts[i], parts[j], 0, 0
            while x < len(a) and y < len(b):
                observed += _delta(a[x], b[y])
                if a[x][1] <= b[y][1]:
                    x += 1
                else:
                    y += 1
    observed *= 2  # ordered pairs of coders
    lengths = [e - s for part in parts for s, e, marked in part if marked]
    gaps = sorted(e - s for part in parts for s, e, marked in part if not marked)
    tail = list(accumulate(reversed(gaps)))[::-1] + [0]  # sum of gaps[k:]
    count = len(lengths)
    enumerator = 0.0
    for ln in lengths:
        k = bisect_left(gaps, ln)
        longer = len(gaps) - k
        enumerator += (count - 1) / 3 * (2 * ln**3 - 3 * ln**2 + ln)
        enumerator += ln**2 * (tail[k] - longer * (ln - 1))
    enumerator *= 2 / length
    denominator = m * length * (m * length - 1) - sum(ln * (ln - 1) for ln in lengths)
    expected = enumerator / denominator if denominator else 0.0
    return observed / (m * (m - 1) * length**2), expected


def unitizing_alpha(units: Sequence[Unit], annotators: Sequence[str], length: int) -> float | None:
    """uα over the categories of ``units`` (one category: its uα; several: 1 − ΣDo/ΣDe)."""
    if len(annotators) < 2 or not units or length <= 0:
        return None
    observed = expected = 0.0
    for category in sorted({u.category for u in units}):
        coders = [
            [(u.start, u.end) for u in units if u.annotator == a and u.category == category]
            for a in annotators
        ]
        do, de = alpha_disorders(coders, length)
        observed, expected = observed + do, expected + de
    if expected == 0:
        return None
    return 1 - observed / expected


@contextmanager
def _solver_output_dropped() -> Iterator[None]:
    """The alignment's solver (GLPK, through cvxpy) prints its log to the process's standard
    output from C: it would corrupt ``marginalia report --json``. File descriptor 1 points
    at /dev/null meanwhile (Python's own ``sys.stdout`` is flushed first)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def pygamma_classes():
    """pygamma-agreement's two classes, its numba functions compiled once per installation:
    pygamma compiles them eagerly at import without numba's on-disk cache (20-25 s of CPU in
    each new process: every ``marginalia report`` and worker start), so the import runs with
    ``cache=True`` as numba's default (later imports ~0.5 s; the same machine code)."""
    if "pygamma_agreement" not in sys.modules:
        import numba

        eager = numba.njit
        numba.njit = functools.partial(eager, cache=True)
        try:
            import pygamma_agreement  # noqa: F401
        finally:
            numba.njit = eager
    from pygamma_agreement import CombinedCategoricalDissimilarity, Continuum

    return CombinedCategoricalDissimilarity, Continuum


@functools.cache
def dissimilarity() -> Any:
    """``CombinedCategoricalDissimilarity(alpha=1, beta=1)``, one per process: pygamma compiles
    its numba functions in the constructor (~0.2-0.8 s each time), and it holds no state of a
    continuum (categories come with the continuum's arrays)."""
    CombinedCategoricalDissimilarity, _ = pygamma_classes()
    return CombinedCategoricalDissimilarity(alpha=1, beta=1)


def continuum_of(units: Sequence[Unit], annotators: Sequence[str]) -> Any:
    """pygamma's ``Continuum`` of ``units``, added in one sorted order: γ and a document's
    part of the corpus figure must read the same continuum, or their alignments (and so their
    disorders) could differ by the order units were added in."""
    from pyannote.core import Segment as Interval

    _, Continuum = pygamma_classes()
    continuum = Continuum()
    for annotator in annotators:
        continuum.add_annotator(annotator)
    for u in sorted(units, key=lambda u: (u.annotator, u.start, u.end, u.category)):
        continuum.add(u.annotator, Interval(u.start, u.end), u.category)
    return continuum


def gamma(units: Sequence[Unit], annotators: Sequence[str]) -> dict[str, Any] | None:
    """γ of ``units`` through pygamma-agreement (seeded; see the module docstring):
    ``{"gamma", "low", "high", "samples"}``, or None when undefined."""
    if len(annotators) < 2 or not units:
        return None
    continuum = continuum_of(units, annotators)
    np.random.seed(SEED)
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # "CBC solver not installed. Using GLPK." per sample
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), _solver_output_dropped():
            warnings.simplefilter("ignore", RuntimeWarning)  # a sample without disorder
            found = continuum.compute_gamma(
                dissimilarity(), n_samples=SAMPLES, precision_level=PRECISION, fast=True
            )
            value, (low, high) = float(found.gamma), found.approx_gamma_range
    finally:
        logging.disable(previous)
    if not math.isfinite(value):
        return None
    return {
        "gamma": value,
        "low": float(low) if math.isfinite(low) else None,
        "high": float(high) if math.isfinite(high) else None,
        "samples": int(found.n_samples),
    }


def document_units(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    scopes: Mapping[str, str] | None = None,
) -> tuple[dict[str, list[Unit]], dict[str, int], dict[str, list[str]]]:
    """Per document: its units (worker as annotator), its length, its workers (sorted)."""
    kept, _ = _prepare(spans, texts, annotated, scopes)
    offsets: dict[TextKey, int] = {}
    lengths: dict[str, int] = defaultdict(int)
    for key in sorted(texts):
        offsets[key] = lengths[key[0]]
        lengths[key[0]] += len(texts[key])
    units: dict[str, list[Unit]] = defaultdict(list)
    for s in kept:
        if s.located and s.key in offsets and s.end > s.start:  # type: ignore[operator]
            at = offsets[s.key]
            units[s.document].append(Unit(s.source, at + s.start, at + s.end, s.category))  # type: ignore[operator]
    workers: dict[str, list[str]] = defaultdict(list)
    for worker, docs in annotated.items():
        for doc in set(docs):
            if doc in lengths:
                workers[doc].append(worker)
    return dict(units), dict(lengths), {doc: sorted(names) for doc, names in workers.items()}


def _laid(
    docs: Sequence[str],
    units: Mapping[str, list[Unit]],
    lengths: Mapping[str, int],
    rename: Mapping[str, Mapping[str, str]],
) -> tuple[list[Unit], int]:
    """Documents end to end; each one's annotators renamed (slots); others' units dropped."""
    out, at = [], 0
    for doc in docs:
        names = rename[doc]
        for u in units.get(doc, []):
            if u.annotator in names:
                out.append(Unit(names[u.annotator], at + u.start, at + u.end, u.category))
        at += lengths[doc]
    return out, at
