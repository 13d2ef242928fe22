"""The statistics of the comparison of systems (docs/METRICS.md, "Comparing systems").

Every figure of a system is a **ratio of sums over its documents**: Σ numerator / Σ
denominator × scale (errors per 100 words: Σ errors / Σ words × 100). Documents are the unit
that is resampled, since a document's errors are not independent of each other.

* **Interval**: the 95% percentile bootstrap of :func:`scipy.stats.bootstrap` over the
  system's documents (``method="percentile"``, ``n_resamples`` resamples, a fresh
  ``numpy.random.default_rng(seed)`` for every interval, so each one is reproducible on its
  own). Percentile rather than BCa: with the handful of documents a system often has, BCa's
  jackknife acceleration is unstable and undefined (NaN) when every document has the same
  value, e.g. no error of a category at all.
* **Difference** of two systems a − b: the same bootstrap, each system's documents resampled
  independently (``paired=False``).
* **p**: a two-sided permutation test of "a and b have the same figure"
  (:func:`scipy.stats.permutation_test`, ``permutation_type="independent"``): the documents of
  both systems are pooled and dealt out again to groups of the same sizes; p is SciPy's
  two-sided p, min(1, 2 × the smaller of the two one-sided shares: deals whose difference
  is at least, or at most, the one observed). That is the share of deals whose |difference|
  is at least the observed one only when the groups have the same size. Every deal when
  there are no more than ``n_resamples`` (exact), else ``n_resamples`` random ones, each
  one-sided share then (count + 1) / (n_resamples + 1). A permutation test, not a paired one, because two systems' documents
  are different texts: nothing in a study links "the same input summarised by each system",
  which a paired test needs. It assumes documents are exchangeable between the systems under
  the null hypothesis (the same distribution of the figure).
* **Holm**: across the pairs of one figure, p-values sorted ascending, p_(i) × (m − i + 1)
  made monotone and capped at 1 (:func:`holm`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 9_999
SEED = 0


def _value(number: float) -> float | None:
    return None if number is None or not np.isfinite(number) else float(number)


def _ratio(numerator: np.ndarray, denominator: np.ndarray, scale: float):
    """A vectorised statistic of index samples: scale × Σ numerator / Σ denominator."""

    def statistic(index: np.ndarray, axis: int = -1) -> np.ndarray:
        index = np.asarray(index, dtype=np.intp)
        with np.errstate(divide="ignore", invalid="ignore"):
            return scale * numerator[index].sum(axis=axis) / denominator[index].sum(axis=axis)

    return statistic


def ratio(numerator: Sequence[float], denominator: Sequence[float], scale: float = 1.0):
    """scale × Σ numerator / Σ denominator (None when Σ denominator is 0)."""
    total = float(np.sum(denominator))
    return scale * float(np.sum(numerator)) / total if total else None


def interval(
    numerator: Sequence[float],
    denominator: Sequence[float],
    scale: float = 1.0,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, float | None]:
    """``{"value", "low", "high"}`` of one system's figure; low and high None with fewer
    than two documents."""
    num, den = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    out: dict[str, float | None] = {"value": ratio(num, den, scale), "low": None, "high": None}
    if len(num) < 2 or out["value"] is None:
        return out
    out["low"], out["high"] = _percentile_interval(
        (np.arange(len(num)),), _ratio(num, den, scale), resamples, seed
    )
    return out


def _percentile_interval(
    samples: tuple[np.ndarray, ...], statistic: Any, resamples: int, seed: int
) -> tuple[float | None, float | None]:
    """The 95% percentile bootstrap interval of ``statistic`` over index ``samples``, each
    resampled on its own, with a fresh generator seeded ``seed``."""
    result = stats.bootstrap(
        samples,
        statistic,
        n_resamples=resamples,
        confidence_level=CONFIDENCE,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(seed),
    )
    return _value(result.confidence_interval.low), _value(result.confidence_interval.high)


def difference(
    a: tuple[Sequence[float], Sequence[float]],
    b: tuple[Sequence[float], Sequence[float]],
    scale: float = 1.0,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, float | None]:
    """``{"difference", "low", "high", "p"}`` of a − b, each given as (numerators,
    denominators) per document; low, high and p are None unless each side has two documents
    or more."""
    num = np.concatenate([np.asarray(a[0], dtype=float), np.asarray(b[0], dtype=float)])
    den = np.concatenate([np.asarray(a[1], dtype=float), np.asarray(b[1], dtype=float)])
    n_a, n_b = len(a[0]), len(b[0])
    rate = _ratio(num, den, scale)
    index_a, index_b = np.arange(n_a), np.arange(n_a, n_a + n_b)

    def statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return rate(x, axis) - rate(y, axis)

    value_a, value_b = ratio(a[0], a[1], scale), ratio(b[0], b[1], scale)
    out: dict[str, float | None] = {"difference": None, "low": None, "high": None, "p": None}
    if value_a is None or value_b is None:
        return out
    out["difference"] = value_a - value_b
    if n_a < 2 or n_b < 2:  # scipy resamples and permutes samples of two or more
        return out
    out["low"], out["high"] = _percentile_interval((index_a, index_b), statistic, resamples, seed)
    tested = stats.permutation_test(
        (index_a, index_b),
        statistic,
        permutation_type="independent",
        n_resamples=resamples,
        alternative="two-sided",
        vectorized=True,
        random_state=np.random.default_rng(seed),
    )
    out["p"] = _value(tested.pvalue)
    return out


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of ``p_values`` (None stays None and does not count)."""
    known = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(known)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(known):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def add_holm(pairs: list[dict[str, Any]]) -> None:
    """Set ``p_holm`` on each entry of ``pairs`` (dicts with ``p``): one family."""
    for entry, adjusted in zip(pairs, holm([e["p"] for e in pairs]), strict=True):
        entry["p_holm"] = adjusted
