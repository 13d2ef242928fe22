"""A reproduction of FALTE's design on our own stack, on bench/load.py's workload.

This is not FALTE's code: bench/falte_real.py runs FALTE's real app (its public
repository) beside ours, and that is the comparison to quote. This one isolates the design
(everything kept in the page until submit) from the stacks.

FALTE keeps a worker's annotations in the browser and posts the whole document's annotations
at submit; the server then stores them one row at a time, committing after each row. Nothing
reaches the server before submit, so a closed tab or a crash loses all of it. Its requests, as
the original's: the page (rendered with the taxonomy), then one GET per sentence that
re-renders the context so far, then one form submit (marks as JSON in a hidden field).

This file reproduces that design on the same stack (Flask + SQLAlchemy + Postgres under the
same gunicorn.conf.py), so the comparison isolates the design:

    .venv/bin/python bench/falte_baseline.py --concurrency 300 --duration 60
    .venv/bin/python bench/falte_baseline.py --compare --think-scale 0 --concurrency 32,128

``--compare`` also runs Marginalia (bench/load.py's simulated workers, sending the annotate
page's requests: bench/page_pattern.py's ``page`` pattern, heartbeats and each move's position
with its active seconds; no hints here, FALTE has none) on the same workload and prints the
ratios: server CPU per submitted document, documents/s, submit latency.
gunicorn serves ``bench.falte_baseline:make_app()``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from load_harness import (  # noqa: E402
    OUT,
    REMOVE_PROBABILITY,
    REPO,
    Gunicorn,
    MiniHttp,
    Pace,
    Stats,
    choose_count,
    fresh_database,
    load_documents,
    prepare_study,
    print_summary,
    random_annotation,
    server_cpu_seconds,
    server_latencies,
    start_postgres,
)

from app.documents.taxonomy import load_taxonomy  # noqa: E402

# --- the FALTE-style server -----------------------------------------------------------------


def make_app():
    """A FALTE-style app: the page, a GET per sentence, everything POSTed at submit, a commit
    per row."""
    from flask import Flask, abort, jsonify, render_template_string, request
    from sqlalchemy import (
        Column,
        DateTime,
        Integer,
        MetaData,
        String,
        Table,
        Text,
        create_engine,
        func,
        insert,
        select,
    )
    from sqlalchemy.exc import DBAPIError

    from app.config import normalise_database_url
    from app.models import Document, Segment

    engine = create_engine(
        normalise_database_url(os.environ["DATABASE_URL"]),
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=20,
    )
    metadata = MetaData()
    table = Table(
        "falte_annotations",
        metadata,
        Column("id", Integer, primary_key=True),
        Column("worker_id", String(200)),
        Column("document", String(300)),
        Column("segment", Integer),
        Column("start_offset", Integer),
        Column("end_offset", Integer),
        Column("text", Text),
        Column("category", String(100)),
        Column("paired_segment", Integer),
        Column("paired_text", Text),
        Column("comment", Text),
        Column("created_at", DateTime(timezone=True), server_default=func.now()),
    )
    try:
        metadata.create_all(engine)
    except DBAPIError:  # the other gunicorn worker created it at the same moment
        metadata.create_all(engine)
    taxonomy = load_taxonomy(REPO / "taxonomies" / "snac.yaml")
    app = Flask(__name__)

    @app.get("/healthz")
    def healthz():
        return jsonify(ok=True)

    def texts_of(external_id: str, upto: int | None = None) -> list[str]:
        query = (
            select(Segment.text)
            .join(Document, Document.id == Segment.document_id)
            .where(Document.external_id == external_id)
            .order_by(Segment.index)
        )
        if upto is not None:
            query = query.where(Segment.index <= upto)
        with engine.connect() as connection:
            return list(connection.scalars(query))

    @app.get("/falte/<external_id>")
    def page(external_id: str):
        """The annotation page: the taxonomy's buttons and instructions, rendered per visit."""
        texts = texts_of(external_id)
        if not texts:
            abort(404)
        return render_template_string(
            PAGE, document=external_id, count=len(texts), taxonomy=taxonomy
        )

    @app.get("/falte/<external_id>/segment/<int:index>")
    def segment(external_id: str, index: int):
        """The next sentence: the context so far re-rendered, as the original's AJAX call."""
        texts = texts_of(external_id, index)
        if len(texts) != index + 1:
            abort(404)
        html = render_template_string(CONTEXT, texts=texts)
        return jsonify(html=html, sentence=texts[-1], index=index)

    @app.post("/falte/submit")
    def submit():
        """The page's one form, its marks as JSON in a hidden field: a commit per row."""
        marks = json.loads(request.form["annotations"])
        for mark in marks:
            paired = mark.get("paired") or {}
            with engine.begin() as connection:
                connection.execute(
                    insert(table).values(
                        worker_id=request.form["worker_id"],
                        document=request.form["document"],
                        segment=mark["segment"],
                        start_offset=mark["start"],
                        end_offset=mark["end"],
                        text=mark["text"],
                        category=mark["category"],
                        paired_segment=paired.get("segment"),
                        paired_text=paired.get("text"),
                        comment=mark.get("comment", ""),
                    )
                )
        return render_template_string(DONE, code=secrets.token_hex(5))

    return app


PAGE = """<!doctype html><html><head><title>Annotate {{ document }}</title></head><body>
<h1>{{ taxonomy.get("name", "") }}</h1><ol id="instructions">
{% for c in taxonomy["categories"] %}<li><button data-id="{{ c.id }}">{{ c.get("label", c.id) }}
</button> {{ c.get("description", "") }}</li>{% endfor %}</ol>
<div id="context"></div><p>Sentence <span id="at">1</span> of {{ count }}</p>
<form method="post" action="/falte/submit"><input type="hidden" name="annotations">
<input type="hidden" name="document" value="{{ document }}"><button>Submit</button></form>
</body></html>"""
CONTEXT = """{% for t in texts %}<p class="sentence{{ ' current' if loop.last else '' }}">{{ t }}</p>
{% endfor %}"""
DONE = """<!doctype html><html><body><p>Thank you. Your code: <b>{{ code }}</b></p></body></html>"""


# --- the FALTE-style client -----------------------------------------------------------------


async def falte_worker(
    number: int,
    base_url: str,
    stats: Stats,
    deadline: float,
    documents: list[tuple[str, list[str]]],
    pace: Pace,
    tag: str,
    start_delay: float,
) -> None:
    """Same behaviour and think times as bench/load.py's worker; marks stay in the page,
    every sentence is fetched when the worker reaches it."""
    rng = random.Random(f"{tag}-{number}")
    await asyncio.sleep(start_delay)
    host, port = base_url.removeprefix("http://").split(":")
    client = MiniHttp(host, int(port))
    try:
        await _falte_work(rng, client, stats, deadline, documents, pace, tag, number)
    except ConnectionError as exc:
        stats.error("connection", str(exc))
    finally:
        await client.close()


async def _falte_work(
    rng: random.Random,
    client: MiniHttp,
    stats: Stats,
    deadline: float,
    documents: list[tuple[str, list[str]]],
    pace: Pace,
    tag: str,
    number: int,
) -> None:
    worker_id = f"{tag}-worker-{number}"
    categories = load_taxonomy(REPO / "taxonomies" / "snac.yaml")["categories"]
    for doc_index in rng.sample(range(len(documents)), len(documents)):
        if time.monotonic() >= deadline:
            return
        external_id, texts = documents[doc_index]
        started = time.perf_counter()
        page = await client.request("GET", f"/falte/{external_id}")
        stats.record("falte_page", time.perf_counter() - started)
        if page.status_code != 200:
            stats.error("falte_page", f"HTTP {page.status_code}")
            return
        marks: list[dict[str, Any]] = []
        for segment in range(len(texts)):
            started = time.perf_counter()
            shown = await client.request("GET", f"/falte/{external_id}/segment/{segment}")
            stats.record("falte_segment", time.perf_counter() - started)
            if shown.status_code != 200:
                stats.error("falte_segment", f"HTTP {shown.status_code}")
                return
            await pace.think(rng, pace.read_segment)
            for _ in range(choose_count(rng)):
                await pace.think(rng, pace.mark)
                body = random_annotation(rng, texts, segment, categories)
                if body is not None:
                    marks.append(body)
            if marks and rng.random() < REMOVE_PROBABILITY:
                await pace.think(rng, pace.mark)
                marks.pop(rng.randrange(len(marks)))
            if time.monotonic() >= deadline:
                return  # everything marked so far is lost: it never left the browser
        await pace.think(rng, pace.read_segment)
        if time.monotonic() >= deadline:
            return
        started = time.perf_counter()
        form = {"worker_id": worker_id, "document": external_id, "annotations": json.dumps(marks)}
        answer = await client.request("POST", "/falte/submit", form=form)
        stats.record("falte_submit", time.perf_counter() - started)
        if answer.status_code != 200:
            stats.error("falte_submit", f"HTTP {answer.status_code}")
        else:
            stats.documents += 1


async def run_falte(
    base_url: str, documents, concurrency: int, duration: float, ramp: float, pace: Pace, tag: str
) -> Stats:
    stats = Stats()
    deadline = time.monotonic() + ramp + duration
    rng = random.Random(tag)
    await asyncio.gather(
        *(
            falte_worker(n, base_url, stats, deadline, documents, pace, tag, rng.uniform(0, ramp))
            for n in range(concurrency)
        )
    )
    stats.finished = time.perf_counter()
    return stats


def measure(design: str, cluster, documents, args, pace: Pace) -> dict[str, Any]:
    """Run one design at each concurrency on a fresh database; figures per level."""
    url = fresh_database(cluster, f"bench_{design}")
    prepare_study(url, "bench", documents)
    access_log = OUT / f"access-{design}-{int(time.time())}.log"
    spec = "bench.falte_baseline:make_app()" if design == "falte" else "app:create_app()"
    server = Gunicorn(
        spec, url, workers=args.workers, threads=args.threads, access_log=access_log
    ).start()
    figures: dict[str, Any] = {}
    seen = 0
    try:
        for level in (int(c) for c in args.concurrency.split(",")):
            tag = f"{design}-c{level}-{uuid.uuid4().hex[:6]}"
            before = server_cpu_seconds(server, cluster)
            if design == "falte":
                stats = asyncio.run(
                    run_falte(server.url, documents, level, args.duration, args.ramp, pace, tag)
                )
            else:
                from load import run_level

                stats = asyncio.run(
                    run_level(
                        server.url, "bench", documents, level, args.duration, args.ramp, pace, tag
                    )
                )
            cpu = server_cpu_seconds(server, cluster) - before
            time.sleep(0.5)
            server_side, seen = server_latencies(access_log, seen)
            summary = stats.summary()
            summary["server_cpu_s"] = round(cpu, 2)
            summary["server_cpu_ms_per_document"] = (
                round(cpu * 1000 / summary["documents"], 1) if summary["documents"] else None
            )
            print_summary(f"{design}: {level} simulated workers", summary, server_side)
            print(
                f"   server CPU {cpu:.1f} s; per submitted document: "
                f"{summary['server_cpu_ms_per_document']} ms"
            )
            figures[level] = {"client": summary, "server": server_side}
    finally:
        server.stop()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="FALTE's design on bench/load.py's workload")
    parser.add_argument("--concurrency", default="300")
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--ramp", type=float, default=10)
    parser.add_argument("--think-scale", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--max-segments", type=int, default=10)
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also run Marginalia on the same workload and print ratios",
    )
    parser.add_argument("--no-durable", action="store_true")
    args = parser.parse_args(argv)

    OUT.mkdir(parents=True, exist_ok=True)
    documents = load_documents(args.documents, args.max_segments)
    pace = Pace(scale=args.think_scale)
    cluster = start_postgres(durable=not args.no_durable)
    results: dict[str, Any] = {"args": vars(args)}
    try:
        results["falte"] = measure("falte", cluster, documents, args, pace)
        if args.compare:
            results["marginalia"] = measure("marginalia", cluster, documents, args, pace)
    finally:
        cluster.stop()
    if args.compare:
        print("\n== Marginalia / FALTE design")
        for level, falte in results["falte"].items():
            ours = results["marginalia"][level]["client"]
            theirs = falte["client"]
            ratio = {
                "documents_per_s": _ratio(ours["documents_per_s"], theirs["documents_per_s"]),
                "server_cpu_ms_per_document": _ratio(
                    ours["server_cpu_ms_per_document"], theirs["server_cpu_ms_per_document"]
                ),
                "submit_p99": _ratio(
                    ours["endpoints"].get("submit", {}).get("p99_ms"),
                    theirs["endpoints"].get("falte_submit", {}).get("p99_ms"),
                ),
            }
            results.setdefault("ratios", {})[level] = ratio
            print(
                f"   {level} workers: documents/s x{ratio['documents_per_s']}, server CPU per "
                f"document x{ratio['server_cpu_ms_per_document']}, submit p99 "
                f"x{ratio['submit_p99']}"
            )
    path = OUT / f"falte-{int(time.time())}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"\nfigures written to {path}")
    return 0


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


if __name__ == "__main__":
    raise SystemExit(main())
