"""Postgres's CPU per add for forms of the fast lane's add, on the lane's own driver
(:class:`app.annotation.hot_sql.Driver`, prepared statements) without a web server, so only
the database's side differs (issue 31 item 3). T threads, each on its own pooled connection
and its own assignments (a real one holds ~40 adds), send adds of new spans; the forms take
turns (each round starting one later), R rounds each, and Postgres's CPU (all its processes,
from /proc) over a turn is divided by its adds:

    PYTHONPATH=$PWD .venv/bin/python bench/add_forms.py --adds 8000 --threads 4 --rounds 4

- ``two-trips``: ``BEGIN; claim; insert`` then ``COMMIT`` (main before item 3);
- ``one-trip``: ``LOCK; insert_stamped`` with no ``BEGIN``, committed by the server (kept);
- ``claim-alone``: ``claim; insert`` with no ``BEGIN``: one trip, but a refused add would
  commit the claim's activity stamp (not kept: a refusal must change nothing);
- ``one-cte``: claim and insert as one statement (not kept: one snapshot, taken before the
  lock, so two racing duplicates both pass the guard; tests/test_hot_path_races.py fails).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_harness import (  # noqa: E402
    fresh_database,
    load_documents,
    postgres_cpu_by_role,
    prepare_study,
    start_postgres,
)


@cache
def one_cte():
    """Claim and insert as one statement (the racy form, measured only)."""
    from sqlalchemy import bindparam, text

    from app.annotation import hot_sql

    body = str(hot_sql.insert_annotation("postgresql", checked=True).text)
    body = body.replace("SELECT :assignment_id,", "SELECT claim.id,", 1)
    body = body.replace(" WHERE NOT EXISTS", " FROM claim WHERE NOT EXISTS", 1)
    claim = str(hot_sql.CLAIM_FOR_ADD.text)
    return text(f"WITH claim AS ({claim} RETURNING id) {body}").bindparams(
        bindparam("now", type_=hot_sql.TIMESTAMP)
    )


def add(driver, form: str, params: dict) -> None:
    from app.annotation import hot_sql

    checked = ("insert_checked", hot_sql.insert_annotation("postgresql", checked=True))
    claim = ("claim_for_add", hot_sql.CLAIM_FOR_ADD)
    if form == "two-trips":
        stored = driver.claim_and_run(claim, checked, params)
    elif form == "one-trip":
        stamped = ("insert_stamped", hot_sql.insert_stamped())
        stored = driver.claim_and_run(("lock", hot_sql.LOCK), stamped, params, alone=True)
    elif form == "claim-alone":
        stored = driver.claim_and_run(claim, checked, params, alone=True)
    else:
        stored = driver.run("one_cte", one_cte(), params, alone=True)
    assert stored.first() is not None
    driver.commit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adds", type=int, default=3000, help="adds per form and round")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--assignments", type=int, default=500, help="per thread (a real one holds ~40 adds)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forms", default="two-trips,one-trip,claim-alone,one-cte")
    args = parser.parse_args(argv)

    from sqlalchemy import select

    from app import create_app
    from app.annotation import assignments as rules
    from app.annotation import hot_sql
    from app.annotation.admission import open_for_document
    from app.db import session_scope
    from app.models import Document, Study

    cluster = start_postgres(durable=True)
    try:
        url = fresh_database(cluster, "add_forms")
        count = args.threads * args.assignments
        prepare_study(url, "forms", load_documents(100, 10))
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
        with app.app_context(), session_scope() as session:
            study = session.scalar(select(Study))
            documents = session.scalars(select(Document).order_by(Document.id)).all()
            opened = [
                open_for_document(session, study, documents[n % len(documents)], f"w{n}")[0]
                for n in range(count)
            ]
            keys = [(a.id, a.token) for a in opened]
        engine = app.extensions["db_engine"]
        counter = itertools.count()
        forms = args.forms.split(",")
        print(f"{args.threads} threads, {args.adds} adds per form and round")
        results: dict[str, list[float]] = {form: [] for form in forms}
        for round_ in range(args.rounds):
            for form in forms[round_ % len(forms) :] + forms[: round_ % len(forms)]:
                per_thread = args.adds // args.threads

                def work(thread: int, form: str = form, per_thread: int = per_thread) -> None:
                    mine = keys[thread * args.assignments : (thread + 1) * args.assignments]
                    for i in range(per_thread):
                        n = next(counter)
                        assignment_id, token = mine[i % len(mine)]
                        params = {
                            "assignment_id": assignment_id,
                            "token": token,
                            "segment": n % 2,
                            "start": n,
                            "end": n + 1,
                            "text": "x",
                            "category": "CharE",
                            "client_id": f"c{n}",
                            "now": rules.now(),
                            **dict.fromkeys(
                                name
                                for name, _c, _t in hot_sql.ANNOTATION_COLUMNS
                                if name not in ("segment", "start", "end", "text", "category")
                                and name != "client_id"
                            ),
                            "comment": "",
                        }
                        driver = hot_sql.driver_for(engine)
                        add(driver, form, params)
                        driver.close()

                before = sum(postgres_cpu_by_role(cluster).values())
                started = time.perf_counter()
                threads = [threading.Thread(target=work, args=(t,)) for t in range(args.threads)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                seconds = time.perf_counter() - started
                cpu = sum(postgres_cpu_by_role(cluster).values()) - before
                n = per_thread * args.threads
                results[form].append(1000 * cpu / n)
                print(
                    f"round {round_ + 1} {form:>12}: postgres {1000 * cpu / n:.3f} ms/add"
                    f"  ({n / seconds:.0f} adds/s)"
                )
        for form, figures in results.items():
            print(f"{form:>12}: " + " · ".join(f"{ms:.3f}" for ms in figures))
        engine.dispose()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
