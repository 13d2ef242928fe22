"""Helpers shared by the API-level test modules: request bodies, snapshots, exports."""

from __future__ import annotations

import asyncio
import concurrent.futures
import csv
import io
import re
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from app.models import Base

if TYPE_CHECKING:
    from model_server.train import TrainConfig

SEGMENTS = [
    "Anna is an only child. She lives in Zoë's old flat in Paris.",
    "Anna's brother visits her. They walk to the café 🙂 and talk.",
    "At the party, Pedro takes Hero aside. Anna is an only child.",
    "The end.",
]
DOCUMENTS = [("doc-1", SEGMENTS), ("doc-2", ["Another document.", "Its second segment."])]
CODE_PATTERN = re.compile(r"^MG-[A-Z2-9]{5}-[A-Z2-9]{5}$")


def api_open(client, worker: str = "w1", document: str = "doc-1", study: str = "demo"):
    return client.post(
        "/api/assignments", json={"study": study, "document": document, "worker_id": worker}
    )


def open_token(client, worker: str = "w1", document: str = "doc-1", study: str = "demo") -> str:
    response = api_open(client, worker, document, study)
    assert response.status_code in (200, 201), response.get_json()
    return response.get_json()["token"]


def span(segment: int, text: str, texts: list[str] = SEGMENTS, occurrence: int = 0) -> dict:
    """A span body for the ``occurrence``-th (0-based) appearance of ``text`` in a segment."""
    start = -1
    for _ in range(occurrence + 1):
        start = texts[segment].index(text, start + 1)
    return {"segment": segment, "start": start, "end": start + len(text), "text": text}


def api_add(client, token: str, body: dict[str, Any]):
    return client.post(f"/api/assignments/{token}/annotations", json=body)


def annotation_body(
    segment: int,
    text: str,
    category: str,
    *,
    paired: dict | None = None,
    comment: str = "",
    client_id: str | None = None,
    texts: list[str] = SEGMENTS,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        **span(segment, text, texts),
        "category": category,
        "paired": paired,
        "comment": comment,
    }
    if client_id is not None:
        body["client_id"] = client_id
    return body


def db_snapshot(app) -> dict[str, list[tuple]]:
    """Every row of every table, to prove a refused request changed nothing."""
    engine = app.extensions["db_engine"]
    snapshot = {}
    with engine.connect() as connection:
        for table in Base.metadata.sorted_tables:
            rows = connection.execute(select(table).order_by(*table.primary_key.columns))
            snapshot[table.name] = [tuple(row) for row in rows]
    return snapshot


def count_rows(app, model) -> int:
    with app.extensions["db_engine"].connect() as connection:
        return connection.scalar(select(func.count()).select_from(model))


def export_text(app, slug: str = "demo", fmt: str = "csv", work="workers") -> str:
    from app.documents.studies import get_study
    from app.formats import iter_export

    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        try:
            return "".join(iter_export(session, get_study(session, slug), fmt, work))
        finally:
            session.close()


def export_rows(app, slug: str = "demo") -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(export_text(app, slug, "csv"))))


def run_import_worker(app) -> dict[str, int]:
    """Run the worker's import queue until no job is runnable (``marginalia worker --once
    --queue imports``: :func:`app.detection.worker.work` without a detector); returns its
    outcome counts: ``done``, ``failed``, ``queued`` (retried later), ``lost``."""
    from app.detection.importing import nlp_loader
    from app.detection.worker import work

    factory = app.extensions["db_sessionmaker"]
    with app.app_context():
        stats = work(
            factory,
            None,
            once=True,
            load_nlp=nlp_loader(app.config.get("SPACY_MODEL")),
            figures=False,  # the imports queue only, as ``--queue imports`` runs
            trainings=False,
        )
    outcomes = {k.removeprefix("imports_"): int(v) for k, v in stats.items() if "imports" in k}
    outcomes["done"] = outcomes.pop("imports")
    return {outcome: n for outcome, n in outcomes.items() if n}


def cli_in_process(env: dict[str, str | None], *args: str):
    """``marginalia ARGS`` run in this process (click's CliRunner) with ``env`` set (a None
    value unsets a variable): the same commands, without a fresh interpreter's second or
    two of imports each. tests/test_cli.py runs the real console script.

    Returns a ``subprocess.CompletedProcess`` (returncode, stdout, stderr); anything a
    command raises other than its exit is raised here, so a crash fails the test."""
    import subprocess

    from click.testing import CliRunner

    from app.cli import main

    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def run_in_own_loop(coroutine, timeout: float = 60):
    """Run ``coroutine`` to its end in a thread of its own: a session's Playwright browser (the
    sync API) keeps an event loop running in the main thread, where asyncio.run refuses to
    start another."""
    with concurrent.futures.ThreadPoolExecutor(1) as worker:
        return worker.submit(asyncio.run, coroutine).result(timeout)


def tiny_config(**overrides) -> TrainConfig:
    """A T5 small enough to train in a test in seconds (pipeline checks, not quality)."""
    from model_server.train import TrainConfig  # torch: only for the tests that train

    base = dict(
        epochs=3,
        max_minutes=1,
        batch_size=8,
        lr=3e-3,
        warmup_steps=5,
        max_context_words=24,
        max_input_tokens=96,
        max_target_tokens=24,
        d_model=32,
        num_layers=1,
        num_heads=2,
        d_ff=64,
        vocab_size=400,
        version="tiny-test",
    )
    base.update(overrides)
    return TrainConfig(**base)
