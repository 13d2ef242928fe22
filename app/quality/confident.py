"""Worker recall on the errors the detector is confident about.

Where a category's confident suggestions come from (``basis``, docs/METRICS.md):

- ``operating point``: the detector version stored a threshold for the category
  (``detector_versions.calibration``: its ``precision_90`` operating point, the lowest score
  whose sentence-level precision is ≥ 0.9 out-of-fold on SNaC train, reported on dev; see
  ``model_server/operating_points.py``); its suggestions scoring at or above it are confident.
- ``gold documents``: an uncalibrated version (no stored thresholds: the LLM, rules, T5) whose
  suggestions of the category on the study's gold documents number at least
  :data:`MIN_GOLD_SUGGESTIONS` and are right (lenient match with a gold error) at least
  :data:`TARGET_PRECISION` of the time: all its suggestions of the category are confident.
  Below that precision the category is n/a, with the precision measured.
- ``uncalibrated``: an uncalibrated version with too few suggestions on gold documents to
  measure: all its suggestions count, and the figure is the share of them the worker marked,
  which is *low* by the detector's unknown share of wrong suggestions (stated with it).

Since about nine in ten confident suggestions are real errors, the share a worker catches
estimates the worker's recall on real errors of that category, which a share of *all*
suggestions cannot (it is capped by the detector's precision). Like any recall it rewards
marking everything (a worker who marks every word gets 1.000): the figure that ranks
workers pairs it with a precision estimate (:mod:`app.quality.worker_quality`).

Caught = paired with a worker span by the lenient one-to-one matching (same category, any
overlap; a shared sentence for sentence-scope categories). A category without a threshold
gets ``recall: None`` and a ``reason``, never a made-up figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.rules.matching import match
from app.rules.scoring import locate_spans
from app.rules.spans import Span, TextKey

Calibrations = Mapping[str, Mapping[str, Any]]
"""detector version -> its calibration (``{}`` when it has none)."""

TARGET_PRECISION = 0.9
MIN_GOLD_SUGGESTIONS = 5
OPERATING_POINT, GOLD, UNCALIBRATED = "operating point", "gold documents", "uncalibrated"
UNCALIBRATED_NOTE = (
    "uncalibrated: share of all its suggestions marked, low by its unknown share of wrong ones"
)


def gold_precision(
    suggestions: Sequence[Span],
    gold: Sequence[Span],
    *,
    texts: Mapping[TextKey, str] | None = None,
    scopes: Mapping[str, str] | None = None,
) -> dict[str, tuple[int, int]]:
    """Per category (right, total) of ``suggestions`` on gold documents: right = paired with a
    gold error by the lenient one-to-one matching. The same place counts once."""
    distinct, seen = [], set()
    for s in suggestions:
        place = (s.document, s.segment, s.start, s.end, s.category)
        if place not in seen:
            seen.add(place)
            distinct.append(s)
    located = locate_spans(gold, texts) if texts else list(gold)
    right = {j for _, j in match(located, distinct, "lenient", texts=texts, scopes=scopes)}
    out: dict[str, tuple[int, int]] = {}
    for j, s in enumerate(distinct):
        hits, total = out.get(s.category, (0, 0))
        out[s.category] = (hits + (j in right), total + 1)
    return out


def _uncalibrated(
    category: str, version: str, on_gold: Mapping[str, tuple[int, int]]
) -> dict[str, Any]:
    """The entry of a category of a version without stored thresholds."""
    hits, total = on_gold.get(category, (0, 0))
    if total < MIN_GOLD_SUGGESTIONS:
        return {
            "threshold": None,
            "basis": UNCALIBRATED,
            "detector_precision": None,
            "detector_version": version,
            "note": UNCALIBRATED_NOTE,
        }
    precision = hits / total
    if precision < TARGET_PRECISION:
        return {
            "threshold": None,
            "detector_precision": precision,
            "reason": f"its precision on the study's gold documents is {precision:.2f} "
            f"({hits}/{total}), under {TARGET_PRECISION:.2f}",
        }
    return {
        "threshold": None,
        "basis": GOLD,
        "detector_precision": precision,
        "detector_version": version,
        "note": f"precision {precision:.2f} ({hits}/{total}) on the study's gold documents",
    }


def _category_calibration(
    calibration: Mapping[str, Any], label: str | None
) -> Mapping[str, Any] | None:
    """The calibration entry of the detector label ``label`` (None when absent)."""
    for entry in (calibration.get("categories") or {}).values():
        if label and entry.get("label") == label:
            return entry
    return None


def confident_thresholds(
    taxonomy: Mapping[str, Any],
    version: str | None,
    calibrations: Calibrations,
    on_gold: Mapping[str, tuple[int, int]] | None = None,
    suggested: Iterable[str] = (),
) -> dict[str, dict[str, Any]]:
    """Per taxonomy category: ``threshold``, ``detector_precision`` (dev), ``basis`` or
    ``reason``. ``on_gold``: the version's (right, total) suggestions per category on the
    study's gold documents (:func:`gold_precision`); ``suggested``: the categories it
    suggested in the study (an uncalibrated backend maps categories itself)."""
    out: dict[str, dict[str, Any]] = {}
    calibration = calibrations.get(version or "") or {}
    suggested = set(suggested)
    for category in taxonomy.get("categories", []):
        label = (category.get("detector_label") or "").strip().lower() or None
        entry = _category_calibration(calibration, label)
        if version is not None and not calibration and category["id"] in suggested:
            out[category["id"]] = _uncalibrated(category["id"], version, on_gold or {})
            continue
        if label is None:
            reason = "the detector does not suggest this category"
        elif version is None:
            reason = "no suggestions from any detector yet"
        elif not calibration:
            reason = f"detector version {version} has no stored thresholds"
        elif entry is None:
            reason = f"detector version {version} has no threshold for label {label!r}"
        elif entry.get("threshold") is None:
            reason = str(entry.get("reason") or "no precision_90 operating point")
        else:
            out[category["id"]] = {
                "threshold": entry["threshold"],
                "basis": OPERATING_POINT,
                "detector_precision": entry.get("dev_precision"),
                "detector_version": version,
            }
            continue
        out[category["id"]] = {"threshold": None, "detector_precision": None, "reason": reason}
    return out


def confident_recall(
    worker_spans: Sequence[Span],
    suggestions: Sequence[Span],
    thresholds: Mapping[str, Mapping[str, Any]],
    *,
    texts: Mapping[TextKey, str] | None = None,
    scopes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Recall of ``worker_spans`` over the confident suggestions (``Span.score`` ≥ threshold;
    every suggestion of a category whose basis is gold documents or uncalibrated).

    Returns ``{"recall", "caught", "total", "per_category": {cat: {"recall", "caught",
    "total", "threshold", "detector_precision"} or {"recall": None, "reason", ...}}}``;
    the overall figures pool the categories that have a threshold (None without any
    confident suggestion).
    """
    confident, seen = [], set()
    for s in suggestions:  # the same place from repeated detector runs counts once
        known = thresholds.get(s.category, {})
        t = known.get("threshold")
        place = (s.document, s.segment, s.start, s.end, s.category)
        every = known.get("basis") in (GOLD, UNCALIBRATED)
        above = t is not None and s.score is not None and s.score >= t
        if (every or above) and place not in seen:
            seen.add(place)
            confident.append(s)
    caught_ids = {
        j for _, j in match(worker_spans, confident, "lenient", texts=texts, scopes=scopes)
    }
    per_category: dict[str, dict[str, Any]] = {}
    for category, known in thresholds.items():
        if known.get("threshold") is None and known.get("basis") not in (GOLD, UNCALIBRATED):
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
            "basis": known.get("basis"),
        }
        if known.get("note"):
            per_category[category]["note"] = known["note"]
        if not indices:
            per_category[category]["reason"] = "no confident suggestions in the documents done"
    total = len(confident)
    bases = {known.get("basis") for known in thresholds.values()} - {None}
    return {
        "basis": bases.pop() if len(bases) == 1 else ("mixed" if bases else None),
        "recall": len(caught_ids) / total if total else None,
        "caught": len(caught_ids),
        "total": total,
        "per_category": per_category,
    }


def merge_confident_recall(
    parts: Iterable[Mapping[str, Any]], thresholds: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """:func:`confident_recall` over several documents from its result on each (all under
    ``thresholds``): the matching never pairs spans of two documents, so this is one call
    over them all (tests/test_report_stream.py)."""
    out = confident_recall([], [], thresholds)
    for part in parts:
        out["caught"] += part["caught"]
        out["total"] += part["total"]
        for category, entry in part["per_category"].items():
            if entry["caught"] is not None:
                mine = out["per_category"][category]
                mine["caught"] += entry["caught"]
                mine["total"] += entry["total"]
    for entry in out["per_category"].values():
        if entry["caught"] is None:
            continue
        entry["recall"] = entry["caught"] / entry["total"] if entry["total"] else None
        if entry["total"]:
            entry.pop("reason", None)
    out["recall"] = out["caught"] / out["total"] if out["total"] else None
    return out
