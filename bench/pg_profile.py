"""Postgres per finished document, statement by statement (pg_stat_statements), for runs of
bench/load.py's simulated workers one after another on one database: the first run on a
fresh database, then again.

    PYTHONPATH=$PWD .venv/bin/python bench/pg_profile.py --runs 2 --concurrency 32 --seconds 20

Per run: documents, Postgres CPU per document (from /proc), and per statement: calls per
document, mean execution time in µs, rows per call, the share of the run's execution time.
``--analyze-first`` runs ANALYZE on the fresh database before the first run (the fresh
database's first run is what it changes). The cluster is the suite's (fsync on) with
pg_stat_statements loaded (``shared_preload_libraries``, then a restart).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_harness import (  # noqa: E402
    Gunicorn,
    Pace,
    fresh_database,
    load_documents,
    prepare_study,
    process_cpu_seconds,
    start_postgres,
)


def with_pg_stat_statements(cluster) -> None:
    """Load pg_stat_statements into the running cluster (a restart keeps its options)."""
    import psycopg2

    connection = psycopg2.connect(cluster.url)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    connection.close()
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    log = os.path.join(os.path.dirname(cluster.data_dir), "log")
    subprocess.run(  # the server must not inherit a pipe of ours: its output goes to the log
        [*as_user, f"{cluster.bin_dir}/pg_ctl", "-D", cluster.data_dir, "-l", log, "-w", "restart"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _connect(url: str):
    import psycopg2

    return psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://"))


def statements(url: str) -> list[tuple]:
    connection = _connect(url)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT query, calls, total_exec_time, rows FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "ORDER BY total_exec_time DESC"
        )
        rows = cursor.fetchall()
    connection.close()
    return rows


def table_stats(url: str) -> list[tuple]:
    """Per hot table: rows inserted, updated, of which HOT (no index touched), dead rows,
    and whether autovacuum / autoanalyze has run yet."""
    connection = _connect(url)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup, "
            "autovacuum_count, autoanalyze_count FROM pg_stat_user_tables "
            "WHERE n_tup_ins + n_tup_upd > 0 ORDER BY n_tup_ins + n_tup_upd DESC LIMIT 8"
        )
        rows = cursor.fetchall()
    connection.close()
    return rows


def reset(url: str) -> None:
    connection = _connect(url)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        cursor.execute("SELECT pg_stat_statements_reset()")
    connection.close()


def analyze(url: str) -> None:
    connection = _connect(url)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--top", type=int, default=14)
    parser.add_argument("--analyze-first", action="store_true")
    parser.add_argument(
        "--restart",
        action="store_true",
        help="a new web server (new database connections) for every run",
    )
    parser.add_argument(
        "--storage",
        default="",
        help="SQL run on the fresh database first (e.g. ALTER TABLE … SET (fillfactor = 70))",
    )
    args = parser.parse_args(argv)
    from load import run_level

    cluster = start_postgres(durable=True)
    server = None
    try:
        with_pg_stat_statements(cluster)
        url = fresh_database(cluster, "pg_profile")
        documents = load_documents(args.documents, 10)
        prepare_study(url, "bench", documents)
        if args.analyze_first:
            analyze(url)
        if args.storage:
            connection = _connect(url)
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute(args.storage)
            connection.close()
        server = Gunicorn("app:create_app()", url).start()
        postmaster = int((Path(cluster.data_dir) / "postmaster.pid").read_text().split()[0])
        for run in range(args.runs):
            if args.restart and run:
                server.stop()
                server = Gunicorn("app:create_app()", url).start()
            reset(url)
            before = process_cpu_seconds(postmaster)
            load = os.getloadavg()[0]
            stats = asyncio.run(
                run_level(
                    server.url,
                    "bench",
                    documents,
                    args.concurrency,
                    args.seconds,
                    2,
                    Pace(scale=0),
                    f"r{run}-{uuid.uuid4().hex[:6]}",
                )  # fmt: skip
            )
            cpu = process_cpu_seconds(postmaster) - before
            n = stats.documents or 1
            rows = statements(url)
            total = sum(r[2] for r in rows) or 1
            print(
                f"\n== run {run + 1} ({'fresh database' if run == 0 else 'again'}): "
                f"{stats.documents} documents, {stats.documents / stats.elapsed:.1f}/s, "
                f"Postgres CPU {1000 * cpu / n:.2f} ms per document "
                f"(executor time {total / n:.2f} ms); load {load:.1f}",
                flush=True,
            )
            print(f"   {'calls/doc':>9} {'µs/call':>8} {'rows/call':>9} {'share':>6}  statement")
            for query, calls, seconds_ms, count in rows[: args.top]:
                text = " ".join(query.split())[:110]
                print(
                    f"   {calls / n:9.2f} {1000 * seconds_ms / calls:8.1f} "
                    f"{count / calls:9.2f} {100 * seconds_ms / total:5.1f}%  {text}"
                )
            print(f"   {'table':<18} {'inserted':>9} {'updated':>8} {'HOT':>8} {'dead':>7} vacuums")
            for name, ins, upd, hot, dead, vacuums, analyzes in table_stats(url):
                print(
                    f"   {name:<18} {ins:9d} {upd:8d} {hot:8d} {dead:7d} "
                    f"{vacuums} (analyzed {analyzes})"
                )
            time.sleep(1)
    finally:
        if server is not None:
            server.stop()
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
