"""Load benchmark: N simulated crowd workers against the web server (granian, or gunicorn with BENCH_SERVER=gunicorn) + Postgres on this machine.

Each simulated worker opens an assignment, loads the annotate page's data, reads the document
segment by segment with human-like think time, adds annotations (about one per segment, a
quarter of them paired with an earlier span), takes some back, stores its position on every
Next, sometimes reloads the page, and submits; then it takes another document. Its hint
events, active seconds and heartbeats follow the page's request pattern (bench/page_pattern.py:
``--pattern page``, the page now, or ``every-move`` and ``two-requests``, its older patterns), with
``--hints`` detector suggestions shown on each segment.

    .venv/bin/python bench/load.py --concurrency 50,150,300 --duration 60
    .venv/bin/python bench/load.py --concurrency 20 --duration 10       # a quick check
    .venv/bin/python bench/load.py --concurrency 20 --duration 30 --pattern two-requests

Starts its own Postgres (tests/pg_cluster.py, fsync on) and gunicorn (gunicorn.conf.py) and
stops them at the end. Prints requests/s, documents/s, p50/p99 per endpoint (client side, and
as gunicorn measured them), errors; writes the figures to bench/out/load-*.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_harness import (  # noqa: E402
    OUT,
    REMOVE_PROBABILITY,
    Gunicorn,
    HttpResponse,
    MiniHttp,
    Pace,
    Stats,
    choose_count,
    fresh_database,
    load_documents,
    prepare_study,
    print_summary,
    random_annotation,
    renice_servers,
    server_cpu_split,
    server_latencies,
    start_postgres,
)
from page_pattern import (  # noqa: E402
    PATTERNS,
    PageBookkeeping,
    hints_by_segment,
    per_document,
    store_hints,
)

RELOAD_PROBABILITY = 0.05  # per segment: the worker reloads the page (GET the assignment)
TARGET_MS = 20.0
TARGET_ENDPOINTS = ("add", "remove", "get")


class Caller:
    """Sends one request on a worker's connection, measures it, retries failures like the
    page's outbox (the same body, so the same client_id)."""

    def __init__(self, stats: Stats, deadline: float, pattern: str = "page"):
        self.stats, self.deadline, self.pattern = stats, deadline, pattern
        self.documents: list[Counter] = []  # each submitted document's requests by endpoint
        # what the server acknowledged: the ids of stored adds, and of removed annotations
        self.acked_adds: list[int] = []
        self.acked_removes: list[int] = []

    async def __call__(
        self,
        http: MiniHttp,
        endpoint: str,
        method: str,
        path: str,
        expect: tuple[int, ...],
        body: Any = None,
        tally: Counter | None = None,
    ) -> HttpResponse | None:
        for attempt in range(4):
            if tally is not None:
                tally[endpoint] += 1
            started = time.perf_counter()
            try:
                response = await http.request(method, path, body)
            except (ConnectionError, OSError) as exc:
                self.stats.error(endpoint, str(exc))
                self.stats.retries += 1
                await asyncio.sleep(0.2 * (attempt + 1))
                continue
            self.stats.record(endpoint, time.perf_counter() - started)
            if response.status_code in expect or (attempt and response.status_code == 200):
                if endpoint == "add" and response.status_code in (200, 201):
                    self.acked_adds.append(response.json()["id"])
                elif endpoint == "remove" and response.status_code == 204:
                    self.acked_removes.append(int(path.rsplit("/", 1)[1]))
                return response
            self.stats.error(endpoint, f"HTTP {response.status_code} {response.text[:200]}")
            if response.status_code < 500:
                return None
            self.stats.retries += 1
            await asyncio.sleep(0.2 * (attempt + 1))
        return None


async def simulated_worker(
    number: int,
    base_url: str,
    caller: Caller,
    study: str,
    documents: list[tuple[str, list[str]]],
    pace: Pace,
    tag: str,
    start_delay: float,
) -> None:
    rng = random.Random(f"{tag}-{number}")
    await asyncio.sleep(start_delay)
    host, port = base_url.removeprefix("http://").split(":")
    http = MiniHttp(host, int(port))
    try:
        await _work(rng, http, caller, study, documents, pace, tag, number)
    finally:
        await http.close()


async def _work(
    rng: random.Random,
    http: MiniHttp,
    caller: Caller,
    study: str,
    documents: list[tuple[str, list[str]]],
    pace: Pace,
    tag: str,
    number: int,
) -> None:
    worker_id = f"{tag}-worker-{number}"
    order = rng.sample(range(len(documents)), len(documents))
    deadline = caller.deadline
    for doc_index in order:
        if time.monotonic() >= deadline:
            return
        document, texts = documents[doc_index]
        tally: Counter = Counter()

        async def call(endpoint, method, path, expect, body=None, tally=tally):
            return await caller(http, endpoint, method, path, expect, body, tally)

        opened = await call(
            "open",
            "POST",
            "/api/assignments",
            (200, 201),
            {"study": study, "document": document, "worker_id": worker_id},
        )
        if opened is None:
            return
        token = opened.json()["token"]
        base = f"/api/assignments/{token}"
        page = await call("get", "GET", base, (200,))
        if page is None:
            return
        payload = page.json()
        categories = payload["taxonomy"]["categories"]
        tab = PageBookkeeping(caller.pattern, base, hints_by_segment(payload), call)
        await tab.loaded()
        mine: list[int] = []
        for segment in range(len(texts)):
            await tab.view(segment, rng)
            tab.spent(segment, await pace.think(rng, pace.read_segment))
            for _ in range(choose_count(rng)):
                tab.spent(segment, await pace.think(rng, pace.mark))
                if time.monotonic() >= deadline:
                    return
                body = random_annotation(rng, texts, segment, categories)
                if body is None:
                    continue
                body["client_id"] = uuid.uuid4().hex
                await tab.interaction()
                # 409: a random mark that exactly repeats one of this worker's (refused, as the
                # page would refuse it before sending)
                added = await call("add", "POST", f"{base}/annotations", (201, 409), body)
                if added is not None and added.status_code == 201:
                    mine.append(added.json()["id"])
                    tab.wrote()
            if mine and rng.random() < REMOVE_PROBABILITY:
                tab.spent(segment, await pace.think(rng, pace.mark))
                victim = mine.pop(rng.randrange(len(mine)))
                await tab.interaction()
                await call("remove", "DELETE", f"{base}/annotations/{victim}", (204,))
                tab.wrote()
            if time.monotonic() >= deadline:
                return
            if rng.random() < RELOAD_PROBABILITY:
                await call("get", "GET", base, (200,))
                await tab.loaded()
            if segment + 1 < len(texts):
                await tab.interaction()
                await tab.move(segment + 1)
        tab.spent(len(texts) - 1, await pace.think(rng, pace.read_segment))
        if time.monotonic() >= deadline:
            return
        await tab.interaction()
        await tab.before_submit(len(texts) - 1)
        if await call("submit", "POST", f"{base}/submit", (200,)) is not None:
            caller.stats.documents += 1
            caller.documents.append(tally)


async def run_level(
    base_url: str,
    study: str,
    documents,
    concurrency: int,
    duration: float,
    ramp: float,
    pace: Pace,
    tag: str,
    pattern: str = "page",
) -> Stats:
    stats = Stats()
    caller = Caller(stats, time.monotonic() + ramp + duration, pattern)
    rng = random.Random(tag)
    await asyncio.gather(
        *(
            simulated_worker(n, base_url, caller, study, documents, pace, tag, rng.uniform(0, ramp))
            for n in range(concurrency)
        )
    )
    stats.finished = time.perf_counter()
    stats.per_document = per_document(caller.documents)  # type: ignore[attr-defined]
    stats.caller = caller  # type: ignore[attr-defined]
    return stats


def print_per_document(stats: Stats, pattern: str) -> None:
    """Requests per submitted document, by endpoint (retries included)."""
    mean, by_endpoint = stats.per_document  # type: ignore[attr-defined]
    print(
        f"   requests per submitted document ({pattern} pattern): {mean:.1f} = "
        + ", ".join(f"{name} {n}" for name, n in by_endpoint.items())
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--concurrency",
        default="50,150,300",
        help="comma-separated numbers of simultaneous simulated workers",
    )
    parser.add_argument("--duration", type=float, default=60, help="seconds per level")
    parser.add_argument(
        "--ramp", type=float, default=10, help="workers arrive spread over this many seconds"
    )
    parser.add_argument(
        "--think-scale",
        type=float,
        default=1.0,
        help="multiplies every think time (0: no think time, saturation)",
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per gunicorn process")
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument(
        "--pattern",
        choices=PATTERNS,
        default="page",
        help="the page's bookkeeping requests: now (page) or its older patterns",
    )
    parser.add_argument(
        "--hints", type=int, default=1, help="detector suggestions shown per segment (0: none)"
    )
    parser.add_argument("--max-segments", type=int, default=10)
    parser.add_argument(
        "--server-nice",
        type=int,
        default=None,
        help="renice gunicorn and Postgres (e.g. -5) on a shared machine",
    )
    parser.add_argument(
        "--no-durable",
        action="store_true",
        help="keep the test cluster's fsync=off (faster, not like production)",
    )
    args = parser.parse_args(argv)

    OUT.mkdir(parents=True, exist_ok=True)
    documents = load_documents(args.documents, args.max_segments)
    pace = Pace(scale=args.think_scale)
    cluster = start_postgres(durable=not args.no_durable)
    server = None
    results: dict[str, Any] = {"args": vars(args), "levels": {}}
    try:
        url = fresh_database(cluster, "bench_load")
        prepare_study(url, "bench", documents)
        store_hints(url, "bench", args.hints)
        access_log = OUT / f"access-{int(time.time())}.log"
        server = Gunicorn(
            "app:create_app()",
            url,
            workers=args.workers,
            threads=args.threads,
            access_log=access_log,
        ).start()
        if args.server_nice is not None:
            renice_servers(server, cluster, args.server_nice)
        print(
            f"{server.kind} {args.workers}x{args.threads} on {server.url}, Postgres "
            f"{'durable' if not args.no_durable else 'fsync=off'}, {len(documents)} documents, "
            f"think scale {args.think_scale}, server nice {args.server_nice or 0}, "
            f"load average before {os.getloadavg()[0]:.1f}"
        )
        seen_lines = 0
        for level in (int(c) for c in args.concurrency.split(",")):
            web_before, db_before = server_cpu_split(server, cluster)
            client_before = time.process_time()
            cpu_before = web_before + db_before
            stats = asyncio.run(
                run_level(
                    server.url,
                    "bench",
                    documents,
                    level,
                    args.duration,
                    args.ramp,
                    pace,
                    f"c{level}-{uuid.uuid4().hex[:6]}",
                    args.pattern,
                )
            )
            web_after, db_after = server_cpu_split(server, cluster)
            client_cpu = time.process_time() - client_before
            cpu = web_after + db_after - cpu_before
            time.sleep(0.5)  # let gunicorn flush its access log
            server_side, seen_lines = server_latencies(access_log, seen_lines)
            summary = stats.summary()
            summary["server_cpu_s"] = round(cpu, 2)
            summary["server_cpu_ms_per_request"] = round(
                cpu * 1000 / max(1, summary["requests"]), 2
            )
            summary["gunicorn_cpu_s"] = round(web_after - web_before, 2)
            summary["postgres_cpu_s"] = round(db_after - db_before, 2)
            summary["steady"] = stats.steady(args.ramp + 5)
            print_summary(f"{level} simulated workers", summary, server_side)
            print_per_document(stats, args.pattern)
            mean, by_endpoint = stats.per_document  # type: ignore[attr-defined]
            summary["requests_per_document"] = {"mean": round(mean, 2), **by_endpoint}
            print(
                f"   after everyone arrived (from {args.ramp + 5:.0f} s): "
                + ", ".join(
                    f"{name} {row['p50_ms']}/{row['p99_ms']}"
                    for name, row in summary["steady"].items()
                    if name in ("add", "remove", "get", "position")
                )
                + " ms (p50/p99)"
            )
            print(
                f"   server CPU (web server + Postgres): {cpu:.1f} s = "
                f"{summary['server_cpu_ms_per_request']} ms per request, "
                f"{cpu / stats.elapsed * 100:.0f}% of one core (web server "
                f"{summary['gunicorn_cpu_s']} s, Postgres {summary['postgres_cpu_s']} s); "
                f"the load generator itself: {client_cpu:.1f} s"
            )
            summary["client_cpu_s"] = round(client_cpu, 2)
            holds = summary["errors"] == 0 and all(
                summary["endpoints"].get(e, {"p99_ms": 0})["p99_ms"] < TARGET_MS
                for e in TARGET_ENDPOINTS
            )
            print(
                f"   target p99 < {TARGET_MS:.0f} ms for add/remove/get with zero errors: "
                f"{'HOLDS' if holds else 'MISSED'}"
            )
            results["levels"][level] = {"client": summary, "server": server_side, "holds": holds}
    finally:
        if server:
            server.stop()
        cluster.stop()
    path = OUT / f"load-{int(time.time())}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"\nfigures written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
