"""How long storing a large import holds SQLite's write lock (a save waiting
on it must not fail with "database is locked").

Builds N short segments (default 300,000: 3,000 documents of 100 segments), stores them the
way the import worker does (one write transaction through ``import_documents``) and, in a
second thread, makes a small write every 20 ms the way an annotation save does. Prints the
time the store transaction held the lock and the longest wait of a concurrent write.

    python bench/import_lock.py [--segments 300000] [--per-document 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=300_000)
    parser.add_argument("--per-document", type=int, default=100)
    args = parser.parse_args()

    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from app import create_app
    from app.db import begin_write, session_scope
    from app.documents.records import DocumentInput
    from app.documents.studies import create_study, import_documents
    from app.migrate import upgrade

    folder = Path(tempfile.mkdtemp(prefix="import-lock-"))
    url = f"sqlite:///{folder / 'bench.db'}"
    upgrade(url)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
    count = max(args.segments // args.per_document, 1)
    documents = [
        DocumentInput(
            f"doc-{d}",
            [f"Sentence {i} of document {d} is short." for i in range(args.per_document)],
        )
        for d in range(count)
    ]
    with app.app_context():
        with session_scope() as session:
            create_study(session, "bench", REPO / "taxonomies" / "snac.yaml", suggestions="off")
        with session_scope() as session:
            session.execute(text("CREATE TABLE IF NOT EXISTS bench_pings (at REAL)"))

        stop = threading.Event()
        waits: list[float] = []
        failures: list[float] = []

        def pinger() -> None:
            factory = app.extensions["db_sessionmaker"]
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    with factory() as other:
                        begin_write(other)
                        other.execute(text("INSERT INTO bench_pings VALUES (:t)"), {"t": started})
                        other.commit()
                except OperationalError:  # "database is locked" after the 30 s busy timeout
                    failures.append(time.perf_counter() - started)
                else:
                    waits.append(time.perf_counter() - started)
                time.sleep(0.02)

        thread = threading.Thread(target=pinger, daemon=True)
        thread.start()
        time.sleep(0.2)
        with session_scope() as session:
            study = create_study(
                session, "bench", REPO / "taxonomies" / "snac.yaml", suggestions="off"
            )[0]
        with session_scope() as session:  # fresh: the store's first statement takes the lock
            started = time.perf_counter()
            result = import_documents(session, study, documents)
        held = time.perf_counter() - started
        time.sleep(0.3)
        stop.set()
        thread.join()
    print(
        f"{result.documents} documents, {result.segments} segments: "
        f"store call + commit {held:.1f} s, inserts {getattr(result, 'lock_seconds', held):.1f} s; "
        f"concurrent writes: {len(waits)} ok, longest wait {max(waits):.2f} s; "
        f"{len(failures)} failed with 'database is locked'"
    )


if __name__ == "__main__":
    main()
