"""Worker recall on the errors the detector is confident about.

A suggestion is **confident** when its detector version stored a threshold for its
category (``detector_versions.calibration``: the lowest score at which the detector's
sentence-level precision on SNaC dev is ≥ 0.9, see ``model_server/calibrate.py``) and its
score is at or above it. Since about nine in ten of them are real errors, the share a
worker catches estimates the worker's recall on real errors of that category, which a
share of *all* suggestions cannot (it is capped by the detector's precision).

Caught = paired with a worker span by the lenient one-to-one matching (same category, any
overlap; a shared sentence for sentence-scope categories). A category without a threshold
gets ``recall: None`` and a ``reason``, never a made-up figure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.quality.matching import match
from app.quality.spans import Span, TextKey

Calibrations = Mapping[str, Mapping[str, Any]]
"""detector version -> its calibration (``{}`` when it has none)."""


def _category_calibration(
    calibration: Mapping[str, Any], label: str | None
) -> Mapping[str, Any] | None:
    """The calibration entry of the detector label ``label`` (None when absent)."""
    for entry in (calibration.get("categories") or {}).values():
        if label and entry.get("label") == label:
            return entry
    return None


def confident_thresholds(
    taxonomy: Mapping[str, Any], version: str | None, calibrations: Calibrations
) -> dict[str, dict[str, Any]]:
    """Per taxonomy category: ``threshold`` and ``detector_precision`` (dev) or ``reason``."""
    out: dict[str, dict[str, Any]] = {}
    calibration = calibrations.get(version or "") or {}
    for category in taxonomy.get("categories", []):
        label = (category.get("detector_label") or "").strip().lower() or None
        entry = _category_calibration(calibration, label)
        if label is None:
            reason = "the detector does not suggest this category"
        elif version is None:
            reason = "no suggestions from any detector yet"
        elif not calibration:
            reason = f"detector version {version} has no stored thresholds"
        elif entry is None:
            reason = f"detector version {version} has no threshold for label {label!r}"
        elif entry.get("threshold") is None:
            reason = str(entry.get("reason") or "no threshold reaches dev precision 0.9")
        else:
            out[category["id"]] = {
                "threshold": entry["threshold"],
                "detector_precision": entry.get("dev_precision"),
                "detector_version": version,
            }
            continue
        out[category["id"]] = {"threshold": None, "detector_precision": None, "reason": reason}
    return out


def main_version(suggestions: Iterable[Span], versions: Mapping[int, str]) -> str | None:
    """The detector version most of ``suggestions`` came from (``versions``: ref -> version)."""
    counts = Counter(versions.get(s.ref or -1) for s in suggestions)
    counts.pop(None, None)
    return counts.most_common(1)[0][0] if counts else None


def confident_recall(
    worker_spans: Sequence[Span],
    suggestions: Sequence[Span],
    thresholds: Mapping[str, Mapping[str, Any]],
    *,
    texts: Mapping[TextKey, str] | None = None,
    scopes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Recall of ``worker_spans`` over the confident suggestions (``Span.score`` ≥ threshold).

    Returns ``{"recall", "caught", "total", "per_category": {cat: {"recall", "caught",
    "total", "threshold", "detector_precision"} or {"recall": None, "reason", ...}}}``;
    the overall figures pool the categories that have a threshold (None without any
    confident suggestion).
    """
    confident, seen = [], set()
    for s in suggestions:  # the same place from repeated detector runs counts once
        t = thresholds.get(s.category, {}).get("threshold")
        place = (s.document, s.segment, s.start, s.end, s.category)
        if t is not None and s.score is not None and s.score >= t and place not in seen:
            seen.add(place)
            confident.append(s)
    caught_ids = {
        j for _, j in match(worker_spans, confident, "lenient", texts=texts, scopes=scopes)
    }
    per_category: dict[str, dict[str, Any]] = {}
    for category, known in thresholds.items():
        if known.get("threshold") is None:
            per_category[category] = {
                "recall": None,
                "caught": None,
                "total": None,
                "threshold": None,
                "detector_precision": None,
                "reason": known.get("reason"),
            }
            continue
        indices = [j for j, s in enumerate(confident) if s.category == category]
        caught = sum(1 for j in indices if j in caught_ids)
        per_category[category] = {
            "recall": caught / len(indices) if indices else None,
            "caught": caught,
            "total": len(indices),
            "threshold": known["threshold"],
            "detector_precision": known.get("detector_precision"),
        }
        if not indices:
            per_category[category]["reason"] = "no confident suggestions in the documents done"
    total = len(confident)
    return {
        "recall": len(caught_ids) / total if total else None,
        "caught": len(caught_ids),
        "total": total,
        "per_category": per_category,
    }
