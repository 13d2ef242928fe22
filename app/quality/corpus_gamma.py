"""γ over several documents (the study's figures, each pair of workers'), from parts that each
document keeps (docs/METRICS.md, "Unitized agreement"), so a new submission recomputes one
document's parts and the sums, never the study's alignment.

γ = 1 − observed disorder / expected disorder (Mathet et al., 2015), both per unit:

* **observed**: each document aligned on its own (pygamma's fast alignment, as γ per document:
  units of two documents are never the same error), the disorders of its unitary alignments
  summed (:func:`alignment_part`), then Σ over the documents / (Σ units / annotators): the
  disorder of the documents laid end to end when no alignment crosses a document's end.
* **expected**: the mean disorder of random continua drawn by pygamma's statistical sampler
  with the statistics of the documents laid end to end (:func:`laid_parameters`: what
  ``init_sampling`` reads of that continuum: units per annotator, the gaps before and between
  an annotator's units, the units' lengths, the categories), as pygamma's γ of that continuum
  draws them; a sample holds at most :data:`SAMPLE_UNITS` units per annotator on average
  (:func:`_bounded`: the same density), so its cost does not grow with the study.
  :data:`unitizing.SAMPLES` samples, more until the mean is within :data:`unitizing.PRECISION`
  at 95 % (pygamma's rule), each aligned exactly when small (else pygamma's fast alignment),
  numpy seeded with :data:`unitizing.SEED` before each figure: the same work gives the same
  γ.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
    continuum_of,
    dissimilarity,
)

MAX_SAMPLES = 2_000  # pygamma's precision rule, bounded (a figure of a few units varies most)
SAMPLE_UNITS = 12  # at most this many units per annotator in a random continuum, on average
EMPTY = 1.0  # Δ∅: a unit aligned with nothing (pygamma's default)
DIGITS = 3  # the sampler's statistics, to this many significant digits
EXACT_TUPLES = 20_000  # a sample with at most this many candidate alignments is aligned exactly
# a study figure's chance disorder is kept while each statistic it was drawn from moved by at
# most this share of its value (a fifth of the sampling's own precision, unitizing.PRECISION)
DRIFT = PRECISION / 5


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


def _sample_disorder(continuum: Any, dissimilarity: Any) -> float:
    """A random continuum's disorder per unit: two annotators' by :func:`two_alignment`, else
    exact when it has at most :data:`EXACT_TUPLES` candidate unitary alignments (a bounded
    sample mostly has), else pygamma's fast alignment."""
    annotations = continuum._annotations  # noqa: SLF001 - pygamma's units by annotator
    if len(annotations) == 2:
        first, second = (
            [(u.segment.start, u.segment.end, u.annotation) for u in units]
            for units in annotations.values()
        )
        found = len(first) + len(second)
        return two_alignment(first, second) / (found / 2) if found else 0.0
    sizes = [len(units) + 1 for units in annotations.values()]
    if math.prod(sizes) <= EXACT_TUPLES:
        return float(continuum.get_best_alignment(dissimilarity).disorder)
    return float(_aligned(continuum, dissimilarity).disorder)


def two_alignment(
    first: Sequence[tuple[float, float, str]], second: Sequence[tuple[float, float, str]]
) -> float:
    """Σ of the unitary alignments' disorders of the best alignment of two annotators' units
    (each ``(start, end, category)``): with two annotators a unitary alignment is a pair of
    units, costing their dissimilarity (pygamma's combined one, α = β = 1), or a unit alone,
    costing 1 (Δ∅), so the best alignment is a minimum-cost assignment, solved exactly
    (SciPy's ``linear_sum_assignment``) where pygamma solves an integer program per window:
    the same disorder (tests/test_document_figures.py), in microseconds."""
    from scipy.optimize import linear_sum_assignment

    n, m = len(first), len(second)
    if n + m == 0:
        return 0.0
    far = 1e6  # never chosen: a unit cannot stand alone twice
    cost = np.zeros((n + m, m + n))
    for i, (start, end, category) in enumerate(first):
        for j, (other_start, other_end, other_category) in enumerate(second):
            distance = (abs(start - other_start) + abs(end - other_end)) / (
                end - start + other_end - other_start
            )
            cost[i, j] = distance * distance + (category != other_category)
    cost[:n, m:] = far
    cost[n:, :m] = far
    cost[np.arange(n), m + np.arange(n)] = EMPTY
    cost[n + np.arange(m), np.arange(m)] = EMPTY
    rows, columns = linear_sum_assignment(cost)
    return float(cost[rows, columns].sum())


def alignment_part(units: Sequence[Unit], annotators: Sequence[str]) -> list[float] | None:
    """One document's part of a figure's observed disorder: ``[Σ disorders, units]`` of its
    best alignment (``[0, 0]`` without a unit); None when it is not computed (more than
    :data:`MAX_ANNOTATORS` annotators or :data:`MAX_UNITS` units)."""
    if not units:
        return [0.0, 0]
    if len(annotators) > MAX_ANNOTATORS or len(units) > MAX_UNITS:
        return None
    if len(annotators) == 2:  # a pair of workers: exactly, as an assignment
        a, b = (
            [(u.start, u.end, u.category) for u in units if u.annotator == name]
            for name in annotators
        )
        return [two_alignment(a, b), len(units)]
    continuum = continuum_of(units, annotators)
    with _quiet():
        alignment = _aligned(continuum, dissimilarity())
        total = float(alignment.disorder) * continuum.avg_num_annotations_per_annotator
    return [total, len(units)]


def laid_parameters(
    documents: Sequence[tuple[Sequence[Unit], int]], annotators: Sequence[str]
) -> dict[str, Any] | None:
    """What pygamma's statistical sampler reads of the documents laid end to end in the order
    given (each ``(units, length)``; ``StatisticalContinuumSampler.init_sampling`` of that
    continuum, to :data:`DIGITS` significant digits): the mean and deviation of each
    annotator's number of units, of the gaps before and between an annotator's units (and one
    0), of the units' lengths, and the categories' shares. None without a unit."""
    laid: dict[str, list[tuple[int, int, str]]] = {name: [] for name in annotators}
    at = 0
    for units, length in documents:
        for u in units:
            laid[u.annotator].append((u.start + at, u.end + at, u.category))
        at += length
    gaps, lengths, categories = [0], [], Counter()
    for name in sorted(annotators):  # pygamma's order: its annotators and units sorted
        mine = sorted(laid[name])
        gaps += [after[0] - before[1] for before, after in zip(mine, mine[1:], strict=False)]
        lengths += [end - start for start, end, _ in mine]
        categories.update(category for _, _, category in mine)
    for name in sorted(annotators):
        mine = sorted(laid[name])
        if mine and mine[0][0] > 0:
            gaps.append(mine[0][0])
    if not lengths:
        return None
    counts = [len(laid[name]) for name in annotators]
    names = sorted(categories)
    shares = [_rounded(categories[c] / len(lengths)) for c in names]
    return {
        "annotators": len(annotators),
        "units": [_rounded(np.mean(counts)), _rounded(np.std(counts))],
        "gap": [_rounded(np.mean(gaps)), _rounded(np.std(gaps))],
        "length": [_rounded(np.mean(lengths)), _rounded(np.std(lengths))],
        "categories": names,
        "weights": [share / sum(shares) for share in shares],  # rounded, summing to 1
    }


def _rounded(value: float) -> float:
    """``value`` to :data:`DIGITS` significant digits: the chance drawn from statistics so
    close is the same (the sampling's own precision is 5 %), so a submission in a big study
    mostly finds its chance disorders already drawn."""
    return float(f"{float(value):.{DIGITS}g}")


def still_drawn(drawn: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether the chance disorder drawn from the statistics ``drawn`` stands for ``now``
    (both :func:`laid_parameters`): the same annotators and categories; the mean and the
    deviation of the units per annotator, of the gaps and of the lengths each within
    :data:`DRIFT` of that statistic's mean in ``drawn`` (a deviation is measured on its
    quantity's scale: the deviation of three annotators' nearly equal counts is near 0 and
    swings by half with one unit while the draws hardly change); the categories' shares
    within :data:`DRIFT` in total variation (½ Σ |now − drawn|).

    The chance is known to :data:`unitizing.PRECISION` at 95 % only, so redrawing it for a
    smaller move would change γ by sampling noise alone; the comparison is with the
    statistics it was drawn from, never the last ones, so drift cannot add up past the bound
    unnoticed."""
    if (drawn["annotators"], drawn["categories"]) != (now["annotators"], now["categories"]):
        return False
    for name in ("units", "gap", "length"):
        scale = DRIFT * abs(drawn[name][0])
        if any(abs(new - old) > scale for old, new in zip(drawn[name], now[name], strict=True)):
            return False
    moved = sum(abs(new - old) for old, new in zip(drawn["weights"], now["weights"], strict=True))
    return moved / 2 <= DRIFT


def _bounded(parameters: dict[str, Any]) -> list[float]:
    """Each sample's number of units per annotator: the documents' own when at most
    :data:`SAMPLE_UNITS` on average, else that many (the deviation in proportion), the gaps
    and lengths unchanged: the same density of units, so the same chance disorder per unit,
    at a cost that does not grow with the study."""
    mean, deviation = parameters["units"]
    if mean <= SAMPLE_UNITS:
        return [mean, deviation]
    return [SAMPLE_UNITS, deviation * SAMPLE_UNITS / mean]


def expected(parameters: dict[str, Any]) -> dict[str, Any]:
    """The expected disorder per unit of random continua drawn with ``parameters``
    (:func:`laid_parameters`, each sample :func:`_bounded`): ``{"disorder", "samples"}``."""
    from pygamma_agreement.sampler import StatisticalContinuumSampler

    slots = [f"slot {i + 1}" for i in range(parameters["annotators"])]
    sampler = StatisticalContinuumSampler()
    sampler.init_sampling_custom(
        slots,
        *_bounded(parameters),
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
            disorders.append(_sample_disorder(sample, measure))
            if len(disorders) == wanted == SAMPLES:  # pygamma's precision rule, once
                mean = float(np.mean(disorders))
                variation = float(np.std(disorders)) / mean if mean > 0 else 0.0
                needed = int(np.ceil((variation * 1.96 / PRECISION) ** 2))
                wanted = min(max(wanted, needed), MAX_SAMPLES)
    return {"disorder": float(np.mean(disorders)), "samples": len(disorders)}


def gamma(
    observed: Sequence[float], annotators: int, chance: dict[str, Any]
) -> dict[str, Any] | None:
    """γ from the summed ``observed`` part ``[Σ disorders, units]`` and the ``chance`` of
    :func:`expected`: ``{"gamma", "low", "high", "samples"}`` (pygamma's range at its
    precision); 1 when nothing is in disorder, as pygamma says; None when chance itself is
    never in disorder (undefined)."""
    disorder = observed[0] / (observed[1] / annotators)
    chance_disorder = chance["disorder"]
    if disorder == 0:
        return {"gamma": 1.0, "low": 1.0, "high": 1.0, "samples": chance["samples"]}
    if not chance_disorder > 0:
        return None
    value = 1 - disorder / chance_disorder
    low = 1 - disorder / (chance_disorder * (1 - PRECISION))
    high = 1 - disorder / (chance_disorder * (1 + PRECISION))
    return {"gamma": value, "low": low, "high": high, "samples": chance["samples"]}
