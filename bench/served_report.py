"""The served report at scale: a study of N annotations on Postgres (filled by COPY,
bench/export_big.py), then

1. the recomputation job (app/quality/figure_jobs.py, the report and its figures brought current;
   ``--figures``: a second run, nothing changed) in a subprocess under ``/usr/bin/time -v``: wall time, peak RSS,
   the stored report's size (``--profile-job``: cProfile's top functions into bench/out/);
2. the change check of the served path (app/models/changes.py ``latest``) and the small-study
   test (app/quality/served.py ``is_small``), in process;
3. over HTTP (the deployed web server, one process): the dashboard page and report.json served
   from the store, each fetched 5 times (median and slowest), then the dashboard and
   progress.json each just after a change to the counted work, 5 times;
4. the parquet export (``marginalia export --format parquet``, peak RSS) and its HTTP download.

    .venv/bin/python bench/served_report.py --sizes 100000
    .venv/bin/python bench/served_report.py --sizes 1000000 --profile  # a dashboard request

Every figure carries the load average (``uptime``) when it was taken: the machine is shared.
Figures go to bench/out/served-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from export_big import export_cli, export_http, populate  # noqa: E402
from load_harness import BIN, OUT, REPO, Gunicorn, fresh_database, start_postgres  # noqa: E402

JOB = r"""
import cProfile, io, json, pstats, sys, time
from sqlalchemy import select
from app import create_app
from app.db import session_scope
from app.models import FigureJob, Study
from app.quality.figures import enqueue
from app.quality.figure_jobs import run_next
url, figures, profile = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
with app.app_context():
    with session_scope() as session:
        # every job brings the figures current too (figures: kept for the command line)
        enqueue(session, session.scalar(select(Study).where(Study.slug == "big")), False)
    session = app.extensions["db_sessionmaker"]()
    profiler = cProfile.Profile() if profile else None
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    assert run_next(session, "bench")
    if profiler:
        profiler.disable()
    seconds = time.perf_counter() - started
    session.close()
    with session_scope() as session:
        row = session.scalar(select(FigureJob))
        out = {"seconds": round(seconds, 2), "report_seconds": row.report_seconds,
               "report_bytes": len(row.report or ""), "status": row.status,
               "error": (row.last_error or "")[-300:] or None}
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(30)
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
        open(profile, "w").write(text.getvalue())
    print(json.dumps(out))
"""


def _annotators(url: str, per_document: int) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE studies SET annotators_per_doc = :n WHERE slug = 'big'"),
            {"n": per_document},
        )
    engine.dispose()


def load() -> float:
    return round(os.getloadavg()[0], 2)


def job(url: str, figures: bool, profile: Path | None) -> dict[str, Any]:
    """The recomputation job in its own process under /usr/bin/time -v."""
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "bench"}
    command = [str(BIN / "python"), "-c", JOB, url, "1" if figures else "0", str(profile or "")]
    timer = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
    before = load()
    done = subprocess.run([*timer, *command], env=env, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    found = json.loads(done.stdout.strip().splitlines()[-1])
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    peak = round(int(match.group(1)) / 1024, 1) if match else None
    return {**found, "peak_rss_mb": peak, "load": before, "load_after": load()}


def checks(url: str) -> dict[str, Any]:
    """The served path's own reads, in process: the change look-up and the small-study test."""
    from sqlalchemy import select

    from app import create_app
    from app.db import session_scope
    from app.models import Study, changes
    from app.quality.served import is_small

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
    times: dict[str, list[float]] = {"latest_ms": [], "is_small_ms": []}
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "big"))
        for _ in range(5):
            started = time.perf_counter()
            changes.latest(session, study.id)
            times["latest_ms"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            small = is_small(session, study)
            times["is_small_ms"].append((time.perf_counter() - started) * 1000)
    app.extensions["db_engine"].dispose()
    return {k: round(statistics.median(v), 2) for k, v in times.items()} | {"small": small}


def profile_dashboard(url: str, path: Path) -> None:
    """cProfile of one dashboard request in process (Flask's test client)."""
    import cProfile
    import io
    import pstats

    from app import create_app

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "WTF_CSRF_ENABLED": False})
    client = app.test_client()
    form = client.get("/admin/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', form)
    data = {"email": "bench@example.org", "password": "bench-password-123"}
    client.post("/admin/login", data={**data, "csrf_token": token.group(1) if token else ""})
    client.get("/admin/studies/big")
    profiler = cProfile.Profile()
    profiler.enable()
    client.get("/admin/studies/big")
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
    path.write_text(text.getvalue())
    app.extensions["db_engine"].dispose()


def served_http(url: str) -> dict[str, Any]:
    """The dashboard and report.json from the deployed web server: median and slowest of 5."""
    import httpx

    from app import create_app
    from app.db import session_scope
    from app.researchers.accounts import create_researcher

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
    try:
        with app.app_context(), session_scope() as session:
            create_researcher(session, "bench@example.org", "bench-password-123", role="admin")
    except Exception:  # noqa: BLE001 - made by an earlier run
        pass
    app.extensions["db_engine"].dispose()
    server = Gunicorn("app:create_app()", url, workers=1, threads=4).start()
    out: dict[str, Any] = {"load": load()}
    try:
        with httpx.Client(base_url=server.url, timeout=600, follow_redirects=True) as client:
            form = client.get("/admin/login").text
            token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', form)
            client.post(
                "/admin/login",
                data={
                    "email": "bench@example.org",
                    "password": "bench-password-123",
                    "csrf_token": token.group(1) if token else "",
                },
            ).raise_for_status()
            for name, path in (
                ("report_json", "/admin/studies/big/report.json"),
                ("dashboard", "/admin/studies/big"),
            ):
                times, size = [], 0
                for _ in range(5):
                    started = time.perf_counter()
                    answer = client.get(path)
                    times.append((time.perf_counter() - started) * 1000)
                    answer.raise_for_status()
                    size = len(answer.content)
                    if name == "report_json":
                        out["served"] = answer.json()["served"]
                    else:
                        (OUT / "served-dashboard.html").write_bytes(answer.content)
                out[name] = {
                    "median_ms": round(statistics.median(times), 1),
                    "max_ms": round(max(times), 1),
                    "bytes": size,
                }
            out.update(_after_changes(client, url))
    finally:
        server.stop()
    out["load_after"] = load()
    return out


def _after_changes(client, url: str) -> dict[str, Any]:
    """The dashboard and progress.json just after a change to the counted work (a row in the
    change log, as a submit writes): the Progress card counts the submitted annotations again
    (app/web/admin/progress.py), the page is served stale with a recomputation queued."""
    import psycopg2

    out: dict[str, Any] = {}
    connection = psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://", 1))
    connection.autocommit = True
    try:
        for name, path in (
            ("dashboard_after_change", "/admin/studies/big"),
            ("progress_after_change", "/admin/studies/big/progress.json"),
        ):
            times = []
            for _ in range(5):
                with connection.cursor() as cursor:
                    cursor.execute(
                        "INSERT INTO work_changes (study_id, reason, created_at) "
                        "SELECT id, 'bench', now() FROM studies WHERE slug = 'big'"
                    )
                started = time.perf_counter()
                client.get(path).raise_for_status()
                times.append((time.perf_counter() - started) * 1000)
            out[name] = {
                "median_ms": round(statistics.median(times), 1),
                "max_ms": round(max(times), 1),
            }
    finally:
        connection.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the served report at scale")
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--documents-per", type=int, default=100)
    parser.add_argument("--per-assignment", type=int, default=20)
    parser.add_argument("--figures", action="store_true", help="also time the slow figures")
    parser.add_argument("--profile", action="store_true", help="cProfile one dashboard request")
    parser.add_argument("--profile-job", action="store_true", help="run the job under cProfile")
    parser.add_argument("--skip-parquet", action="store_true")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    cluster = start_postgres(durable=False)
    results: dict[str, Any] = {"args": vars(args), "runs": []}
    try:
        for size in [int(n) for n in args.sizes.split(",") if n]:
            documents = max(1, size // args.documents_per)
            url = fresh_database(cluster, "bench_served")
            started = time.perf_counter()
            data = populate(url, size, documents, args.per_assignment)
            data["fill_seconds"] = round(time.perf_counter() - started, 1)
            per_document = max(1, data["assignments"] // data["documents"])
            _annotators(url, per_document)  # prepare_study's 1,000 would draw 1,000 pips a box
            run: dict[str, Any] = {"size": size, "data": data}
            print(f"study 'big': {data}", flush=True)
            profile = OUT / f"served-profile-{size}.txt" if args.profile_job else None
            run["job"] = job(url, False, profile)
            print("job", json.dumps(run["job"]), flush=True)
            run["checks"] = checks(url)
            print("checks", json.dumps(run["checks"]), flush=True)
            run["http"] = served_http(url)
            print("http", json.dumps(run["http"]), flush=True)
            if args.profile:
                profile_dashboard(url, OUT / f"served-dashboard-profile-{size}.txt")
            if not args.skip_parquet:
                out = OUT / "served-export.parquet"
                subprocess.run(["rm", "-rf", str(out)], check=True)
                run["parquet_cli"] = {"load": load(), **export_cli(url, out, "parquet")}
                subprocess.run(["rm", "-rf", str(out)], check=True)
                print("parquet cli", json.dumps(run["parquet_cli"]), flush=True)
                run["parquet_http"] = {"load": load(), **export_http(url, "parquet")}
                print("parquet http", json.dumps(run["parquet_http"]), flush=True)
            if args.figures:
                run["job_figures"] = job(url, True, None)
                print("job with figures", json.dumps(run["job_figures"]), flush=True)
            results["runs"].append(run)
    finally:
        cluster.stop()
    path = OUT / f"served-{int(time.time())}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"figures written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
