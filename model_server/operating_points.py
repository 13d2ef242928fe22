"""Operating points: per category, the score thresholds a detector version is used at.

Chosen on held-out scores (out-of-fold on train for MiniLM), never on dev. Each sentence
has a score for the category (its best candidate's probability, 0 without one) and is
gold-positive or not; a threshold ``t`` predicts the sentences scoring ``>= t``.

- ``best_f1``: the threshold with the best F1 (ties: the lowest threshold).
- ``precision_90``: the lowest threshold whose precision is >= 0.9 with at least
  :data:`MIN_TRUE_POSITIVES` true positives (the recall estimate of the scores issue reads
  it); ``None`` when no threshold reaches it.
- the hint levels a study chooses from: ``precise`` (best F0.5), ``balanced`` (best F1, the
  same as ``best_f1``), ``thorough`` (best F2).

Each point is stored as ``{"threshold", "precision", "recall", "f1"}`` (figures on the data it
was chosen on). A category whose best held-out F1 is under :data:`MIN_HINT_F1` is scored and
evaluated but never suggested (InconE today: its hints would be mostly wrong).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

GRID = tuple(round(float(t), 2) for t in np.arange(0.05, 0.96, 0.01))
MIN_TRUE_POSITIVES = 20
"""Evidence a ``precision_90`` point needs: with 5 true positives out of 5 the 95% Wilson
lower bound of the precision is only 0.57; with 20 of 20 it is 0.84."""
HINT_LEVELS = {"precise": 0.5, "balanced": 1.0, "thorough": 2.0}
POINTS = ("best_f1", "precision_90", *HINT_LEVELS)
DEFAULT_HINTS = "balanced"
MIN_HINT_F1 = 0.3

Point = dict[str, float]


def counts(scores: Sequence[float], gold: Sequence[bool], threshold: float) -> tuple[int, int, int]:
    """(tp, fp, fn) of predicting ``score >= threshold``."""
    tp = fp = fn = 0
    for score, positive in zip(scores, gold, strict=True):
        predicted = score >= threshold
        tp += predicted and positive
        fp += predicted and not positive
        fn += positive and not predicted
    return tp, fp, fn


def f_beta(tp: int, fp: int, fn: int, beta: float = 1.0) -> float:
    """F-beta from counts; 0 when nothing is predicted or nothing is gold."""
    b2 = beta * beta
    denominator = (1 + b2) * tp + b2 * fn + fp
    return (1 + b2) * tp / denominator if denominator else 0.0


def point(scores: Sequence[float], gold: Sequence[bool], threshold: float) -> Point:
    """The threshold with its precision, recall and F1 on (scores, gold)."""
    tp, fp, fn = counts(scores, gold, threshold)
    return {
        "threshold": threshold,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 0.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 0.0,
        "f1": round(f_beta(tp, fp, fn), 4),
    }


def best_threshold(
    scores: Sequence[float], gold: Sequence[bool], beta: float = 1.0, grid: Iterable[float] = GRID
) -> float:
    """The grid threshold with the best F-beta (the lowest among equals)."""
    best, best_score = GRID[0], -1.0
    for t in grid:
        value = f_beta(*counts(scores, gold, t), beta)
        if value > best_score:
            best, best_score = t, value
    return best


def precision_threshold(
    scores: Sequence[float],
    gold: Sequence[bool],
    precision: float = 0.9,
    grid: Iterable[float] = GRID,
    min_true_positives: int = MIN_TRUE_POSITIVES,
) -> float | None:
    """The lowest grid threshold with at least ``precision`` (and enough true positives)."""
    for t in grid:
        tp, fp, _ = counts(scores, gold, t)
        if tp >= min_true_positives and tp / (tp + fp) >= precision:
            return t
    return None


def choose(
    scores: Sequence[float], gold: Sequence[bool], min_true_positives: int = MIN_TRUE_POSITIVES
) -> dict[str, Point | None]:
    """Every operating point of one category from held-out (scores, gold)."""
    chosen: dict[str, Point | None] = {"best_f1": point(scores, gold, best_threshold(scores, gold))}
    p90 = precision_threshold(scores, gold, min_true_positives=min_true_positives)
    chosen["precision_90"] = None if p90 is None else point(scores, gold, p90)
    for level, beta in HINT_LEVELS.items():
        chosen[level] = point(scores, gold, best_threshold(scores, gold, beta))
    return chosen


def threshold_for(
    points: dict[str, Point | None] | None, name: str, default: float | None = None
) -> float | None:
    """The threshold of operating point ``name`` (``default`` when it is not stored)."""
    found = (points or {}).get(name)
    return float(found["threshold"]) if found else default


def hintable(points: dict[str, Point | None] | None) -> bool:
    """Whether a category is good enough to suggest: its best held-out F1 reaches
    :data:`MIN_HINT_F1` (True when no points are stored: older heads were always used)."""
    best = (points or {}).get("best_f1")
    return best is None or float(best["f1"]) >= MIN_HINT_F1


CONFIDENT_POINT = "precision_90"


def confident_calibration(
    points: dict[str, dict[str, Point | None]],
    labels: dict[str, str],
    version: str,
    dev: dict[str, dict[str, Point | None]] | None = None,
) -> dict:
    """What a detector version stores as ``detector_versions.calibration``: per category its
    ``precision_90`` operating point (chosen out-of-fold on train) as the **confident
    threshold**, with the train figures it was chosen on and the dev figures it was reported
    with (``dev``: category -> point -> figures, absent when not measured). ``labels`` maps
    category -> detector label. A category without the point gets ``threshold: None`` and why.
    """
    categories: dict[str, dict] = {}
    for category, label in labels.items():
        chosen = (points.get(category) or {}).get(CONFIDENT_POINT)
        if not hintable(points.get(category)):
            categories[category] = {
                "label": label,
                "threshold": None,
                "reason": f"never suggested (out-of-fold train F1 under {MIN_HINT_F1})",
            }
        elif chosen is None:
            categories[category] = {
                "label": label,
                "threshold": None,
                "reason": "out-of-fold train precision never reaches 0.90 "
                f"with at least {MIN_TRUE_POSITIVES} correct sentences",
            }
        else:
            on_dev = ((dev or {}).get(category) or {}).get(CONFIDENT_POINT) or {}
            categories[category] = {
                "label": label,
                "threshold": chosen["threshold"],
                "train_precision": chosen["precision"],
                "train_recall": chosen["recall"],
                "dev_precision": on_dev.get("precision"),
                "dev_recall": on_dev.get("recall"),
            }
    return {
        "version": version,
        "point": CONFIDENT_POINT,
        "chosen_on": "out-of-fold train",
        "categories": categories,
    }
