"""What agreement per document and per pair of workers adds to the study report's agreement.

    .venv/bin/python bench/agreement_breakdown.py                  # 1,000 documents
    .venv/bin/python bench/agreement_breakdown.py --documents 200  # a quick check

A synthetic study with no database: DOCUMENTS documents of 8 segments of about 60 tokens,
each done by 3 of 30 workers, each worker marking a span in every other segment. Times
``agreement_report`` (what the report computed before) and ``agreement_breakdown`` (what it
adds), best of three, and prints them as JSON with the machine's load average (the machine
may be shared: say so with the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.quality.agreement import (  # noqa: E402
    CategoryScheme,
    WorkBatch,
    agreement_breakdown,
    agreement_report,
)
from app.rules.scoring import Span  # noqa: E402

WORDS = [
    "the",
    "keeper",
    "of",
    "the",
    "light",
    "had",
    "never",
    "once",
    "seen",
    "the",
    "sea",
    "from",
    "the",
    "cliff",
]
CATEGORIES = ["CharE", "RefE", "GramE", "SceneE"]


def study(documents: int, seed: int = 1):
    rng = random.Random(seed)
    texts, annotated, spans = {}, {}, []
    workers = [f"w{n}" for n in range(30)]
    for d in range(documents):
        doc = f"doc-{d}"
        for s in range(8):
            texts[(doc, s)] = " ".join(rng.choice(WORDS) for _ in range(60)) + "."
        for worker in rng.sample(workers, 3):
            annotated.setdefault(worker, set()).add(doc)
            for s in range(0, 8, 2):
                text = texts[(doc, s)]
                start = rng.randrange(0, len(text) - 30)
                end = start + rng.randrange(3, 30)
                spans.append(
                    Span(doc, s, start, end, rng.choice(CATEGORIES), worker, text[start:end])
                )
    return spans, texts, annotated


def best_of(runs: int, fn) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=1000)
    args = parser.parse_args()
    spans, texts, annotated = study(args.documents)
    scheme = CategoryScheme(CATEGORIES)
    work = WorkBatch(spans, texts, annotated)
    report = best_of(3, lambda: agreement_report(work, scheme))
    breakdown = best_of(3, lambda: agreement_breakdown(work, scheme))
    result = agreement_breakdown(work, scheme)
    print(
        json.dumps(
            {
                "documents": args.documents,
                "spans": len(spans),
                "pairs": len(result["per_pair"]),
                "agreement_report_s": round(report, 3),
                "agreement_breakdown_s": round(breakdown, 3),
                "load_average": os.getloadavg(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
