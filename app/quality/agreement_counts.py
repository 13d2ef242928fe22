"""Agreement figures from a histogram of units instead of the units themselves.

Krippendorff's alpha (nominal, two values), two-agree and the marked units depend on each
pairable unit only through its pair (``m`` coders, ``k`` of them marked it). A
:data:`Histogram` counts units per pair, so a study's agreement is summed document batch by
document batch in memory that does not grow with the study
(:class:`app.quality.agreement.Agreement`).

:func:`alpha_from_counts` is the coincidence formula that ``krippendorff.alpha`` evaluates,
written for a histogram: with ``n0 = Σ c·(m−k)``, ``n1 = Σ c·k`` (c units of pair (m, k)),
``n = n0 + n1`` and the off-diagonal coincidences ``o01 = Σ c·k·(m−k) / (m−1)``,

    alpha = 1 − (n − 1) · o01 / (n0 · n1),

``None`` without pairable units or without variation (n0 or n1 is 0), as
the ``krippendorff`` package returns (tests/agreement_reference.py). A property
test (tests/test_agreement_stream.py) holds the two equal.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

Histogram = Counter[tuple[int, int]]
"""(coders, marked) -> how many pairable units (coders >= 2) have that pair."""


def add_units(hist: Histogram, coders: np.ndarray, marked: np.ndarray) -> None:
    """Count the pairable units of per-unit arrays into ``hist``."""
    keep = coders >= 2
    if not keep.any():
        return
    m, k = coders[keep].astype(np.int64), marked[keep].astype(np.int64)
    width = int(m.max()) + 1
    counts = np.bincount(m * width + k)
    for index in np.flatnonzero(counts).tolist():
        hist[divmod(index, width)] += int(counts[index])


def alpha_from_counts(hist: Mapping[tuple[int, int], int]) -> float | None:
    """Nominal Krippendorff's alpha of binary units given as a histogram (module docstring)."""
    n0 = sum(c * (m - k) for (m, k), c in hist.items())
    n1 = sum(c * k for (m, k), c in hist.items())
    if n0 == 0 or n1 == 0:
        return None
    o01 = math.fsum(c * k * (m - k) / (m - 1) for (m, k), c in hist.items())
    return 1.0 - (n0 + n1 - 1) * o01 / (n0 * n1)


def stat_of(hist: Mapping[tuple[int, int], int]) -> dict[str, Any]:
    """``{"alpha", "two_agree", "marked_units"}`` of the units in ``hist``: two-agree is the
    share of marked units (k >= 1) that two workers or more marked (None when none is)."""
    marked = sum(c for (_, k), c in hist.items() if k >= 1)
    twice = sum(c for (_, k), c in hist.items() if k >= 2)
    return {
        "alpha": alpha_from_counts(hist),
        "two_agree": twice / marked if marked else None,
        "marked_units": marked,
    }
