"""SNaC dev sentence-level P/R/F1/ov. for every detector backend, beside the all-positive
baseline, and for MiniLM at each stored operating point (and rules tuning on train).
Detectors get each document's entity clusters from the import (``app.entities``); MiniLM is
also scored without them (its fallback heads).

.venv/bin/python bench/detector_quality.py                       # rules, minilm, t5
.venv/bin/python bench/detector_quality.py --t5 checkpoints/t5-snac-small
.venv/bin/python bench/detector_quality.py --tune-rules          # grid search on train
OPENAI_BASE_URL=http://127.0.0.1:8000/v1 .venv/bin/python bench/detector_quality.py \
    --llm openai:Qwen2.5-7B-Instruct                               # + an LLM endpoint
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model_server.detector import load_detector  # noqa: E402
from model_server.evaluate import (  # noqa: E402
    REPORTED,
    all_positive,
    evaluate_points,
    example_inputs,
    format_table,
    score,
)
from model_server.interface import RawSuggestion  # noqa: E402
from model_server.rules import RulesConfig, RulesDetector  # noqa: E402
from model_server.snac_data import (  # noqa: E402
    attach_people,
    load_documents,
    sentence_examples,
    snac_path,
)


def tune_rules(train_path: Path) -> RulesConfig:
    """Grid-search each rule's thresholds for its own category's F1 on train."""
    examples = sentence_examples(load_documents(train_path))
    det = RulesDetector()
    analysed = det.analyse(example_inputs(examples))

    def f1(cfg: RulesConfig, cat: str) -> float:
        return score(examples, RulesDetector(cfg).decide_all(analysed))[cat]["f1"]

    cfg = RulesConfig()
    grids = {
        "CharE": [
            dict(
                char_include_propn=a,
                char_include_other_ents=b,
                char_require_all_new=c,
                char_skip_appositive=d,
            )
            for a, b, c, d in itertools.product([True, False], repeat=4)
        ],
        "RefE": [
            dict(ref_kinds=k, ref_skip_generic=g, ref_min_tokens=t, ref_min_new_nps=n)
            for k, g, t, n in itertools.product(
                [("definite", "possessive"), ("definite",), ("definite", "possessive", "pronoun")],
                [True, False],
                [1, 2, 3],
                [1, 2],
            )
        ],
        "SceneE": [
            dict(scene_max_continuity=t, scene_only_segment_openers=o, scene_use_openers=u)
            for t, o, u in itertools.product(
                [0.0, 0.2, 0.34, 0.5, 0.6, 0.75, 1.0], [True, False], [True, False]
            )
        ],
    }
    for cat, grid in grids.items():
        scored = sorted(((f1(replace(cfg, **g), cat), i) for i, g in enumerate(grid)), reverse=True)
        print(f"{cat}: best train F1 {scored[0][0]:.3f} with {grid[scored[0][1]]}")
        cfg = replace(cfg, **grid[scored[0][1]])
    return cfg


def llm_predictions(det, docs: dict, examples) -> list[list[RawSuggestion]]:
    """The LLM backend over whole documents (SNaC taxonomy), its suggestion rows mapped back
    to the sentences they start in, as SNaC labels."""
    from app.documents.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(Path(__file__).resolve().parents[1] / "taxonomies" / "snac.yaml")
    label_of = {c["id"]: c.get("detector_label") for c in taxonomy["categories"]}
    where = {(ex.doc_id, ex.segment, ex.start): k for k, ex in enumerate(examples)}
    starts: dict[tuple[str, int], list[int]] = {}
    for ex in examples:
        starts.setdefault((ex.doc_id, ex.segment), []).append(ex.start)
    predictions: list[list[RawSuggestion]] = [[] for _ in examples]
    for doc_id, segments in docs.items():
        rows, stats = det.detect_segments([s.get("text", "") for s in segments], taxonomy)
        print(f"  {doc_id}: {stats.suggestions} suggestions, {stats.dropped} dropped")
        for r in rows:
            sentence_start = max(s for s in starts[(doc_id, r.segment)] if s <= r.start)
            k = where[(doc_id, r.segment, sentence_start)]
            predictions[k].append(
                RawSuggestion(
                    label_of.get(r.category) or "",
                    r.start - sentence_start,
                    r.end - sentence_start,
                    r.score,
                    det.name,
                    det.version,
                )
            )
    return predictions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(snac_path("dev")))
    parser.add_argument(
        "--t5", action="append", default=[], help="T5 checkpoint folder(s) to include"
    )
    parser.add_argument("--min-votes", type=int, default=1)
    parser.add_argument("--llm", action="append", default=[], help="openai:<model> backends")
    parser.add_argument("--tune-rules", action="store_true")
    args = parser.parse_args()
    if args.tune_rules:
        print(tune_rules(snac_path("train")))
        return
    from app.detection.clusters import find_clusters
    from model_server.clusters import set_cluster_finder

    set_cluster_finder(find_clusters)
    docs = load_documents(args.data)
    plain = sentence_examples(docs)
    examples = sentence_examples(docs)
    attach_people(examples, docs)
    inputs = example_inputs(examples)
    rows = {"all-positive baseline": all_positive(examples, args.min_votes)}
    names = ["rules", "minilm", "minilm without clusters", *args.t5]
    for name in names:
        if name == "minilm without clusters":
            det = load_detector("minilm")
            rows[name] = score(plain, det.detect(example_inputs(plain)), args.min_votes)
            for point, at_point in evaluate_points(det, plain, args.min_votes).items():
                rows[f"{name} @ {point}"] = at_point
            continue
        try:
            det = load_detector(name)
        except ValueError as exc:
            print(f"skipping {name}: {exc}")
            continue
        t0 = time.perf_counter()
        table = score(examples, det.detect(inputs), args.min_votes)
        label = f"{det.name} ({Path(name).name})" if det.name == "t5" else det.name
        rows[label] = table
        print(f"{label}: {len(inputs) / (time.perf_counter() - t0):.1f} sentences/s")
        for point, at_point in evaluate_points(det, examples, args.min_votes).items():
            rows[f"{label} @ {point}"] = at_point
    for name in args.llm:
        det = load_detector(name)
        t0 = time.perf_counter()
        rows[name] = score(examples, llm_predictions(det, docs, examples), args.min_votes)
        print(f"{name}: {len(inputs) / (time.perf_counter() - t0):.1f} sentences/s")
    print(f"\n{Path(args.data).name}: {len(examples)} sentences, gold votes >= {args.min_votes}\n")
    print(format_table(rows, ("CharE", "SceneE", "RefE")))
    print()
    print(format_table(rows, [c for c in REPORTED if c == "InconE"]))


if __name__ == "__main__":
    main()
