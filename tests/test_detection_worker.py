"""The detector worker end to end: a tiny T5 trained here, a real Postgres queue, the
``marginalia worker`` process, suggestions in the page payload, recall on submit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.crowd.platforms import DEFAULT_MAX_HINTS_PER_SEGMENT
from app.db import session_scope
from app.formats import DocumentInput
from app.models import DetectionJob, Suggestion
from tests.conftest import make_database_url, make_study, shared_file

pytestmark = [pytest.mark.slow, pytest.mark.postgres]  # both tests run on Postgres


@pytest.fixture
def database_url(request, tmp_path):
    return make_database_url("postgres", request, tmp_path)


def first_train_document() -> DocumentInput:
    from app.formats import parse_documents

    documents = parse_documents(shared_file("snac", "train.json"), "snac")
    return documents[0]


def run_worker(database_url: str, detector: Path | str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database_url, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "worker", "--once", "--detector", str(detector)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_trained_t5_suggestions_reach_the_page_and_the_recall_score(
    app, client, tiny_t5, database_url
):
    document = first_train_document()
    make_study(app, documents=[document], suggestions="shown")
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(DetectionJob)) == 1

    result = run_worker(database_url, tiny_t5[0])
    assert result.returncode == 0, result.stderr
    assert "1 document, 0 failures" in result.stderr

    with app.app_context(), session_scope() as session:
        job = session.scalar(select(DetectionJob))
        assert job.status == "done" and job.attempts == 1
        stored = session.scalars(select(Suggestion)).all()
    assert stored, "the trained detector suggested nothing on its own training summary"
    assert {s.detector for s in stored} == {"t5"}
    assert {s.category for s in stored} <= {"CharE", "RefE", "SceneE", "InconE"}
    for s in stored:
        assert document.segments[s.segment][s.start : s.end] == s.text

    opened = client.post(
        "/api/assignments",
        json={"study": "demo", "document": document.external_id, "worker_id": "w1"},
    )
    token = opened.get_json()["token"]
    payload = client.get(f"/api/assignments/{token}").get_json()
    shown = payload["suggestions"]
    # The page shows at most DEFAULT_MAX_HINTS_PER_SEGMENT per segment, the best-scored
    # first: a detector trained for 90 s on this machine sometimes suggests more in one.
    per_segment: dict[int, list[Suggestion]] = {}
    for s in sorted(stored, key=lambda s: (s.segment, -s.score, s.start, s.id)):
        per_segment.setdefault(s.segment, []).append(s)
    expected = sorted(
        s.id for kept in per_segment.values() for s in kept[:DEFAULT_MAX_HINTS_PER_SEGMENT]
    )
    assert sorted(s["id"] for s in shown) == expected

    caught = shown[0]
    added = client.post(
        f"/api/assignments/{token}/annotations",
        json={
            "segment": caught["segment"],
            "start": caught["start"],
            "end": caught["end"],
            "text": caught["text"],
            "category": caught["category"],
            "client_id": "c1",
            "suggestion_id": caught["id"],
        },
    )
    assert added.status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200

    from app.models import Assignment

    with app.app_context(), session_scope() as session:
        scores = session.scalar(select(Assignment)).scores["suggestions"]
    same = [
        s
        for s in shown
        if s["category"] == caught["category"] and s["segment"] == caught["segment"]
    ]
    # Recall counts every suggestion of the document (one per place), shown or not.
    places = {(s.segment, s.start, s.end, s.category) for s in stored}
    assert scores["total"] == len(places)
    assert 1 <= scores["caught"] <= len(same)
    assert scores["recall"] == pytest.approx(scores["caught"] / len(places))
    assert len(scores["missed"]) == len(places) - scores["caught"]


class ExplodingOnMarker:
    """Stands in for a model that breaks on one input; the loop must survive it."""

    name, version = "exploding", "1"

    def detect(self, batch):
        if any("EXPLODE" in item.sentence for item in batch):
            raise RuntimeError("model crashed on this document")
        return [[] for _ in batch]


def test_one_bad_document_never_stops_the_worker(app, database_url):
    from app.detection import jobs
    from app.detection.worker import work

    make_study(
        app,
        suggestions="hidden",
        documents=[
            ("good-1", ["A quiet morning.", "Nothing happens."]),
            ("bad", ["EXPLODE here.", "More text."]),
            ("good-2", ["Another text.", "The end."]),
        ],
    )
    factory = app.extensions["db_sessionmaker"]
    stats = work(factory, ExplodingOnMarker(), once=True)
    assert {k: stats[k] for k in ("done", "failed", "suggestions", "tokens")} == {
        "done": 2,
        "failed": 1,
        "suggestions": 0,
        "tokens": 0,
    }
    with app.app_context(), session_scope() as session:
        rows = {j.document_id: j for j in session.scalars(select(DetectionJob))}
        failed = [j for j in rows.values() if j.last_error]
        assert len(failed) == 1
        assert failed[0].status == "queued" and failed[0].attempts == 1
        assert "model crashed on this document" in failed[0].last_error
        assert failed[0].run_after > failed[0].claimed_at
        health = jobs.health(session)
    assert health["done"] == 2 and health["queued"] == 1
    assert "model crashed" in health["recent_errors"][0]["error"]


def test_a_document_that_keeps_killing_its_worker_fails_after_max_attempts(app, database_url):
    """The import queue's give-up rule (app/queue.py) holds for detection too: a
    job whose workers died MAX_ATTEMPTS times is failed for good, not claimed forever."""
    from sqlalchemy import update

    from app import queue
    from app.detection import jobs
    from app.detection.worker import work
    from app.models import utcnow

    make_study(app, suggestions="hidden", documents=[("doomed", ["A quiet morning."])])
    factory = app.extensions["db_sessionmaker"]
    for attempt in range(1, queue.MAX_ATTEMPTS + 1):
        with factory() as session:
            job = jobs.claim(session, f"doomed-{attempt}")
            assert job is not None and job.attempts == attempt
            stale = utcnow() - jobs.STALE_AFTER * 2
            session.execute(update(DetectionJob).values(claimed_at=stale))
            session.commit()
    stats = work(factory, ExplodingOnMarker(), once=True)
    assert (stats["done"], stats["failed"]) == (0, 0)
    with factory() as session:
        [job] = session.scalars(select(DetectionJob)).all()
        assert (job.status, job.attempts) == ("failed", queue.MAX_ATTEMPTS)
        assert job.last_error == "the worker stopped while detecting this document 5 times"
        assert jobs.claim(session, "next") is None


class SavingMeanwhile:
    """A model during whose run an annotator's save commits (another connection writes)."""

    name, version = "slow", "1"

    def __init__(self, path: str):
        self.path = path

    def detect(self, batch):
        import sqlite3

        other = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE studies SET title = title || '.'")
        other.execute("COMMIT")
        other.close()
        return [[] for _ in batch]


def test_a_save_while_the_model_runs_never_fails_the_job_on_sqlite(request, tmp_path, caplog):
    """`make run` (SQLite): an annotator's save committed while the detector runs once made
    the job's write fail at once ("database is locked", logged with its SQL) and retried."""
    import logging

    from app import create_app
    from app.detection.worker import work

    url = make_database_url("sqlite", request, tmp_path)
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "test"})
    make_study(app, suggestions="hidden", documents=[("d1", ["One."]), ("d2", ["Two."])])
    with caplog.at_level(logging.INFO, logger="app.detection.worker"):
        stats = work(app.extensions["db_sessionmaker"], SavingMeanwhile(url[10:]), once=True)
    app.extensions["db_engine"].dispose()
    assert (stats["done"], stats["failed"], stats.get("retried", 0)) == (2, 0, 0)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or "locked" in r.message]
