"""The one figure workers are ranked by, and the ranking (docs/METRICS.md, "Ranking workers").

Researchers read a ranked list as "best worker first", so exactly one figure orders workers
on every page and in the report: the **expected F1** of the worker models
(:func:`app.quality.reliability.expected_f1`), the F1 a worker with Dawid-Skene's estimate
of their sensitivity and specificity scores at the model's error rate. Replayed workers of
known quality on several data sets and seeds (``tests/test_worker_ranking.py``) are ordered
by it as their true F1 orders them. Every other figure is shown as what it is, never as an
order: MACE's competence and the consensus F1 measure agreement with the majority (a worker
who finds what the others miss, or a majority that misses, reads low), and put a random half
of the errors above all of them, or a spammer above an exact worker, on such replays; the
estimated P · R · F1 mixes gold and agreement evidence.

**Rank** 1 is the highest expected F1, ties by worker ID; a worker without the figure (the
models not computed yet, or no document they share with another worker) has no rank and is
listed after the ranked ones, by worker ID.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

FIGURE = "expected_f1"  # the key of the ranking figure in a worker's model figures
TITLE = "Expected F1"


def ranks(figures: Mapping[str, Mapping[str, Any] | None]) -> dict[str, int]:
    """Each worker's rank from their model figures (worker -> ``{"expected_f1", ...}``, or
    None); a worker without an expected F1 is left out."""
    scored = [(w, f[FIGURE]) for w, f in figures.items() if f and f.get(FIGURE) is not None]
    ordered = sorted(scored, key=lambda item: (-item[1], item[0]))
    return {worker: n for n, (worker, _) in enumerate(ordered, start=1)}


def rank_rows(
    rows: list[dict[str, Any]],
    figures_of: Callable[[dict[str, Any]], Mapping[str, Any] | None],
) -> None:
    """Set ``rank`` on each row (a dict with ``worker_id``) from ``figures_of(row)`` and sort
    ``rows`` in place by it: ranked first, then the others by worker ID."""
    found = ranks({row["worker_id"]: figures_of(row) for row in rows})
    for row in rows:
        row["rank"] = found.get(row["worker_id"])
    rows.sort(key=order)


def order(row: Mapping[str, Any]) -> tuple[bool, int, str]:
    """The sort key of a ranked row: ranked rows by rank, then the others by worker ID."""
    rank = row.get("rank")
    return (rank is None, rank or 0, row["worker_id"])
