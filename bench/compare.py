"""How long comparing systems and the report's worker quality take on a big study.

    .venv/bin/python bench/compare.py               # SNaC dev × 40: 600 documents, 3 systems
    .venv/bin/python bench/compare.py --copies 4    # a quick check

SNaC dev's 15 summaries are imported ``--copies`` times (ids suffixed, the same three
sources) into a fresh SQLite file, with every vote a submitted worker (as
tests/test_compare_snac.py), then timed: ``compare_systems`` as the web page runs it (2,000
resamples, no per-category pair tests), with them, at 9,999 (the command line), the figure
as SVG, and ``study_report`` (which now
builds every document's candidates for the consensus precision). Figures go to
bench/out/compare-*.json with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app import create_app  # noqa: E402
from app.db import session_scope  # noqa: E402
from app.documents.records import DocumentInput, ImportedSpan  # noqa: E402
from app.documents.studies import create_study, get_study, import_documents  # noqa: E402
from app.formats import parse_documents  # noqa: E402
from app.migrate import upgrade  # noqa: E402
from tests.test_snac_roundtrip import plan_marks  # noqa: E402

DEV = REPO.parent / "shared" / "data" / "snac" / "dev.json"


def documents(copies: int) -> list[DocumentInput]:
    raw = json.loads(DEV.read_text(encoding="utf-8"))
    marks, *_ = plan_marks(raw)
    out = []
    for copy in range(copies):
        for doc in parse_documents(DEV, "snac"):
            name = doc.external_id
            work = [
                ImportedSpan(
                    f"worker-{k}",
                    b["segment"],
                    b["start"],
                    b["end"],
                    b["text"],
                    b["category"],
                    (
                        b["paired"]["segment"],
                        b["paired"]["start"],
                        b["paired"]["end"],
                        b["paired"]["text"],
                    )
                    if b["paired"]
                    else None,
                )
                for k, bodies in marks[name].items()
                for b in bodies
            ]
            meta = {"source": doc.source}
            out.append(DocumentInput(f"{name}-c{copy}", doc.segments, meta, work=work))
    return out


def timed(label: str, func, results: dict) -> object:
    start = time.perf_counter()
    value = func()
    results[label] = round(time.perf_counter() - start, 2)
    print(f"{label}: {results[label]} s", flush=True)
    return value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=40)
    args = parser.parse_args()
    from app.quality.compare import compare_systems
    from app.quality.compare_plot import figure_bytes
    from app.quality.reporting import study_report

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/compare.db"
        upgrade(url)
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
        docs = documents(args.copies)
        results: dict[str, object] = {"documents": len(docs), "load": os.getloadavg()[0]}
        with app.app_context(), session_scope() as session:
            study, _ = create_study(
                session, "big", REPO / "taxonomies" / "snac.yaml", annotators_per_doc=3
            )
            timed("import", lambda: import_documents(session, study, docs), results)
        with app.app_context(), session_scope() as session:
            study = get_study(session, "big")
            timed(
                "page_2000",  # what the Compare page computes
                lambda: compare_systems(session, study, resamples=2000, category_pairs=False),
                results,
            )
            timed("compare_2000", lambda: compare_systems(session, study, resamples=2000), results)
            result = timed(
                "compare_9999", lambda: compare_systems(session, study, resamples=9999), results
            )
            timed("figure_svg", lambda: figure_bytes(result, "svg"), results)  # type: ignore[arg-type]
            timed("report", lambda: study_report(session, study), results)
        results["load_after"] = os.getloadavg()[0]
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    path = out / f"compare-{args.copies}.json"
    path.write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
