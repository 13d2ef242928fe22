"""The tables of docs/METRICS.md, "Ranking workers": five replayed workers of known quality
(exact, random-half, every-word, spammer, nothing; tests/replayed_workers.py) on SNaC dev and
train (three summaries drawn by each seed) and on generated studies, with each worker-figure
beside the true F1, and which figures order all five as the true F1 does.

    PYTHONPATH=. .venv/bin/python bench/replayed_workers.py [--seeds 0 1 2]

Needs ../shared/data for the SNaC rows (left out without it). Prints Markdown; CPU seconds
per study on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.replayed_workers import WORKERS, Replayed, figures, generated, snac  # noqa: E402

GAP = 0.02  # true F1 closer than this: either order holds (as the test says)
FIGURES = ("expected_f1", "estimated_f1", "consensus_f1", "competence")
NAMES = {
    "expected_f1": "expected F1 (ranks)",
    "estimated_f1": "est. F1",
    "consensus_f1": "consensus F1",
    "competence": "MACE competence",
}


def estimated_f1(study: Replayed) -> dict[str, float | None]:
    """The estimated F1 of the report (app/quality/worker_quality.py) without gold or
    suggestions: consensus precision and recall."""
    from app.quality.worker_quality import add_quality
    from app.rules.scoring import Span

    spans: dict[str, list[Span]] = {w: [] for w in WORKERS}
    for n, s in enumerate(study.all_spans, start=1):
        spans[s.source].append(
            Span(s.document, s.segment, s.start, s.end, s.category, s.source, s.text, n)
        )
    rows = [{"worker_id": w, "gold": None, "confident_recall": {"recall": None}} for w in WORKERS]
    order = {doc: list(WORKERS) for doc in study.documents}
    add_quality(rows, spans, order, study.texts, {"SceneE": "sentence"})
    return {row["worker_id"]: row["quality"]["f1"] for row in rows}


def orders(truth: dict[str, float], figure: dict[str, float | None]) -> bool:
    """Whether ``figure`` orders every pair whose true F1 differ by more than GAP as the true
    F1 does (a missing figure counts lowest)."""
    value = {w: -1.0 if figure[w] is None else figure[w] for w in WORKERS}
    return all(
        (value[a] > value[b]) == (truth[a] > truth[b])
        for i, a in enumerate(WORKERS)
        for b in WORKERS[i + 1 :]
        if abs(truth[a] - truth[b]) > GAP
    )


def run(study: Replayed) -> dict[str, dict[str, float | None]]:
    started = time.process_time()
    found = figures(study)
    models = found["models"]["workers"]
    out: dict[str, dict[str, float | None]] = {"true": found["true_f1"]}
    for key in ("expected_f1", "consensus_f1", "competence"):
        out[key] = {w: models[w][key] for w in WORKERS}
    out["estimated_f1"] = estimated_f1(study)
    seconds = time.process_time() - started
    print(f"{study.name}: {seconds:.1f} s CPU", file=sys.stderr)
    return out


def number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    makers = [generated]
    if (Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "snac").exists():
        makers = [lambda s: snac("dev", 3, s), lambda s: snac("train", 3, s), *makers]
    summary: dict[str, list[bool]] = {key: [] for key in FIGURES}
    for make in makers:
        for seed in args.seeds:
            study = make(seed)
            found = run(study)
            truth = found["true"]
            print(f"\n{study.name}\n")
            print("| worker | true F1 | " + " | ".join(NAMES[k] for k in FIGURES) + " |")
            print("| --- " * (2 + len(FIGURES)) + "|")
            for w in sorted(WORKERS, key=lambda w: -truth[w]):
                cells = " | ".join(number(found[k][w]) for k in FIGURES)
                print(f"| {w} | {truth[w]:.3f} | {cells} |")
            for key in FIGURES:
                summary[key].append(orders(truth, found[key]))
    runs = len(next(iter(summary.values())))
    print(f"\nOrders all five as the true F1 does (pairs within {GAP} aside), of {runs} runs:\n")
    print("| figure | runs ordered right |\n| --- | --- |")
    for key in FIGURES:
        print(f"| {NAMES[key]} | {sum(summary[key])} of {runs} |")


if __name__ == "__main__":
    main()
