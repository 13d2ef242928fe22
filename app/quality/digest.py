"""What the dashboard shows of a study report, small at any study size: the report without its
per-document lists. Agreement per document and per pair keep the :data:`BREAKDOWN_ROWS` with
the lowest token α (and their counts), the pair heat map its first :data:`HEAT_WORKERS`
workers, and the progress rows become the segments submitted per source that the source chart
needs.

The figure job stores it beside the whole report (:mod:`app.quality.served`), so a big
study's dashboard parses kilobytes, not the megabytes of the report; a small study's dashboard
digests the report it computes. Both pages are drawn from this one function's answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

BREAKDOWN_ROWS = 12  # rows of the per-document and per-pair agreement tables
HEAT_WORKERS = 16  # the pair heat map's rows and columns; the rest in Report JSON


def alpha_order(row: Mapping[str, Any]) -> tuple[bool, float]:
    """Sort key of an agreement row: the lowest token α first, undefined last."""
    alpha = row["token"]["alpha"]
    return (alpha is None, alpha if alpha is not None else 0.0)


def lowest_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Agreement rows (per document, per pair) with the lowest token α first, undefined last:
    where workers part ways is what a researcher looks at."""
    return sorted(rows, key=alpha_order)


def heat_map(pairs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The per-pair γ matrix for the dashboard's heat map: the first :data:`HEAT_WORKERS`
    workers, each cell its γ (None where the two share no document or γ is undefined) and a
    shade 0-4 (γ < 0, < 0.4, < 0.6, < 0.8, ≥ 0.8)."""
    if not pairs or not pairs.get("workers"):
        return None
    names = pairs["workers"][:HEAT_WORKERS]
    rows = []
    for i, name in enumerate(names):
        cells = []
        for j in range(len(names)):
            value = (pairs["gamma"][i][j] or {}).get("gamma")
            shade = None if value is None else sum(value >= t for t in (0.0, 0.4, 0.6, 0.8))
            cells.append({"value": value, "shade": shade, "documents": pairs["documents"][i][j]})
        rows.append({"worker": name, "cells": cells})
    return {"workers": names, "rows": rows, "more": len(pairs["workers"]) - len(names)}


def segments_per_source(progress_rows: list[Mapping[str, Any]]) -> dict[str, int]:
    """Segments submitted per source (a document's segments once per submitted assignment):
    the denominator of the source chart's errors per segment."""
    totals: dict[str, int] = defaultdict(int)
    for row in progress_rows:
        totals[row["source"]] += row["segments"] * row["submitted"]
    return dict(totals)


def _breakdown(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"rows": lowest_first(rows)[:BREAKDOWN_ROWS], "total": len(rows)}


def digest(report: Mapping[str, Any]) -> dict[str, Any]:
    """The dashboard's part of ``report`` (:func:`app.quality.reporting.study_report`): the
    same keys, per-document lists left out or cut (see the module's docstring)."""
    progress = dict(report["progress"])
    progress_rows = progress.pop("per_document", [])
    agreement = dict(report.get("agreement") or {})
    per_document = agreement.pop("per_document", None) or []
    per_pair = agreement.pop("per_pair", None) or []
    pairs = agreement.pop("pairs", None)
    kept = ("categories", "workers", "detector", "attention")
    return {
        **{key: report[key] for key in kept if key in report},
        "progress": progress,
        "agreement": agreement,
        "segments_per_source": segments_per_source(progress_rows),
        "per_document": _breakdown(per_document),
        "per_pair": _breakdown(per_pair),
        "heat": heat_map(pairs),
    }
