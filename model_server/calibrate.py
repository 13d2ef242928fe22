"""Per-category "confident" thresholds: where the detector's dev precision is at least 0.9.

For each head (label) the candidates of a dev sentence are reduced to the sentence's best
score; at threshold t the sentence is *flagged* when that score is ≥ t, and a flagged
sentence is *correct* when a gold error of the label's category (≥ ``min_votes`` votes)
starts in it (SNaC's sentence level, as :mod:`model_server.evaluate`). The confident
threshold is the lowest t, among the sentences' scores at or above the head's own
suggestion threshold, whose precision (correct / flagged) is ≥ ``target`` with at least
``min_flagged`` flagged sentences. When no t qualifies the category gets no threshold and
a reason, never an invented one.

The thresholds are chosen on the same dev split their precision is measured on, so the
precision is an optimistic estimate (stated beside it wherever it is shown).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TARGET_PRECISION = 0.9
MIN_FLAGGED = 10
CALIBRATION_FILE = "calibration.json"


def choose_threshold(
    scores: Sequence[tuple[float, bool]],
    floor: float,
    *,
    target: float = TARGET_PRECISION,
    min_flagged: int = MIN_FLAGGED,
) -> dict[str, Any]:
    """From (best score, correct?) per sentence, the lowest qualifying threshold ≥ floor.

    Returns ``{"threshold", "dev_precision", "dev_flagged", "dev_recall"}`` or, when none
    qualifies, ``{"threshold": None, "reason", "best_precision"}``.
    """
    positives = sum(1 for _, correct in scores if correct)
    ranked = sorted((s for s in scores if s[0] >= floor), key=lambda s: -s[0])
    best: tuple[float, float, int, int] | None = None  # threshold, precision, flagged, tp
    best_precision = None
    tp = 0
    for n, (score, correct) in enumerate(ranked, start=1):
        tp += correct
        if n < len(ranked) and ranked[n][0] == score:
            continue  # ties: a threshold flags all sentences of that score at once
        precision = tp / n
        if n >= min_flagged:
            best_precision = max(best_precision or 0.0, precision)
            if precision >= target:
                best = (score, precision, n, tp)
    if best is None:
        where = (
            f"best {best_precision:.2f} with at least {min_flagged} flagged sentences"
            if best_precision is not None
            else f"fewer than {min_flagged} dev sentences flagged"
        )
        return {
            "threshold": None,
            "reason": f"dev precision never reaches {target:.2f} ({where})",
            "best_precision": None if best_precision is None else round(best_precision, 4),
        }
    threshold, precision, flagged, hits = best
    return {
        "threshold": round(threshold, 4),
        "dev_precision": round(precision, 4),
        "dev_flagged": flagged,
        "dev_recall": round(hits / positives, 4) if positives else None,
    }


def write_calibration(model_dir: str | Path, payload: dict[str, Any]) -> None:
    """Write ``calibration.json`` beside the model (``payload["version"]`` names the version)."""
    (Path(model_dir) / CALIBRATION_FILE).write_text(
        json.dumps(payload, indent=1) + "\n", encoding="utf-8"
    )


def load_calibration(model_dir: str | Path, version: str) -> dict[str, Any] | None:
    """``calibration.json`` of ``model_dir`` when it was made for ``version``, else None."""
    path = Path(model_dir) / CALIBRATION_FILE
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if data.get("version") == version else None
