"""Speed of entity cues on all 120 SNaC summaries (train.json + dev.json).

1. In process: load the spaCy pipeline, then NER + grouping of every segment
   (``app.entities.find_entities``), wall and CPU seconds.
2. End to end, when the ``marginalia`` command is installed: a fresh SQLite database,
   ``marginalia db upgrade``, ``marginalia study create``, then ``marginalia import ... --format
   snac`` of both files (timed: process start, parsing, model load, NER, grouping, storing).

Target: import + NER of the 120 summaries in under 30 s on the 2-core machine.

    .venv/bin/python bench/entity_speed.py [--data DIR] [--batch-size N] [--skip-import]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.entities import find_entities, load_pipeline  # noqa: E402

DEFAULT_DATA = Path(os.environ.get("MARGINALIA_SHARED_DATA", ROOT / ".." / "shared" / "data"))
TARGET_S = 30.0


def load_segments(paths: list[Path]) -> list[list[str]]:
    documents = []
    for path in paths:
        for body in json.loads(path.read_text()).values():
            documents.append([body[k]["text"] for k in sorted(body, key=int)])
    return documents


def in_process(documents: list[list[str]], batch_size: int) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    nlp = load_pipeline(os.environ.get("SPACY_MODEL"))
    load_wall = time.perf_counter() - wall
    if nlp is None:
        print("no spaCy model could be loaded")
        return
    wall, cpu = time.perf_counter(), time.process_time()
    results = find_entities(documents, nlp, batch_size=batch_size, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    segments = sum(len(d) for d in documents)
    entities = sum(len(r.entities) for r in results)
    mentions = sum(len(r.mentions) for r in results)
    print(
        f"in process: model load {load_wall:.1f} s; NER + grouping of {len(documents)} "
        f"summaries ({segments} segments) {wall:.1f} s wall, {cpu:.1f} s CPU "
        f"({segments / wall:.0f} segments/s, batch size {batch_size}, pipes {nlp.pipe_names})"
        f" -> {entities} entities, {mentions} mentions"
    )


def marginalia_command() -> list[str] | None:
    exe = Path(sys.executable).with_name("marginalia")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("marginalia")
    return [found] if found else None


def end_to_end(paths: list[Path]) -> None:
    cli = marginalia_command()
    if cli is None:
        print("end to end: skipped (the marginalia command is not installed)")
        return
    help_text = subprocess.run(cli + ["--help"], capture_output=True, text=True).stdout
    if "import" not in help_text:
        print("end to end: skipped (marginalia has no import command yet)")
        return
    with tempfile.TemporaryDirectory(prefix="marginalia-bench-") as tmp:
        merged: dict = {}
        for path in paths:
            merged.update(json.loads(path.read_text()))
        data_file = Path(tmp) / "snac-train-dev.json"
        data_file.write_text(json.dumps(merged))
        db_file = Path(tmp) / "bench.db"
        env = dict(os.environ, DATABASE_URL=f"sqlite:///{db_file}")

        def step(args: list[str]) -> tuple[float, float]:
            """Run one marginalia command; its wall and CPU (user + system) seconds."""
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(cli + args, env=env, cwd=ROOT, capture_output=True, text=True)
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            if done.returncode != 0:
                raise SystemExit(f"marginalia {' '.join(args)} failed:\n{done.stderr}{done.stdout}")
            last = (done.stdout.strip().splitlines() or [""])[-1]
            print(
                f"  marginalia {' '.join(args[:2])}: {elapsed:.1f} s wall, {cpu:.1f} s CPU ({last})"
            )
            return elapsed, cpu

        print(f"end to end into a fresh SQLite database ({len(merged)} summaries):")
        step(["db", "upgrade"])
        step(["study", "create", "entity-bench", "--taxonomy", "taxonomies/snac.yaml"])
        seconds, cpu = step(["import", "entity-bench", str(data_file), "--format", "snac"])
        with sqlite3.connect(db_file) as con:
            entities = con.execute("select count(*) from entities").fetchone()[0]
            mentions = con.execute("select count(*) from entity_mentions").fetchone()[0]
            segments = con.execute("select count(*) from segments").fetchone()[0]
        verdict = "under" if seconds < TARGET_S else "OVER"
        print(
            f"end to end: import + NER of {len(merged)} summaries ({segments} segments) "
            f"{seconds:.1f} s wall, {cpu:.1f} s CPU ({verdict} the {TARGET_S:.0f} s target); "
            f"stored {entities} entities, {mentions} mentions"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--skip-import", action="store_true")
    args = parser.parse_args()
    paths = [args.data / "snac" / "train.json", args.data / "snac" / "dev.json"]
    if not all(p.exists() for p in paths):
        print(f"SNaC data not found under {args.data / 'snac'}", file=sys.stderr)
        return 1
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
        "(other jobs slow every figure below)"
    )
    in_process(load_segments(paths), args.batch_size)
    if not args.skip_import:
        end_to_end(paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
