"""What an add with attributes or several categories costs against a plain add.

A plain add, one with ``attributes`` and one with ``categories`` (a multi-label mark, one
row per category) all take the one add (app/annotation/add.py) through the worker API's
entry. Through Flask's test client (the WSGI stack, no sockets), on a fresh SQLite file or
``--database postgresql://...``:

    PYTHONPATH=$PWD .venv/bin/python bench/attribute_adds.py --adds 300
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TAXONOMY = """name: Bench
multi_label: true
categories:
  - {id: omit, label: Omission, definition: d,
     attributes: [{id: severity, kind: choice, values: [minor, major], required: false}]}
  - {id: lang, label: Language, definition: d}
"""
WORDS = [f"word{n}" for n in range(400)]
TEXT = " ".join(WORDS)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--adds", type=int, default=300)
    parser.add_argument("--database")
    args = parser.parse_args()
    from app import create_app
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.formats import DocumentInput
    from app.migrate import upgrade

    folder = Path(tempfile.mkdtemp())
    url = args.database or f"sqlite:///{folder / 'bench.db'}"
    upgrade(url)
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "bench"})
    (folder / "t.yaml").write_text(TAXONOMY, encoding="utf-8")
    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "bench", folder / "t.yaml", suggestions="off")
        import_documents(session, study, [DocumentInput("d", [TEXT])])
    client = app.test_client()
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    kinds = {
        "plain": lambda: {"category": "omit"},
        "attributes": lambda: {"category": "omit", "attributes": {"severity": "major"}},
        "two categories": lambda: {"categories": ["omit", "lang"]},
    }
    for name, extra in kinds.items():
        token = client.post(
            "/api/assignments", json={"study": "bench", "document": "d", "worker_id": name}
        ).get_json()["token"]
        times = []
        for n in range(min(args.adds, len(WORDS))):
            start = TEXT.index(WORDS[n] + " ") if n < len(WORDS) - 1 else TEXT.rindex(WORDS[n])
            body = {"segment": 0, "start": start, "end": start + len(WORDS[n])}
            body |= {"text": WORDS[n], "client_id": f"{name}-{n}", **extra()}
            began = time.perf_counter()
            answer = client.post(f"/api/assignments/{token}/annotations", json=body)
            times.append(time.perf_counter() - began)
            assert answer.status_code == 201, answer.get_json()
        print(
            f"{name:24s} median {1000 * statistics.median(times):.2f} ms per add ({len(times)} adds)"
        )


if __name__ == "__main__":
    main()
