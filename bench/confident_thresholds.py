"""Why each category of the shipped MiniLM detector has (or has not) a confident threshold:
its out-of-fold precision on SNaC train over the whole threshold grid.

    .venv/bin/python bench/confident_thresholds.py

Repeats the out-of-fold step of ``marginalia detector train --backend minilm`` (same folds,
seed, features and heads: ``model_server.minilm_train.fit_heads``) and keeps each category's
sentence scores; nothing is written to the shipped ``head.json``. Per category it reports the
``precision_90`` point the training chose, the highest precision any grid threshold reaches
with at least 20 correct sentences (``MIN_TRUE_POSITIVES``) and with at least one, and the
precision reached at the threshold the shipped head stores. Figures go to
bench/out/confident-thresholds.json (docs/METRICS.md, "Against the detector's suggestions").
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
TRAIN = REPO.parent / "shared" / "data" / "snac" / "train.json"


def main() -> None:
    from app.detection.clusters import find_clusters
    from model_server import minilm_train
    from model_server.clusters import set_cluster_finder
    from model_server.evaluate import example_inputs
    from model_server.minilm import vectors
    from model_server.operating_points import GRID, MIN_TRUE_POSITIVES, counts
    from model_server.snac_data import attach_people, load_documents, sentence_examples

    start = time.perf_counter()
    set_cluster_finder(find_clusters)
    docs = load_documents(TRAIN)
    examples = sentence_examples(docs)
    if not attach_people(examples, docs):
        raise SystemExit("no entity clusters: the app's cluster finder did not load")
    inputs = example_inputs(examples)
    analysed = minilm_train.analyse(zip(minilm_train.parse_inputs(inputs), inputs, strict=True))
    rows = vectors(inputs, analysed)
    captured: list[tuple[list[float], list[bool]]] = []
    chosen_by = minilm_train.choose

    def keep(scores, gold, *args, **kwargs):
        captured.append((list(scores), list(gold)))
        return chosen_by(scores, gold, *args, **kwargs)

    minilm_train.choose = keep
    _, points, _ = minilm_train.fit_heads(examples, rows, mlp=minilm_train.MLP)
    shipped = json.loads((REPO / "model_server/models/minilm/head.json").read_text())
    out: dict[str, object] = {"load": os.getloadavg()[0]}
    for category, (scores, gold) in zip(points, captured, strict=True):
        grid = []
        for t in GRID:
            tp, fp, _ = counts(scores, gold, t)
            grid.append((t, tp, fp))
        best_20 = max(
            ((tp / (tp + fp), t, tp) for t, tp, fp in grid if tp >= MIN_TRUE_POSITIVES),
            default=None,
        )
        best_1 = max(((tp / (tp + fp), t, tp) for t, tp, fp in grid if tp >= 1), default=None)
        out[category] = {
            "sentences": len(gold),
            "positives": int(sum(gold)),
            "precision_90": points[category]["precision_90"],
            "shipped_precision_90": shipped["operating_points"][category]["precision_90"],
            "best_precision_with_20_correct": best_20,
            "best_precision_with_1_correct": best_1,
        }
        print(category, json.dumps(out[category]), flush=True)
    out["seconds"] = round(time.perf_counter() - start, 1)
    path = REPO / "bench" / "out" / "confident-thresholds.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(json.dumps({"seconds": out["seconds"], "written": str(path)}))


if __name__ == "__main__":
    main()
