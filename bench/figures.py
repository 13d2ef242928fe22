"""How long the figure job's slow figures take, computed from nothing: γ and unitizing α
(``unitized_report``) and the worker models (``worker_models``), on the synthetic study of
bench/agreement_breakdown.py (DOCUMENTS documents of 8 segments, 3 of 30 workers each).

    .venv/bin/python bench/figures.py --documents 20 50
    .venv/bin/python bench/figures.py --documents 200 --no-gamma   # the models alone

No database: the pure functions the job calls (app/quality/figures.py). One run each (γ's
first call also compiles pygamma's numba kernels: its time is given apart), printed as JSON
with the machine's load average (the machine may be shared: say so with the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agreement_breakdown import CATEGORIES, study  # noqa: E402

from app.quality.document_figures import unitized_report  # noqa: E402
from app.quality.reliability import worker_models  # noqa: E402


def timed(fn, *args, **kwargs):
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, round(time.perf_counter() - started, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--no-gamma", action="store_true")
    args = parser.parse_args()
    out: dict = {"load_average_1m": os.getloadavg()[0], "runs": []}
    if not args.no_gamma:  # compile pygamma's kernels once, apart from the figures
        spans, texts, annotated = study(2)
        _, out["gamma_warm_up_seconds"] = timed(
            unitized_report, spans, texts, annotated, categories=CATEGORIES
        )
    for documents in args.documents:
        spans, texts, annotated = study(documents)
        run: dict = {"documents": documents, "spans": len(spans)}
        if not args.no_gamma:
            report, run["unitized_seconds"] = timed(
                unitized_report, spans, texts, annotated, categories=CATEGORIES
            )
            run["gamma_all"] = (report["gamma"]["all"] or {}).get("gamma")
            run["skipped"] = report["skipped"]
        models, run["models_seconds"] = timed(
            worker_models, spans, texts, annotated, categories=CATEGORIES
        )
        run["labels"] = models["labels"]
        out["runs"].append(run)
        print(json.dumps(run), flush=True)
    out["load_average_1m_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
