"""CPU per request of the annotation API's hot endpoints, without the HTTP server's share.

One thread drives the Flask app in-process (WSGI test client, no sockets) against a durable
throw-away Postgres, phase by phase: open + get of N assignments, then every add, every
position, every remove, every submit. For each phase it prints the app's CPU per request
(the driving thread's own CPU time) and Postgres's (every backend's, from /proc). With
``--profile`` a phase runs under cProfile and the time is grouped by package; each phase's
statements per request (commits included: its round trips to Postgres) are counted. ``open``
names its document, ``crowd`` does not (the policy chooses):

    PYTHONPATH=$PWD .venv/bin/python bench/hot_path.py --assignments 200
    PYTHONPATH=$PWD .venv/bin/python bench/hot_path.py --profile add
    PYTHONPATH=$PWD .venv/bin/python bench/hot_path.py --suggestions off  # the plain submit
    PYTHONPATH=$PWD .venv/bin/python bench/hot_path.py --suggested 5  # scoring real suggestions

The actions' statements on Postgres go through the handle's psycopg2 cursor
(app/annotation/handle.py), not SQLAlchemy, and are not counted.

``--code DIR`` measures another checkout on the same workload (e.g. ``git archive`` of an older
commit unpacked in /tmp): the before/after figures of docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_harness import (  # noqa: E402
    fresh_database,
    load_documents,
    prepare_study,
    process_cpu_seconds,
    random_annotation,
    start_postgres,
)
from sqlalchemy import event, text  # noqa: E402

PHASES = ("open", "crowd", "get", "add", "position", "remove", "submit")


def postgres_cpu(cluster) -> float:
    pid = int((Path(cluster.data_dir) / "postmaster.pid").read_text().split()[0])
    return process_cpu_seconds(pid)


def package_of(filename: str) -> str:
    """Which part of the stack a profiled function belongs to."""
    for marker, name in (
        ("sqlalchemy/orm", "SQLAlchemy ORM"),
        ("sqlalchemy", "SQLAlchemy Core"),
        ("psycopg2", "psycopg2"),
        ("werkzeug", "Werkzeug"),
        ("flask_limiter", "flask-limiter"),
        ("limits/", "flask-limiter"),
        ("flask_wtf", "Flask-WTF"),
        ("flask", "Flask"),
        ("/json/", "json"),
        ("/app/", "Marginalia"),
    ):
        if marker in filename:
            return name
    return "other" if filename.startswith("/") else "builtins"


def grouped(profile: cProfile.Profile) -> dict[str, float]:
    """Own (exclusive) time per package."""
    stats = pstats.Stats(profile)
    totals: dict[str, float] = defaultdict(float)
    for (filename, _line, _name), (_cc, _nc, own, _cum, _callers) in stats.stats.items():
        totals[package_of(filename)] += own
    return dict(totals)


SUGGESTION = text(
    "INSERT INTO suggestions (document_id, segment, start_offset, end_offset, text, category, "
    "score, detector, detector_version, created_at) SELECT id, :segment, :start, :end, :text, "
    ":category, 0.9, 'bench', '1', CURRENT_TIMESTAMP FROM documents WHERE external_id = :doc"
)


def suggest(engine, documents, per_document: int, rng: random.Random, categories) -> None:
    """``per_document`` single-span suggestions on random spans of each document, as the
    detector stores them (SQL of its own: the same for any ``--code``'s models)."""
    rows = []
    keys = ("segment", "start", "end", "text", "category")
    for external_id, texts in documents:
        made = 0
        while made < per_document:
            body = random_annotation(rng, texts, rng.randrange(len(texts)), categories)
            if body is not None and body["paired"] is None:
                rows.append({"doc": external_id, **{key: body[key] for key in keys}})
                made += 1
    with engine.begin() as connection:
        connection.execute(SUGGESTION, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", type=int, default=200)
    parser.add_argument("--adds", type=int, default=8, help="adds per assignment")
    parser.add_argument(
        "--gets", type=int, default=1, help="gets per assignment (the first loads the document)"
    )
    parser.add_argument(
        "--crowd", type=int, default=50, help="arrivals naming no document (the crowd path)"
    )
    parser.add_argument(
        "--suggestions",
        default="hidden",
        choices=("off", "hidden", "shown"),
        help="the study's suggestions mode (off: the submit scores nothing)",
    )
    parser.add_argument(
        "--suggested",
        type=int,
        default=0,
        help="detector suggestions stored per document (the submit scores the worker on them)",
    )
    parser.add_argument("--profile", choices=PHASES, help="profile this phase (cProfile)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--code", help="measure the app in this checkout (e.g. an older one)")
    args = parser.parse_args(argv)
    if args.code:
        sys.path.insert(0, str(Path(args.code).resolve()))

    import app as app_package
    from app import create_app
    from app.documents.taxonomy import load_taxonomy

    print(f"code under test: {Path(app_package.__file__).parent.parent}")
    cluster = start_postgres(durable=True)
    try:
        url = fresh_database(cluster, "hot_path")
        documents = load_documents(args.assignments, 10)
        prepare_study(url, "hot", documents, suggestions=args.suggestions)
        web = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "TESTING": False})
        web.config["ARRIVAL_RATE_LIMIT"] = "1000000 per minute"
        client = web.test_client()
        categories = load_taxonomy(
            Path(__file__).resolve().parent.parent / "taxonomies" / "snac.yaml"
        )["categories"]
        rng = random.Random(args.seed)
        if args.suggested:
            suggest(web.extensions["db_engine"], documents, args.suggested, rng, categories)
        cpu: dict[str, list[float]] = {phase: [0.0, 0.0, 0] for phase in PHASES}
        # statements sent (commits included) per phase: the round trips
        statements: dict[str, int] = dict.fromkeys(PHASES, 0)
        current = [PHASES[0]]
        engine = web.extensions["db_engine"]

        @event.listens_for(engine, "before_cursor_execute")
        def _count(*_args) -> None:
            statements[current[0]] += 1

        @event.listens_for(engine, "commit")
        def _count_commit(*_args) -> None:
            statements[current[0]] += 1

        work: list[dict] = []

        def timed(phase: str, call, profile: cProfile.Profile | None):
            before = time.thread_time()
            if profile is not None:
                profile.enable()
            answer = call()
            if profile is not None:
                profile.disable()
            cpu[phase][0] += time.thread_time() - before
            cpu[phase][2] += 1
            return answer

        class phase_of:
            """Postgres's CPU over a whole phase (reading /proc per request would cost more
            than the requests)."""

            def __init__(self, phase: str) -> None:
                self.phase = phase

            def __enter__(self) -> None:
                current[0] = self.phase
                self.before = postgres_cpu(cluster)

            def __exit__(self, *_exc) -> None:
                cpu[self.phase][1] += postgres_cpu(cluster) - self.before

        profiles = {p: cProfile.Profile(time.thread_time) for p in PHASES if p == args.profile}
        with phase_of("open"):
            for index, (external_id, texts) in enumerate(documents):
                body = {"study": "hot", "worker_id": f"w{index}", "document": external_id}
                answer = timed(
                    "open",
                    lambda body=body: client.post("/api/assignments", json=body),
                    profiles.get("open"),
                )
                assert answer.status_code == 201, answer.get_json()
                token = answer.get_json()["token"]
                work.append({"token": token, "texts": texts, "ids": []})
        with phase_of("crowd"):
            for index in range(args.crowd):
                body = {"study": "hot", "worker_id": f"crowd{index}"}
                answer = timed(
                    "crowd",
                    lambda body=body: client.post("/api/assignments", json=body),
                    profiles.get("crowd"),
                )
                assert answer.status_code == 201, answer.get_json()
        with phase_of("get"):
            for item in work * args.gets:
                answer = timed(
                    "get",
                    lambda item=item: client.get(f"/api/assignments/{item['token']}"),
                    profiles.get("get"),
                )
                assert answer.status_code == 200
        with phase_of("add"):
            for item in work:
                texts = item["texts"]
                for _ in range(args.adds):
                    segment = rng.randrange(len(texts))
                    body = random_annotation(rng, texts, segment, categories)
                    if body is None:
                        continue
                    path = f"/api/assignments/{item['token']}/annotations"
                    answer = timed(
                        "add",
                        lambda path=path, body=body: client.post(path, json=body),
                        profiles.get("add"),
                    )
                    assert answer.status_code in (201, 409), answer.get_json()
                    if answer.status_code == 201:
                        item["ids"].append(answer.get_json()["id"])
        with phase_of("position"):
            for item in work:
                for segment in range(len(item["texts"])):
                    path = f"/api/assignments/{item['token']}/position"
                    answer = timed(
                        "position",
                        lambda path=path, s=segment: client.post(path, json={"segment": s}),
                        profiles.get("position"),
                    )
                    assert answer.status_code == 204
        with phase_of("remove"):
            for item in work:
                for annotation_id in item["ids"][::3]:
                    path = f"/api/assignments/{item['token']}/annotations/{annotation_id}"
                    answer = timed(
                        "remove", lambda path=path: client.delete(path), profiles.get("remove")
                    )
                    assert answer.status_code == 204
        with phase_of("submit"):
            for item in work:
                path = f"/api/assignments/{item['token']}/submit"
                answer = timed(
                    "submit", lambda path=path: client.post(path), profiles.get("submit")
                )
                assert answer.status_code == 200
        print(
            f"{'endpoint':>9} {'requests':>8} {'app ms/req':>10} {'postgres ms/req':>15} "
            f"{'statements/req':>14}"
        )
        for phase in PHASES:
            app_s, db_s, count = cpu[phase]
            if count:
                print(
                    f"{phase:>9} {count:8d} {1000 * app_s / count:10.2f} "
                    f"{1000 * db_s / count:15.2f} {statements[phase] / count:14.1f}"
                )
        for phase, profile in profiles.items():
            totals = grouped(profile)
            whole = sum(totals.values())
            print(f"\nprofile of {phase}: own time by package ({whole:.2f} s in all)")
            for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
                print(f"  {name:>16} {100 * seconds / whole:5.1f}%")
            stats = pstats.Stats(profile)
            stats.sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(
                int(os.environ.get("BENCH_TOP", "25"))
            )
        web.extensions["db_engine"].dispose()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
