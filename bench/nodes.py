"""One web node against two: the same simulated crowd (bench/load.py's workers,
human pace) against one node straight on Postgres, as deployed on one machine, and against
the multi-node rig of tests/multinode/rig.py (two nodes behind HAProxy round-robin, through
PgBouncer in transaction mode with PREPARED_STATEMENTS=0, limits in Redis), runs
interleaved. Both have the same web processes in all (one node x 2, or two nodes x 1).

    .venv/bin/python bench/nodes.py --concurrency 300 --duration 40 --rounds 2

Prints, per run, p50/p99 per action (client side) and the server CPU per request and per
finished document, counting every server process: the nodes, Postgres, and for the rig
HAProxy, PgBouncer and Redis. Needs haproxy, pgbouncer and redis-server (Debian packages,
.ci/install-system-deps.sh) and the bench extra (psutil, httpx). Writes
bench/out/nodes-*.json. All on one machine, the load generator included: on a shared machine
say so, with the load average it prints.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from load import run_level  # noqa: E402
from load_harness import (  # noqa: E402
    OUT,
    Gunicorn,
    Pace,
    load_documents,
    prepare_study,
    process_cpu_seconds,
    start_postgres,
)

NODE_ENV = {"ARRIVAL_RATE_LIMIT": "1000000 per minute", "WEB_THREADS": "8"}


def postgres_cpu(cluster) -> float:
    pid = int((Path(cluster.data_dir) / "postmaster.pid").read_text().split()[0])
    return process_cpu_seconds(pid)


def one_node(cluster, template: str, workers: int):
    """A node of ``workers`` processes straight on Postgres (prepared statements on)."""
    from tests import pg_cluster

    url = pg_cluster.create_database(cluster, "bench_one_node", template)
    server = Gunicorn("app:create_app()", url, workers=workers, threads=8).start()
    return server, lambda: {"web": process_cpu_seconds(server.process.pid)}


def two_nodes(cluster, template: str, workers: int):
    from tests.multinode import rig as rig_module

    env = {**NODE_ENV, "WEB_CONCURRENCY": str(max(1, workers // 2))}
    rig = rig_module.start(cluster, template, env=env, check_ms=2000)  # as deployed

    def cpu() -> dict[str, float]:
        parts = {f"web {node.name}": process_cpu_seconds(node.process.pid) for node in rig.nodes}
        for name, process in zip(("pgbouncer", "redis", "haproxy"), rig.processes, strict=True):
            parts[name] = process_cpu_seconds(process.pid)
        return parts

    return rig, cpu


def measure(label: str, url: str, cpu, cluster, args, documents, pace) -> dict[str, Any]:
    before = {**cpu(), "postgres": postgres_cpu(cluster)}
    load_before = os.getloadavg()[0]
    stats = asyncio.run(
        run_level(
            url,
            "bench",
            documents,
            args.concurrency,
            args.duration,
            args.ramp,
            pace,
            f"{label}-{uuid.uuid4().hex[:6]}",
        )
    )
    after = {**cpu(), "postgres": postgres_cpu(cluster)}
    used = {name: round(after[name] - before[name], 2) for name in after}
    total = sum(used.values())
    summary = stats.summary()
    steady = stats.steady(args.ramp + 5)
    row = {
        "label": label,
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "requests": summary["requests"],
        "documents": summary["documents"],
        "errors": summary["errors"],
        "cpu_s": used,
        "cpu_ms_per_request": round(total * 1000 / max(1, summary["requests"]), 3),
        "cpu_ms_per_document": round(total * 1000 / max(1, summary["documents"]), 1),
        "p50_p99_ms": {name: (row["p50_ms"], row["p99_ms"]) for name, row in steady.items()},
    }
    print(
        f"{label}: {row['requests']} requests, {row['documents']} documents, "
        f"{row['errors']} errors; CPU {total:.1f} s = {row['cpu_ms_per_request']} ms/request, "
        f"{row['cpu_ms_per_document']} ms/document ({used}); load {row['load_average']}"
    )
    print("   p50/p99 ms: " + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in row["p50_p99_ms"].items()))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=300)
    parser.add_argument("--duration", type=float, default=40)
    parser.add_argument("--ramp", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="web processes in all")
    parser.add_argument("--think-scale", type=float, default=1.0)
    parser.add_argument("--documents", type=int, default=100)
    args = parser.parse_args(argv)

    OUT.mkdir(parents=True, exist_ok=True)
    documents = load_documents(args.documents, 10)
    pace = Pace(scale=args.think_scale)
    cluster = start_postgres(durable=True)
    from tests import pg_cluster

    rows: list[dict[str, Any]] = []
    try:
        template = "bench_nodes_template"
        prepare_study(pg_cluster.create_database(cluster, template), "bench", documents)
        server, server_cpu = one_node(cluster, template, args.workers)
        rig, rig_cpu = two_nodes(cluster, template, args.workers)
        try:
            print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs")
            for round_number in range(args.rounds):
                rows.append(
                    measure(
                        f"one node r{round_number}",
                        server.url,
                        server_cpu,
                        cluster,
                        args,
                        documents,
                        pace,
                    )
                )
                rows.append(
                    measure(
                        f"two nodes r{round_number}",
                        rig.router,
                        rig_cpu,
                        cluster,
                        args,
                        documents,
                        pace,
                    )
                )
        finally:
            server.stop()
            rig.stop()
    finally:
        cluster.stop()
    path = OUT / f"nodes-{int(time.time())}.json"
    path.write_text(json.dumps({"args": vars(args), "runs": rows}, indent=1))
    print(f"figures written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
