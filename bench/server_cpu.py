"""Server CPU per request of the hot endpoints over real HTTP: the web server (as deployed,
marginalia web: granian; ``BENCH_SERVER=gunicorn`` for gunicorn.conf.py) and Postgres, each
measured from /proc, the client in its own process.

The hot path's budget names the web server's CPU per add (≤ 1.2 ms) and Postgres's (≤ 0.5 ms):
this measures exactly that. N assignments are opened (one client, each arrival naming its
document: the ``open`` line), then each phase (add, position, heartbeat, get: the page's
read, twice per assignment, the first filling the cache with its document; remove) is sent by
C keep-alive connections, one request at a time each, and the servers' CPU over the phase is
divided by its requests:

    PYTHONPATH=$PWD .venv/bin/python bench/server_cpu.py --assignments 200 --clients 4

``PREPARED_STATEMENTS=0`` in the environment measures without the prepared statements.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_harness import (  # noqa: E402
    REPO,
    Gunicorn,
    MiniHttp,
    fresh_database,
    load_documents,
    postgres_cpu_by_role,
    prepare_study,
    random_annotation,
    server_cpu_split,
    start_postgres,
)


async def run_phase(server: Gunicorn, requests: list[tuple[str, str, object]], clients: int):
    """Send ``requests`` over ``clients`` connections; the statuses seen."""
    queue = list(reversed(requests))
    statuses: dict[int, int] = {}

    async def client() -> None:
        http = MiniHttp("127.0.0.1", server.port)
        while queue:
            method, path, body = queue.pop()
            answer = await http.request(method, path, body)
            statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
        await http.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return statuses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", type=int, default=200)
    parser.add_argument("--adds", type=int, default=8, help="adds per assignment")
    parser.add_argument("--clients", type=int, default=4, help="keep-alive connections")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    from app.documents.taxonomy import load_taxonomy

    categories = load_taxonomy(REPO / "taxonomies" / "snac.yaml")["categories"]
    rng = random.Random(args.seed)
    cluster = start_postgres(durable=True)
    server = None
    try:
        url = fresh_database(cluster, "server_cpu")
        documents = load_documents(args.assignments, 10)
        prepare_study(url, "hot", documents)
        server = Gunicorn("app:create_app()", url).start()
        opened: list[tuple[str, list[str]]] = []

        async def open_all() -> None:
            http = MiniHttp("127.0.0.1", server.port)
            for index, (external_id, texts) in enumerate(documents):
                body = {"study": "hot", "worker_id": f"w{index}", "document": external_id}
                answer = await http.request("POST", "/api/assignments", body)
                assert answer.status_code == 201, answer.content
                opened.append((answer.json()["token"], texts))
            await http.close()

        web_before, db_before = server_cpu_split(server, cluster)
        started = time.perf_counter()
        asyncio.run(open_all())
        seconds = time.perf_counter() - started
        web_after, db_after = server_cpu_split(server, cluster)
        opens = len(opened)
        adds = []
        for token, texts in opened:
            for n in range(args.adds):
                segment = rng.randrange(len(texts))
                body = random_annotation(rng, texts, segment, categories)
                if body is not None:
                    body["client_id"] = f"{token[:8]}-{n}"
                    adds.append(("POST", f"/api/assignments/{token}/annotations", body))
        positions = [
            ("POST", f"/api/assignments/{token}/position", {"segment": s, "active": {str(s): 1}})
            for token, texts in opened
            for s in range(len(texts))
        ]
        beats = [("POST", f"/api/assignments/{token}/heartbeat", {}) for token, _ in opened]
        reads = [("GET", f"/api/assignments/{token}", None) for token, _ in opened] * 2
        print(f"{server.kind} {server.workers} x {server.threads} threads, {args.clients} clients")
        print(f"{'request':>9} {'n':>6} {'statuses':>16} {'web ms':>11} {'postgres ms':>11}")
        print(  # one client, one arrival at a time, each naming its document
            f"{'open':>9} {opens:6d} {str({201: opens}):>16}"
            f" {1000 * (web_after - web_before) / opens:11.3f}"
            f" {1000 * (db_after - db_before) / opens:11.3f}   ({opens / seconds:.0f}/s)"
        )
        phases = [("add", adds), ("position", positions), ("heartbeat", beats), ("get", reads)]
        stored_ids: list[tuple[str, int]] = []
        for name, requests in phases + [("remove", None)]:
            if requests is None:  # the removes need the ids the adds got back
                requests = [
                    ("DELETE", f"/api/assignments/{token}/annotations/{i}", None)
                    for token, i in stored_ids[::3]
                ]
            web_before, db_before = server_cpu_split(server, cluster)
            roles_before = postgres_cpu_by_role(cluster)
            started = time.perf_counter()
            statuses = asyncio.run(run_phase(server, requests, args.clients))
            seconds = time.perf_counter() - started
            web_after, db_after = server_cpu_split(server, cluster)
            roles_after = postgres_cpu_by_role(cluster)
            n = len(requests)
            print(
                f"{name:>9} {n:6d} {str(statuses):>16} {1000 * (web_after - web_before) / n:11.3f}"
                f" {1000 * (db_after - db_before) / n:11.3f}   ({n / seconds:.0f}/s)"
            )
            split = {
                role: 1000 * (seconds - roles_before.get(role, 0.0)) / n
                for role, seconds in roles_after.items()
                if seconds - roles_before.get(role, 0.0) > 0
            }
            print(
                " " * 10
                + "postgres by role: "
                + ", ".join(f"{r} {ms:.3f}" for r, ms in split.items())
            )
            if name == "add":
                stored_ids = _stored(url)
    finally:
        if server is not None:
            server.stop()
        cluster.stop()
    return 0


def _stored(url: str) -> list[tuple[str, int]]:
    """(token, annotation id) of every stored annotation, in id order."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT a.token, n.id FROM annotations n JOIN assignments a "
                "ON a.id = n.assignment_id ORDER BY n.id"
            )
        ).all()
    engine.dispose()
    return [(token, annotation_id) for token, annotation_id in rows]


if __name__ == "__main__":
    raise SystemExit(main())
