"""γ over several documents (the study's figures, each pair of workers'), from parts that each
document keeps (docs/METRICS.md, "Unitized agreement"), so a new submission recomputes one
document's parts and the sums, never the study's alignment.

γ = 1 − observed disorder / expected disorder (Mathet et al., 2015), both per unit:

* **observed**: each document aligned on its own (pygamma's fast alignment, as γ per document:
  units of two documents are never the same error), the disorders of its unitary alignments
  summed (:func:`alignment_part`), then Σ over the documents / (Σ units / annotators): the
  disorder of the documents laid end to end when no alignment crosses a document's end.
* **expected**: the mean disorder of random continua drawn by pygamma's statistical sampler
  from the documents' pooled statistics (:class:`Pool`: units per annotator in a document,
  the gaps before and between an annotator's units, the units' lengths, the categories), each
  sample the size of an average document: chance is that of a document of the study, and its
  cost does not grow with the study. :data:`unitizing.SAMPLES` samples, more until the mean is
  within :data:`unitizing.PRECISION` at 95 % (pygamma's rule), numpy seeded with
  :data:`unitizing.SEED` before each figure: the same work gives the same γ.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.quality.unitizing import (
    MAX_ANNOTATORS,
    MAX_UNITS,
    PRECISION,
    SAMPLES,
    SEED,
    Unit,
    _solver_output_dropped,
    dissimilarity,
    pygamma_classes,
)

MAX_SAMPLES = 2_000  # pygamma's precision rule, bounded (a figure of a few units varies most)
EXACT_TUPLES = 20_000  # a sample with at most this many candidate alignments is aligned exactly


@contextmanager
def _quiet() -> Iterator[None]:
    """pygamma's log and numpy's warnings off, the solver's output dropped (as γ per document)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), _solver_output_dropped():
            warnings.simplefilter("ignore", RuntimeWarning)
            yield
    finally:
        logging.disable(previous)


def _aligned(continuum: Any, dissimilarity: Any) -> Any:
    """pygamma's fast alignment (its window measured first), as ``compute_gamma(fast=True)``."""
    from pygamma_agreement.continuum import _compute_fast_alignment_job

    continuum.measure_best_window_size(dissimilarity)
    return _compute_fast_alignment_job(dissimilarity, continuum)


def _sample_aligned(continuum: Any, dissimilarity: Any) -> Any:
    """A random continuum's alignment: exact when it has at most :data:`EXACT_TUPLES`
    candidate unitary alignments (a document-sized sample mostly has), else fast."""
    sizes = [len(units) + 1 for units in continuum._annotations.values()]  # noqa: SLF001
    if math.prod(sizes) <= EXACT_TUPLES:
        return continuum.get_best_alignment(dissimilarity)
    return _aligned(continuum, dissimilarity)


def alignment_part(units: Sequence[Unit], annotators: Sequence[str]) -> list[float] | None:
    """One document's part of a figure's observed disorder: ``[Σ disorders, units]`` of its
    best alignment (``[0, 0]`` without a unit); None when it is not computed (more than
    :data:`MAX_ANNOTATORS` annotators or :data:`MAX_UNITS` units)."""
    if not units:
        return [0.0, 0]
    if len(annotators) > MAX_ANNOTATORS or len(units) > MAX_UNITS:
        return None
    from pyannote.core import Segment as Interval

    _, Continuum = pygamma_classes()
    continuum = Continuum()
    for annotator in annotators:
        continuum.add_annotator(annotator)
    for u in sorted(units, key=lambda u: (u.annotator, u.start, u.end, u.category)):
        continuum.add(u.annotator, Interval(u.start, u.end), u.category)
    with _quiet():
        alignment = _aligned(continuum, dissimilarity())
        total = float(alignment.disorder) * continuum.avg_num_annotations_per_annotator
    return [total, len(units)]


@dataclass
class Pool:
    """The statistics pygamma's statistical sampler draws from, summed over documents."""

    annotators: int
    counts: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # n, Σx, Σx²
    gaps: list[float] = field(default_factory=lambda: [1.0, 0.0, 0.0])  # pygamma's first 0
    lengths: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    categories: Counter[str] = field(default_factory=Counter)

    @staticmethod
    def _add(moments: list[float], value: float) -> None:
        moments[0] += 1
        moments[1] += value
        moments[2] += value * value

    def add(self, units: Sequence[Unit], annotators: Sequence[str]) -> None:
        """One document's units of the figure (its annotators, some maybe without a unit)."""
        for annotator in annotators:
            mine = sorted((u for u in units if u.annotator == annotator), key=_order)
            self._add(self.counts, len(mine))
            if mine and mine[0].start > 0:
                self._add(self.gaps, mine[0].start)
            for before, after in zip(mine, mine[1:], strict=False):
                self._add(self.gaps, after.start - before.end)
            for u in mine:
                self._add(self.lengths, u.end - u.start)
                self.categories[u.category] += 1

    @staticmethod
    def _mean_std(moments: list[float]) -> tuple[float, float]:
        n, total, squares = moments
        mean = total / n
        return mean, math.sqrt(max(squares / n - mean * mean, 0.0))

    def parameters(self) -> dict[str, Any] | None:
        """The sampler's parameters (None without a unit)."""
        if not self.lengths[0]:
            return None
        categories = sorted(self.categories)
        total = sum(self.categories.values())
        return {
            "annotators": self.annotators,
            "units": self._mean_std(self.counts),
            "gap": self._mean_std(self.gaps),
            "length": self._mean_std(self.lengths),
            "categories": categories,
            "weights": [self.categories[c] / total for c in categories],
        }


def _order(unit: Unit) -> tuple[int, int, str]:
    return (unit.start, unit.end, unit.category)


def expected(parameters: dict[str, Any]) -> dict[str, Any]:
    """The expected disorder per unit of random continua drawn with ``parameters``
    (:meth:`Pool.parameters`): ``{"disorder", "samples"}``."""
    from pygamma_agreement.sampler import StatisticalContinuumSampler

    slots = [f"slot {i + 1}" for i in range(parameters["annotators"])]
    sampler = StatisticalContinuumSampler()
    sampler.init_sampling_custom(
        slots,
        *parameters["units"],
        *parameters["gap"],
        *parameters["length"],
        parameters["categories"],
        parameters["weights"],
    )
    measure = dissimilarity()
    np.random.seed(SEED)
    disorders: list[float] = []
    wanted = SAMPLES
    with _quiet():
        while len(disorders) < wanted:
            sample = sampler.sample_from_continuum
            disorders.append(float(_sample_aligned(sample, measure).disorder))
            if len(disorders) == wanted == SAMPLES:  # pygamma's precision rule, once
                variation = float(np.std(disorders) / np.mean(disorders))
                needed = int(np.ceil((variation * 1.96 / PRECISION) ** 2))
                wanted = min(max(wanted, needed), MAX_SAMPLES)
    return {"disorder": float(np.mean(disorders)), "samples": len(disorders)}


def gamma(observed: Sequence[float], annotators: int, chance: dict[str, Any]) -> dict[str, Any]:
    """γ from the summed ``observed`` part ``[Σ disorders, units]`` and the ``chance`` of
    :func:`expected`: ``{"gamma", "low", "high", "samples"}`` (pygamma's range at its
    precision); 1 when nothing is in disorder, as pygamma says."""
    disorder = observed[0] / (observed[1] / annotators)
    chance_disorder = chance["disorder"]
    value = 1.0 if disorder == 0 else 1 - disorder / chance_disorder
    low = 1 - disorder / (chance_disorder * (1 - PRECISION))
    high = 1 - disorder / (chance_disorder * (1 + PRECISION))
    return {"gamma": value, "low": low, "high": high, "samples": chance["samples"]}
