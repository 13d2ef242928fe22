"""Big studies, one command: each operation of a study's life timed and its peak memory taken,
at several sizes, as a growth table (docs/PERFORMANCE.md, "Big studies, round 2").

    .venv/bin/python bench/scale.py growth --sizes 10000,100000[,1000000] [--postgres]
    .venv/bin/python bench/scale.py panel [--raters 10 --marks 20 --documents 1000] [--per-rater]
    .venv/bin/python bench/scale.py gamma [--documents 1000]

* ``growth``: bench/scale_data.py's crowd study (3 workers a document from a pool, ~20 marks
  each) of N annotations as a Thresh file; a fresh database; then each ``marginalia``
  command in its own process under ``/usr/bin/time -v`` (wall seconds, CPU seconds, peak
  RSS): ``import``, ``worker --once --queue figures`` (the one-shot worker: the report and
  every figure brought current), ``report --json`` (the stored report), ``report --json``
  after one more submission (the report now, the figures as stored), ``export`` as snac,
  parquet and csv.
* ``panel``: the same commands on the big-study check's shape: D documents each done by the
  same R raters marking M spans (1,000 x 10 x 20 = 200,000 annotations), on SQLite.
* ``gamma``: the slow figures' refresh on a study of D documents of 8 segments, 3 of 30
  workers each, a span in every other segment (bench/agreement_breakdown.py's study, the one
  of bench/figures.py, stored as imported work): the one-shot worker's first full
  computation, then one new submission through the API and the worker's refresh, each as
  CPU seconds of the worker's process (in process, ``time.process_time``: every thread).

Each figure is printed with the 1-minute load average before and after it (the machine is
shared). Rows go to bench/out/scale-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_data import REPO, Cluster, panel_entries, write_thresh  # noqa: E402

OUT = REPO / "bench" / "out"
PYTHON = os.environ.get("BENCH_PYTHON", sys.executable)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def run(url: str, *args: str, check: bool = True) -> dict[str, Any]:
    """One ``marginalia`` command in its own process: wall and CPU seconds, peak RSS (MB)."""
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "bench", "PYTHONPATH": str(REPO)}
    before = load()
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", PYTHON, "-m", "app.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if check and done.returncode != 0:
        raise RuntimeError(" ".join(args) + ": " + (done.stdout + done.stderr)[-2000:])

    def measured(name: str) -> float:
        found = re.search(rf"{name}: ([\d.]+)", done.stderr)
        return float(found.group(1)) if found else 0.0

    return {
        "command": " ".join(args[:3]),
        "wall_s": round(wall, 2),
        "cpu_s": round(
            measured(r"User time \(seconds\)") + measured(r"System time \(seconds\)"), 2
        ),
        "peak_mb": round(measured(r"Maximum resident set size \(kbytes\)") / 1024, 1),
        "load": [before, load()],
        "said": done.stdout.strip()[-200:]
        if len(done.stdout) < 5000
        else f"{len(done.stdout)} bytes",
    }


def database(postgres: Cluster | None, name: str, folder: Path) -> str:
    if postgres is not None:
        return postgres.create(name)
    path = folder / f"{name}.db"
    path.unlink(missing_ok=True)
    return f"sqlite:///{path}"


def submit_one(url: str, document: str = "doc-000000") -> None:
    """One more submission: a new worker marks two spans of ``document`` through the API."""
    code = SUBMIT + "\nimport sys\nfrom app import create_app\n"
    code += 'submit(create_app({"DATABASE_URL": sys.argv[1], "SECRET_KEY": "bench"}), sys.argv[2])'
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([PYTHON, "-c", code, url, document], env=env, cwd=REPO, check=True)


def life(url: str, path: Path, label: str, fmt: str = "thresh") -> list[dict[str, Any]]:
    """The commands of a study's life on ``path``'s data (module docstring)."""
    run(url, "db", "upgrade")
    run(url, "study", "create", "big", "--taxonomy", "taxonomies/snac.yaml",
        "--annotators-per-doc", "20")  # fmt: skip
    rows = [run(url, "import", "big", str(path), "--format", fmt, "--no-ner")]
    rows.append(run(url, "worker", "--once", "--queue", "figures"))
    rows.append(run(url, "report", "big", "--json"))
    submit_one(url)
    rows.append({**run(url, "report", "big", "--json"), "command": "report big --json (changed)"})
    rows.append(
        {**run(url, "worker", "--once", "--queue", "figures"), "command": "worker (refresh)"}
    )
    for fmt_out in ("snac", "parquet", "csv"):
        out = path.parent / f"{label}.{fmt_out}"
        rows.append(run(url, "export", "big", "--format", fmt_out, "--out", str(out)))
    for row in rows:
        row["study"] = label
        print(json.dumps(row), flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: an operation per row, a study per column, ``CPU s / wall s / peak MB``."""
    studies = list(dict.fromkeys(row["study"] for row in rows))
    commands = list(dict.fromkeys(row["command"] for row in rows))
    lines = ["| operation | " + " | ".join(studies) + " |", "|---" * (len(studies) + 1) + "|"]
    for command in commands:
        cells = []
        for study in studies:
            found = [r for r in rows if r["study"] == study and r["command"] == command]
            cells.append(
                f"{found[0]['cpu_s']} s CPU, {found[0]['wall_s']} s, {found[0]['peak_mb']} MB "
                f"(load {found[0]['load'][0]}-{found[0]['load'][1]})"
                if found
                else ""
            )
        lines.append(f"| {command} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def growth(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    cluster = Cluster().start() if args.postgres else None
    rows: list[dict[str, Any]] = []
    try:
        for size in [int(n) for n in args.sizes.split(",")]:
            path = folder / f"thresh-{size}.json"
            counts = write_thresh(path, size)
            label = f"{size // 1000}k ({counts['annotations']} marks)"
            rows += life(database(cluster, f"scale_{size}", folder), path, label)
    finally:
        if cluster is not None:
            cluster.stop()
    return rows


def panel(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    path = folder / "panel.json"
    entries = panel_entries(args.documents, args.raters, args.marks, per_rater=args.per_rater)
    counts = write_thresh(path, entries=entries)
    label = f"panel {args.documents}x{args.raters}x{args.marks} ({counts['bytes'] / 2**20:.1f} MB)"
    return life(database(None, "panel", folder), path, label)


GAMMA = r"""
import cProfile, io, json, os, pstats, sys, time
from sqlalchemy import select, func
from app import create_app
from app.models import DocumentFigures, FigureJob
from app.quality.figure_jobs import queue_changed, run_next
url, profile = sys.argv[1], sys.argv[2]
app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
exec(sys.argv[3])  # submit(app): one new submission through the API, in this process


def refresh(label, profiler=None):
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        load = os.getloadavg()[0]
        cpu, wall = time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        queue_changed(session, at_once=True)
        runs = 0
        while run_next(session, "bench"):
            runs += 1
        if profiler:
            profiler.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        job = session.scalar(select(FigureJob))
        unitized = (job.result or {}).get("unitized") or {}
        row = {"command": label, "jobs": runs, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
            "load": [round(load, 2), round(os.getloadavg()[0], 2)],
            "computed_documents": unitized.get("computed"), "missing": unitized.get("missing"),
            "gamma_all": (((unitized.get("gamma") or {}).get("all")) or {}).get("gamma"),
            "job_wall_s": job.report_seconds, "figures_wall_s": job.seconds,
            "parts": session.scalar(select(func.count()).select_from(DocumentFigures))}
        session.close()
    print(json.dumps(row), flush=True)


refresh("first full computation (a worker's first figures: pygamma's import included)")
submit(app)
profiler = cProfile.Profile() if profile else None
refresh("after one new submission", profiler)
refresh("nothing changed")
if profiler:
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(35)
    open(profile, "w").write(text.getvalue())
"""

SUBMIT = r"""
def submit(app, document="doc-0"):
    client = app.test_client()
    answer = client.post("/api/assignments", json={"study": "big", "document": document, "worker_id": "bench-new"})
    assert answer.status_code in (200, 201), answer.get_data(as_text=True)
    token = answer.get_json()["token"]
    segments = client.get(f"/api/assignments/{token}").get_json()["document"]["segments"]
    text = segments[0]["text"]
    for n, (start, end) in enumerate([(0, 4), (5, 12)]):
        body = {"segment": 0, "start": start, "end": end, "text": text[start:end], "category": "CharE", "client_id": f"b{n}"}
        assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    for i in range(len(segments)):  # every segment seen, as a worker's moves say
        client.post(f"/api/assignments/{token}/position", json={"segment": i})
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 200, answer.get_data(as_text=True)
"""


def gamma_study(path: Path, documents: int) -> None:
    """bench/agreement_breakdown.py's study as a Thresh file of imported work."""
    from agreement_breakdown import study

    spans, texts, annotated = study(documents)
    entries = []
    for d in range(documents):
        doc = f"doc-{d}"
        segments = [texts[(doc, s)] for s in range(8)]
        starts = [sum(len(t) + 2 for t in segments[:s]) for s in range(8)]
        workers = sorted(w for w, docs in annotated.items() if doc in docs)
        edits = [
            {"category": s.category, "output_idx": [[starts[s.segment] + s.start, starts[s.segment] + s.end]],
             "annotators": [s.source]}
            for s in spans if s.document == doc
        ]  # fmt: skip
        entry = {"id": doc, "target": "\n\n".join(segments), "edits": edits}
        entries.append(entry | {"annotators": workers})
    path.write_text(json.dumps(entries), encoding="utf-8")


def gamma(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    path = folder / f"gamma-{args.documents}.json"
    gamma_study(path, args.documents)
    url = database(None, "gamma", folder)
    run(url, "db", "upgrade")
    run(url, "study", "create", "big", "--taxonomy", "taxonomies/snac.yaml",
        "--annotators-per-doc", "4", "--suggestions", "off")  # fmt: skip
    imported = run(url, "import", "big", str(path), "--format", "thresh", "--no-ner")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    profile = str(OUT / "scale-gamma-refresh.prof.txt") if args.profile else ""
    done = subprocess.run(
        [PYTHON, "-c", GAMMA, url, profile, SUBMIT], env=env, cwd=REPO, capture_output=True,
        text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    rows = [{**imported, "study": f"gamma {args.documents} documents"}]
    for line in done.stdout.strip().splitlines():
        rows.append({"study": f"gamma {args.documents} documents", **json.loads(line)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="what", required=True)
    grow = commands.add_parser("growth")
    grow.add_argument("--sizes", default="10000,100000")
    grow.add_argument("--postgres", action="store_true", help="a throw-away Postgres, not SQLite")
    shape = commands.add_parser("panel")
    shape.add_argument("--documents", type=int, default=1000)
    shape.add_argument("--raters", type=int, default=10)
    shape.add_argument("--marks", type=int, default=20)
    shape.add_argument("--per-rater", action="store_true", help="an entry per rater (MQM)")
    slow = commands.add_parser("gamma")
    slow.add_argument("--documents", type=int, default=1000)
    slow.add_argument("--profile", action="store_true", help="cProfile of the refresh")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=OUT) as scratch:
        rows = {"growth": growth, "panel": panel, "gamma": gamma}[args.what](args, Path(scratch))
    out = OUT / f"scale-{args.what}-{int(time.time())}.json"
    out.write_text(json.dumps(rows, indent=1))
    print(table([r for r in rows if "peak_mb" in r]))
    print(f"rows written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
