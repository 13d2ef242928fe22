"""Would the model's marks tell the same story as the humans'? (docs/METRICS.md, "LLM
annotators")

* **Systems ranked side by side**: the comparison of systems (app/quality/compare.py) from
  the humans' marks (its rule: errors at least K humans marked) and from the annotator's
  (each of its marks an error: one annotator, K = 1), each system's errors per 100 words
  and clean-sentence share, the systems ranked by each (1: fewest errors, most clean
  sentences), and the rank correlations across the systems both cover: Spearman's ρ and
  Kendall's τ (SciPy; None with fewer than three systems or no variation).
* **BooookScore side by side** (the ``booookscore`` preset): each summary's BooookScore
  from the annotator's marks and from the humans' (app/quality/booookscore.py: the share
  of sentences no mark touches; the humans' is the mean over a summary's humans), on the
  summaries both scored: their means, the mean absolute difference, Pearson's r and
  Spearman's ρ across summaries (None under three summaries or without variation).
"""

from __future__ import annotations

import math
from typing import Any

from scipy import stats
from sqlalchemy.orm import Session

from app.models import Study
from app.quality.booookscore import booookscore
from app.quality.compare import compare_systems
from app.rules.work import Work

RESAMPLES = 200  # the comparisons' intervals are not shown here: only their values
FIGURES = {"errors_per_100_words": False, "clean_sentence_share": True}  # higher is better?


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def correlations(a: list[float], b: list[float], *, pearson: bool = False) -> dict[str, Any]:
    """Spearman's ρ and Kendall's τ (or Pearson's r) of two paired lists."""
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return {"spearman": None, ("pearson" if pearson else "kendall"): None}
    second = stats.pearsonr(a, b)[0] if pearson else stats.kendalltau(a, b)[0]
    return {
        "spearman": _finite(stats.spearmanr(a, b)[0]),
        ("pearson" if pearson else "kendall"): _finite(second),
    }


def _ranks(values: dict[str, float], better_high: bool) -> dict[str, float]:
    names = sorted(values)
    ranked = stats.rankdata([-values[n] if better_high else values[n] for n in names])
    return {n: float(r) for n, r in zip(names, ranked, strict=True)}


def ranks_side_by_side(session: Session, study: Study, coder: str) -> dict[str, Any] | None:
    """The systems' figures and ranks from both kinds of marks; None under two systems."""
    options = {"resamples": RESAMPLES, "category_pairs": False}
    humans = compare_systems(session, study, **options)
    model = compare_systems(session, study, layer=coder, min_workers=1, **options)
    mine = {s["system"]: s for s in humans["systems"]}
    theirs = {s["system"]: s for s in model["systems"]}
    shared = sorted(set(mine) & set(theirs))
    if len(shared) < 2:
        return None
    out: dict[str, Any] = {"min_workers": humans["min_workers"], "systems": shared}
    for figure, better_high in FIGURES.items():
        by_humans = {n: mine[n][figure]["value"] for n in shared}
        by_model = {n: theirs[n][figure]["value"] for n in shared}
        known = [n for n in shared if by_humans[n] is not None and by_model[n] is not None]
        rank_h = _ranks({n: by_humans[n] for n in known}, better_high)
        rank_m = _ranks({n: by_model[n] for n in known}, better_high)
        out[figure] = {
            "per_system": {
                n: {
                    "humans": by_humans[n],
                    "model": by_model[n],
                    "human_rank": rank_h.get(n),
                    "model_rank": rank_m.get(n),
                }
                for n in shared
            },
            **correlations([by_humans[n] for n in known], [by_model[n] for n in known]),
        }
    return out


def booookscore_side_by_side(session: Session, study: Study, coder: str) -> dict[str, Any]:
    """Each summary's BooookScore from the annotator's marks and from the humans'."""
    model = booookscore(session, study, Work(workers=coder))
    humans = booookscore(session, study, Work())
    theirs = {d["document"]: d["score"] for d in humans["per_document"]}
    rows = [
        {"document": d["document"], "model": d["score"], "humans": theirs.get(d["document"])}
        for d in model["per_document"]
        if d["score"] is not None and theirs.get(d["document"]) is not None
    ]
    a, b = [r["model"] for r in rows], [r["humans"] for r in rows]
    return {
        "documents": len(rows),
        "model": sum(a) / len(a) if a else None,
        "humans": sum(b) / len(b) if b else None,
        "mean_absolute_difference": sum(abs(x - y) for x, y in zip(a, b, strict=True)) / len(a)
        if a
        else None,
        **correlations(a, b, pearson=True),
        "per_document": rows,
    }


def format_ranks(ranks: dict[str, Any] | None, coder: str) -> str:
    """``marginalia compare --llm``'s text: each system's rank by both kinds of marks."""
    if ranks is None:
        return f"\nRanks from {coder}'s marks: fewer than two systems both cover.\n"
    lines = ["", f"Ranks by errors per 100 words: humans (K = {ranks['min_workers']}) vs {coder}"]
    figure = ranks["errors_per_100_words"]
    for name in ranks["systems"]:
        row = figure["per_system"][name]
        lines.append(
            f"  {name}: {_number(row['humans'])} (rank {_number(row['human_rank'], 1)}) vs "
            f"{_number(row['model'])} (rank {_number(row['model_rank'], 1)})"
        )
    lines.append(
        f"  Spearman's rho {_number(figure['spearman'])}, Kendall's tau {_number(figure['kendall'])}"
    )
    return "\n".join(lines) + "\n"


def _number(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"
