"""Big export: a study with 1,000,000 annotations, exported as CSV through the command line
and through the researchers' HTTP download, timed, with the exporter's peak memory.

    .venv/bin/python bench/export_big.py                       # 1,000,000 annotations
    .venv/bin/python bench/export_big.py --annotations 100000  # a quick check
    # every format at several sizes, this code and an older checkout's (before)
    .venv/bin/python bench/export_big.py --sizes 10000,100000 --documents-per 60 \
        --formats csv,snac,thresh,labelstudio,brat,parquet --http-formats parquet \
        [--code /tmp/main-checkout]

Starts its own Postgres (tests/pg_cluster.py) and fills it with COPY (about a minute), then:
1. ``marginalia export big --format csv --out FILE`` under ``/usr/bin/time -v`` (wall time,
   maximum resident set size of the process);
2. gunicorn (gunicorn.conf.py, one process) and GET /admin/studies/big/export.csv as a logged-in
   researcher: time to the first byte, total time, the serving process's peak RSS (sampled).
Targets: under 15 s and under 200 MB. Figures go to bench/out/export-*.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_harness import (  # noqa: E402
    BIN,
    OUT,
    REPO,
    Gunicorn,
    fresh_database,
    load_documents,
    prepare_study,
    start_postgres,
)

TARGET_SECONDS = 15.0
TARGET_MB = 200.0
CATEGORIES_SINGLE = ["CharE", "RefE", "SceneE", "GramE"]
CATEGORIES_PAIRED = ["InconE", "RepE"]
COPY_CHUNK = 100_000


def populate(url: str, annotations: int, documents: int, per_assignment: int) -> dict[str, int]:
    """Fill study ``big`` with submitted assignments holding ``annotations`` live annotations
    (plus 2% removed ones, which the export must leave out), using COPY."""
    import psycopg2

    docs = load_documents(documents, 10)
    prepare_study(url, "big", docs)
    dsn = url.replace("postgresql+psycopg2://", "postgresql://", 1)
    connection = psycopg2.connect(dsn)
    cursor = connection.cursor()
    cursor.execute("SELECT id FROM studies WHERE slug = 'big'")
    study_id = cursor.fetchone()[0]
    cursor.execute(
        "SELECT id, external_id FROM documents WHERE study_id = %s ORDER BY position", (study_id,)
    )
    doc_rows = cursor.fetchall()
    texts = dict(docs)
    assignments = -(-annotations // per_assignment)
    buffer = io.StringIO()
    for n in range(assignments):
        doc_id = doc_rows[n % len(doc_rows)][0]
        buffer.write(
            f"tok-{n:08d}\t{study_id}\t{doc_id}\tworker-{n // len(doc_rows):05d}\t"
            f"generic\t{{}}\tsubmitted\t0\tMG-BENCH-{n:06d}\t{{}}\t"
            "2026-01-01 00:00:00+00\t2026-01-01 01:00:00+00\t2026-01-01 01:00:00+00\n"
        )
    buffer.seek(0)
    cursor.copy_expert(
        "COPY assignments (token, study_id, document_id, worker_id, platform, platform_data, "
        "status, current_segment, completion_code, scores, created_at, last_seen_at, "
        "submitted_at) FROM STDIN",
        buffer,
    )
    cursor.execute(
        "SELECT a.id, d.external_id FROM assignments a JOIN documents d "
        "ON d.id = a.document_id WHERE a.study_id = %s ORDER BY a.id",
        (study_id,),
    )
    assignment_rows = cursor.fetchall()

    columns = (
        "assignment_id, segment, start_offset, end_offset, text, category, "
        "paired_segment, paired_start, paired_end, paired_text, comment, client_id, "
        "created_at, removed_at"
    )
    total = int(annotations * 1.02)
    written = 0
    while written < total:
        buffer = io.StringIO()
        for n in range(written, min(total, written + COPY_CHUNK)):
            assignment_id, external_id = assignment_rows[
                (n // per_assignment) % len(assignment_rows)
            ]
            segments = texts[external_id]
            segment = n % len(segments)
            words = segments[segment].split(" ")
            first = n % max(1, len(words) - 3)
            span = " ".join(words[first : first + 1 + n % 3]) or segments[segment][:1]
            start = segments[segment].find(span)
            removed = "2026-01-01 00:30:00+00" if n % 51 == 50 else "\\N"
            if n % 4 == 0 and segment > 0:
                paired_text = segments[segment - 1][:12]
                paired = f"{CATEGORIES_PAIRED[n % 2]}\t{segment - 1}\t0\t{len(paired_text)}\t{paired_text}"
            else:
                paired = f"{CATEGORIES_SINGLE[n % 4]}\t\\N\t\\N\t\\N\t\\N"
            comment = 'odd, "quoted" comment' if n % 97 == 0 else ""
            buffer.write(
                f"{assignment_id}\t{segment}\t{start}\t{start + len(span)}\t"
                f"{_tsv(span)}\t{paired}\t{comment}\tc{n}\t"
                f"2026-01-01 00:{n % 60:02d}:00+00\t{removed}\n"
            )
        buffer.seek(0)
        cursor.copy_expert(f"COPY annotations ({columns}) FROM STDIN", buffer)
        written = min(total, written + COPY_CHUNK)
        print(f"\r  {written:,} annotation rows copied", end="", flush=True)
    print()
    connection.commit()
    connection.autocommit = True
    # What autovacuum would do soon after a bulk load; measured exports should not race it.
    cursor.execute("VACUUM (ANALYZE)")
    cursor.execute("CHECKPOINT")
    cursor.execute(
        "SELECT count(*) FROM annotations a JOIN assignments s ON s.id = a.assignment_id "
        "WHERE s.study_id = %s AND a.removed_at IS NULL",
        (study_id,),
    )
    live = cursor.fetchone()[0]
    connection.close()
    return {
        "documents": len(doc_rows),
        "assignments": len(assignment_rows),
        "live_annotations": live,
        "removed_annotations": total - live,
    }


def _tsv(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def export_cli(url: str, out: Path, fmt: str = "csv", code: Path | None = None) -> dict[str, Any]:
    """``marginalia export`` under /usr/bin/time -v: wall seconds, peak RSS, rows (csv) or
    bytes written. ``code``: an older checkout's app (``python -m app.cli`` from there)."""
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "bench"}
    command = [str(BIN / "marginalia"), "export", "big", "--format", fmt, "--out", str(out)]
    cwd = REPO
    if code is not None:  # run from there: ``-m`` puts the working folder first on the path
        env["PYTHONPATH"], cwd = str(code), code
        command = [str(BIN / "python"), "-m", "app.cli", *command[1:]]
    timer = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
    started = time.perf_counter()
    done = subprocess.run([*timer, *command], env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    peak_kb = None
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if match:
        peak_kb = int(match.group(1))
    else:  # no /usr/bin/time: the largest child this process has waited for
        import resource

        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if out.is_dir():
        files = [f for f in out.rglob("*") if f.is_file()]
        return {
            "seconds": round(seconds, 2),
            "peak_rss_mb": round(peak_kb / 1024, 1),
            "files": len(files),
            "bytes": sum(f.stat().st_size for f in files),
        }
    with out.open("rb") as handle:
        rows = sum(1 for _ in handle) - 1
    return {
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "rows": rows,
        "bytes": out.stat().st_size,
    }


class PeakRss:
    """Samples the resident memory of a set of processes every 50 ms."""

    def __init__(self, pids: list[int]):
        import psutil

        self.processes = [psutil.Process(p) for p in pids]
        self.peak = 0
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while self.running:
            for process in self.processes:
                with contextlib.suppress(Exception):  # a process that exits is skipped
                    self.peak = max(self.peak, process.memory_info().rss)
            time.sleep(0.05)

    def stop(self) -> float:
        self.running = False
        self.thread.join()
        return self.peak / 2**20


def export_http(url: str, fmt: str = "csv") -> dict[str, Any]:
    """The researchers' download over HTTP from the web server: first byte, total, peak RSS
    (``fmt`` of several files: the zip)."""
    import httpx

    from app import create_app
    from app.db import session_scope
    from app.researchers.accounts import create_researcher

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
    with contextlib.suppress(Exception), app.app_context(), session_scope() as session:
        create_researcher(session, "bench@example.org", "bench-password-123", role="admin")
    app.extensions["db_engine"].dispose()
    server = Gunicorn("app:create_app()", url, workers=1, threads=4).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60, follow_redirects=True) as client:
            form = client.get("/admin/login").text
            token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', form)
            login = client.post(
                "/admin/login",
                data={
                    "email": "bench@example.org",
                    "password": "bench-password-123",
                    "csrf_token": token.group(1) if token else "",
                },
            )
            login.raise_for_status()
            sampler = PeakRss(server.worker_pids())
            started = time.perf_counter()
            first_byte = None
            size = 0
            lines = 0
            with client.stream("GET", f"/admin/studies/big/export.{fmt}") as response:
                response.raise_for_status()
                for chunk in response.iter_bytes():
                    if first_byte is None:
                        first_byte = time.perf_counter() - started
                    size += len(chunk)
                    lines += chunk.count(b"\n")
            seconds = time.perf_counter() - started
            peak = sampler.stop()
    finally:
        server.stop()
    return {
        "seconds": round(seconds, 2),
        "first_byte_s": round(first_byte or 0, 3),
        "peak_rss_mb": round(peak, 1),
        "rows": lines - 1,
        "bytes": size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CSV export of a 1,000,000-annotation study")
    parser.add_argument("--annotations", type=int, default=1_000_000)
    parser.add_argument("--sizes", default="", help="several sizes, e.g. 10000,100000")
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument(
        "--documents-per", type=int, default=0, help="one document per N annotations"
    )
    parser.add_argument("--per-assignment", type=int, default=200)
    parser.add_argument("--formats", default="csv")
    parser.add_argument("--http-formats", default="csv")
    parser.add_argument("--code", type=Path, help="also export with this older checkout")
    parser.add_argument("--skip-http", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",") if n] or [args.annotations]
    formats = [f for f in args.formats.split(",") if f]
    http_formats = [] if args.skip_http else [f for f in args.http_formats.split(",") if f]

    OUT.mkdir(parents=True, exist_ok=True)
    cluster = start_postgres(durable=False)
    results: dict[str, Any] = {"args": {**vars(args), "code": str(args.code)}, "runs": []}
    try:
        for size in sizes:
            documents = max(1, size // args.documents_per) if args.documents_per else args.documents
            per_assignment = min(args.per_assignment, max(1, size // (documents * 3)))
            url = fresh_database(cluster, "bench_export")
            started = time.perf_counter()
            data = populate(url, size, documents, per_assignment)
            data["fill_seconds"] = round(time.perf_counter() - started, 1)
            print(f"study 'big': {data}")
            for fmt in formats:
                for code in (None, args.code) if args.code else (None,):
                    out = OUT / f"export-big.{fmt}"
                    subprocess.run(["rm", "-rf", str(out)], check=True)
                    load = os.getloadavg()[0]
                    figures = export_cli(url, out, fmt, code)
                    subprocess.run(["rm", "-rf", str(out)], check=True)
                    run = {"size": size, "format": fmt, "way": "cli", "load": round(load, 1)}
                    run |= {"code": "before" if code else "this", **figures, "data": data}
                    results["runs"].append(run)
                    print(json.dumps({k: v for k, v in run.items() if k != "data"}), flush=True)
            for fmt in http_formats:
                load = os.getloadavg()[0]
                run = {"size": size, "format": fmt, "way": "http", "load": round(load, 1)}
                run |= {"code": "this", **export_http(url, fmt)}
                results["runs"].append(run)
                print(json.dumps(run), flush=True)
    finally:
        cluster.stop()
    for r in results["runs"]:
        if r["format"] == "csv" and r["size"] == 1_000_000:
            holds = r["seconds"] < TARGET_SECONDS and r["peak_rss_mb"] < TARGET_MB
            print(
                f"{r['way']}: {r.get('rows', 0):,} rows in {r['seconds']} s, peak RSS "
                f"{r['peak_rss_mb']} MB -> target (<{TARGET_SECONDS:.0f} s, <{TARGET_MB:.0f} MB) "
                f"{'HOLDS' if holds else 'MISSED'}"
            )
    path = OUT / f"export-{int(time.time())}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"figures written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
