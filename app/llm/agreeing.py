"""An annotator's agreement with the humans (the calibration view; docs/METRICS.md, "LLM
annotators"): Krippendorff's α pooled over its pairs with each human, with a bootstrap
interval over documents, and γ with each human.

* **Pairwise pooled α** of annotator A with the humans, for a category (or ``all``): the
  reliability data holds, for every document A did and every *other* human h who did it,
  the document's token units coded by A and h (a unit is 1 for a coder whose span of the
  category covers it, exactly as app/quality/agreement.py's token level: sentence-scope
  spans widened, overlapping spans once). Nominal α over binary values, which with n
  pairable values, K of them 1, and the disagreeing units counted per pair, is
  1 − (n − 1)·D / (K·(n − K)), D = Σ over units of k·(m − k)/(m − 1): sums over
  documents, so a bootstrap resample of documents is a resample of those sums
  (``tests/test_llm_calibration.py`` proves it equals the ``krippendorff`` package's α on
  the same units). For "the humans" the pairs are every two humans on a document.
* **γ** (app/quality/unitizing.py's: pygamma, seeded) of A with each human h over the
  documents both did, laid end to end, per category and over all; A's figure is the mean
  over its humans. No bootstrap (each γ samples alignments itself; its range is pygamma's);
  left out once ``budget`` seconds of γ have run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from app.llm import ALL
from app.quality.agreement import pairable_units
from app.quality.compare_stats import _percentile_interval
from app.quality.unitizing import Unit, document_units, gamma
from app.rules.spans import Span, TextKey


def alpha_sums(
    spans: Sequence[Span],
    texts: Mapping[TextKey, str],
    document: str,
    pair: tuple[str, str],
    categories: Sequence[str],
    scopes: Mapping[str, str],
) -> tuple[float, float, float]:
    """(D, n, K) of one document coded by ``pair`` for ``categories`` (see the module)."""
    own = {key: text for key, text in texts.items() if key[0] == document}
    coders, marked = pairable_units(
        [s for s in spans if s.source in pair],
        own,
        {worker: [document] for worker in pair},
        categories,
        scopes=scopes,
    )
    m, k = coders.astype(float), marked.astype(float)
    return float((k * (m - k) / (m - 1)).sum()), float(m.sum()), float(k.sum())


def alpha_of(sums: np.ndarray) -> float | None:
    """α from the summed (D, n, K) (None when undefined: no unit, or no variation)."""
    d, n, k = (float(v) for v in sums)
    if n < 2 or k <= 0 or k >= n:
        return None
    return 1.0 - (n - 1.0) * d / (k * (n - k))


def alpha_interval(
    per_document: Sequence[tuple[float, float, float]], resamples: int, seed: int
) -> dict[str, Any]:
    """``{"value", "low", "high", "documents"}``: α of the summed rows, and the percentile
    bootstrap over documents (compare_stats' own); low and high None under two documents."""
    rows = np.asarray(per_document, dtype=float).reshape(-1, 3)
    out: dict[str, Any] = {
        "value": alpha_of(rows.sum(axis=0)),
        "low": None,
        "high": None,
        "documents": len(rows),
    }
    if len(rows) < 2 or out["value"] is None:
        return out

    def statistic(index: np.ndarray, axis: int = -1) -> np.ndarray:
        picked = rows[np.asarray(index, dtype=np.intp)].sum(axis=-2)
        d, n, k = picked[..., 0], picked[..., 1], picked[..., 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 - (n - 1.0) * d / (k * (n - k))

    out["low"], out["high"] = _percentile_interval(
        (np.arange(len(rows)),), statistic, resamples, seed
    )
    return out


def pairwise_alpha(
    spans: Sequence[Span],
    texts: Mapping[TextKey, str],
    workers_of: Mapping[str, Sequence[str]],
    coder: str | None,
    humans: Sequence[str],
    categories: Sequence[str],
    scopes: Mapping[str, str],
    *,
    resamples: int,
    seed: int,
) -> dict[str, dict[str, Any]]:
    """{category or ``all``: interval} of ``coder``'s pooled α with the other humans (None:
    every two humans), over the documents in ``workers_of`` (document → its workers)."""
    people = set(humans)
    rows: dict[str, list[tuple[float, float, float]]] = {c: [] for c in [*categories, ALL]}
    for document, workers in sorted(workers_of.items()):
        on = [w for w in workers if w in people]
        if coder is None:
            pairs = list(combinations(sorted(on), 2))
        else:
            pairs = [(coder, h) for h in sorted(on) if h != coder] if coder in workers else []
        if not pairs:
            continue
        mine = [s for s in spans if s.document == document]
        for category in rows:
            chosen = list(categories) if category == ALL else [category]
            sums = [alpha_sums(mine, texts, document, p, chosen, scopes) for p in pairs]
            rows[category].append(tuple(np.sum(sums, axis=0)))  # type: ignore[arg-type]
    return {c: alpha_interval(found, resamples, seed) for c, found in rows.items()}


class GammaClock:
    """The γ budget of one calibration: figures after it are left out (``None``). The same
    units of the same pair are computed once (γ is symmetric, and a category that is the
    only one marked has the units of "all")."""

    def __init__(self, budget: float) -> None:
        self.deadline = time.monotonic() + budget
        self.skipped = 0
        self.known: dict[tuple[frozenset[str], tuple[Unit, ...]], dict[str, Any] | None] = {}

    def gamma(self, units: list[Unit], pair: tuple[str, str]) -> dict[str, Any] | None:
        key = (
            frozenset(pair),
            tuple(sorted(units, key=lambda u: (u.start, u.end, u.annotator, u.category))),
        )
        if key in self.known:
            return self.known[key]
        if not units:
            return None
        if time.monotonic() >= self.deadline:
            self.skipped += 1
            return None
        self.known[key] = found = gamma(units, sorted(pair))
        return found


def lay_pair(
    units: Mapping[str, list[Unit]],
    lengths: Mapping[str, int],
    documents: Sequence[str],
    pair: tuple[str, str],
    wanted: set[str],
) -> list[Unit]:
    """The pair's units of the ``wanted`` categories on ``documents`` laid end to end."""
    laid, at = [], 0
    for document in documents:
        for u in units.get(document, []):
            if u.annotator in pair and u.category in wanted:
                laid.append(Unit(u.annotator, at + u.start, at + u.end, u.category))
        at += lengths.get(document, 0)
    return laid


def pairwise_gamma(
    spans: Sequence[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Sequence[str]],
    coder: str,
    humans: Sequence[str],
    categories: Sequence[str],
    scopes: Mapping[str, str],
    clock: GammaClock,
) -> dict[str, Any]:
    """{category or ``all``: {"mean", "pairs": {human: γ figure or None}}} of ``coder``."""
    units, lengths, _ = document_units(spans, texts, annotated, scopes)
    out: dict[str, Any] = {}
    for category in [*categories, ALL]:
        wanted = set(categories) if category == ALL else {category}
        pairs: dict[str, Any] = {}
        for human in humans:
            if human == coder:
                continue
            shared = sorted(set(annotated.get(coder, ())) & set(annotated.get(human, ())))
            if shared:
                laid = lay_pair(units, lengths, shared, (coder, human), wanted)
                pairs[human] = clock.gamma(laid, (coder, human))
        values = [p["gamma"] for p in pairs.values() if p]
        out[category] = {"mean": float(np.mean(values)) if values else None, "pairs": pairs}
    return out
