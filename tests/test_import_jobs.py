"""Uploads off the request: the admin upload stores the file as an import
job and answers at once; the worker parses, finds entities and stores the documents in one
transaction; the dashboard's progress JSON follows the job; a bad file fails the job with
the CLI's one-line message and stores nothing; transient database errors are retried.
On SQLite and Postgres."""

from __future__ import annotations

import io
import json
import re
import time
from datetime import timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from sqlalchemy import create_engine, func, inspect, select, update
from sqlalchemy.exc import OperationalError

from app import queue
from app.db import session_scope
from app.detection import import_jobs
from app.errors import InvalidInput
from app.models import Base, Document, Entity, GoldError, ImportJob, Segment, utcnow
from app.queue import is_transient
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import run_import_worker

EMAIL, PASSWORD = "researcher@example.org", "a long enough password"
TOKEN_PATTERN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def admin(app, client):
    from app.researchers.accounts import create_researcher

    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    answer = client.post(
        "/admin/login",
        data={"email": EMAIL, "password": PASSWORD, "csrf_token": csrf(client)},
    )
    assert answer.status_code == 302
    return client


def csrf(client) -> str:
    page = client.get("/admin/login").get_data(as_text=True)
    return TOKEN_PATTERN.search(page).group(1)


def post_upload(admin, content: bytes, name: str = "docs.json", **fields):
    """The upload alone: the worker does not run."""
    return admin.post(
        "/admin/studies/demo/documents",
        data={
            "csrf_token": csrf(admin),
            "file": (io.BytesIO(content), name),
            "format": "auto",
            "ner": "",
            **fields,
        },
        content_type="multipart/form-data",
    )


def document_ids(app) -> list[str]:
    with app.app_context(), session_scope() as session:
        return list(session.scalars(select(Document.external_id).order_by(Document.position)))


def count(app, model) -> int:
    with app.app_context(), session_scope() as session:
        return session.scalar(select(func.count()).select_from(model))


def imports(admin) -> list[dict]:
    answer = admin.get("/admin/studies/demo/progress.json")
    assert answer.status_code == 200
    return answer.get_json()["imports"]


def test_upload_answers_at_once_and_the_worker_imports(app, admin):
    make_study(app, documents=[("doc-0", ["Existing."])])
    stories = {"story-1": ["Anna walks home.", "She sleeps."], "story-2": ["One.", "Two."]}
    content = json.dumps(stories).encode()
    answer = post_upload(admin, content)
    assert answer.status_code == 302
    assert answer.headers["Location"].endswith("/admin/studies/demo#imports")
    # Nothing parsed or stored inside the request: the file waits in the queue.
    assert document_ids(app) == ["doc-0"]
    [job] = imports(admin)
    assert (job["status"], job["filename"], job["message"]) == (
        "queued",
        "docs.json",
        "Queued: waiting for the worker",
    )
    with app.app_context(), session_scope() as session:
        stored = session.scalar(select(ImportJob))
        assert stored.payload == content
        assert stored.created_by == EMAIL
        assert stored.options == {"sentences_per_segment": None, "gold": False, "ner": False}
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert 'id="import-jobs"' in page and "Queued: waiting for the worker" in page

    assert run_import_worker(app) == {"done": 1}
    assert document_ids(app) == ["doc-0", "story-1", "story-2"]
    assert count(app, Segment) == 1 + 4
    [job] = imports(admin)
    assert job["status"] == "done"
    assert job["message"] == "Imported 2 documents (4 segments)."
    assert (job["processed"], job["total"], job["counts"]["documents"]) == (2, 2, 2)
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(ImportJob.payload)) == b""  # the file is not kept
    assert run_import_worker(app) == {}  # done jobs are not run twice
    assert document_ids(app) == ["doc-0", "story-1", "story-2"]


def test_the_worker_finds_entities_with_spacy(app, admin, database_url):
    if not database_url.startswith("sqlite"):
        pytest.skip("spaCy's part does not depend on the database")
    pytest.importorskip("spacy")
    make_study(app, documents=[("doc-0", ["Existing."])])
    story = {"story-1": ["Anna Karenina met Count Vronsky in Moscow.", "Anna smiled at him."]}
    assert post_upload(admin, json.dumps(story).encode(), ner="1").status_code == 302
    assert count(app, Entity) == 0  # spaCy did not run in the request
    assert run_import_worker(app) == {"done": 1}
    [job] = imports(admin)
    if not job["counts"]["ner_available"]:
        pytest.skip("no spaCy English model installed")
    assert job["counts"]["entities"] >= 1
    assert count(app, Entity) == job["counts"]["entities"]


def test_gold_upload_stores_located_spans(app, admin):
    make_study(app, documents=[("doc-0", ["Existing."])])
    snac = {
        "gold-1": {
            "0": {
                "text": "Anna met Bob there.",
                "errors": [
                    {"span": "Bob", "error_type": "CharE", "votes": 2},
                    {"span": "nowhere", "error_type": "CharE", "votes": 1},
                ],
            }
        }
    }
    content = json.dumps(snac).encode()
    assert post_upload(admin, content, "gold.json", gold="1", format="snac").status_code == 302
    assert run_import_worker(app) == {"done": 1}
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(GoldError.text, GoldError.start, GoldError.end, GoldError.votes)
            .join(Document)
            .where(Document.is_gold)
            .order_by(GoldError.id)
        ).all()
    assert rows == [("Bob", 9, 12, 2), ("nowhere", None, None, 1)]
    job = imports(admin)[0]
    assert job["message"] == (
        "Imported 1 document (1 segment), 2 gold errors, "
        "1 gold span not found verbatim in their segment."
    )
    assert job["counts"]["unlocated_gold"] == 1


BAD_FILES = {
    "broken.json": (b'{"doc-1": ["fine",\n  ]\n', {}),
    "empty-segment.json": (b'{"doc-1": ["fine", ""]}', {}),
    "clash.json": (b'{"new-1": ["fine"], "doc-0": ["clashes with an existing one"]}', {}),
    "latin1.json": ('{"doc-é": ["caf\u00e9"]}'.encode("latin-1"), {}),
    "gold.json": (
        json.dumps(
            {
                "g-1": {
                    "0": {"text": "Anna met Bob.", "errors": [{"span": "Bob", "error_type": "X"}]}
                }
            }
        ).encode(),
        {"gold": "1", "format": "snac"},
    ),
}


def test_a_bad_file_fails_its_job_with_the_cli_message_and_stores_nothing(
    app, admin, database_url, tmp_path, monkeypatch
):
    from app.cli import main

    make_study(app, documents=[("doc-0", ["Existing."])])
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.chdir(tmp_path)
    segments = count(app, Segment)
    for name, (content, fields) in BAD_FILES.items():
        (tmp_path / name).write_bytes(content)
        args = ["import", "demo", name, "--no-ner"]
        if fields.get("gold"):
            args += ["--gold", "--format", "snac"]
        cli = CliRunner().invoke(main, args)
        assert cli.exit_code == 1, cli.output
        message = cli.output.strip().splitlines()[-1].removeprefix("error: ")
        assert post_upload(admin, content, name, **fields).status_code == 302, name
        assert run_import_worker(app) == {"failed": 1}, name
        job = imports(admin)[0]
        assert (job["status"], job["error"]) == ("failed", message), name
        assert job["message"] == f"Import failed: {message}"
        assert "\n" not in job["error"]
        assert document_ids(app) == ["doc-0"], name  # all or nothing
        assert count(app, Segment) == segments, name
    with app.app_context(), session_scope() as session:
        assert set(session.scalars(select(ImportJob.payload))) == {b""}


def test_cheap_checks_refuse_in_the_request_and_queue_nothing(app, admin):
    make_study(app, documents=[("doc-0", ["Existing."])])
    good = b'{"d": ["A."]}'
    for content, fields, message in [
        (good, {"format": "xml"}, "unknown format"),
        (good, {"sentences_per_segment": "two"}, "must be a whole number"),
        (good, {"sentences_per_segment": "0"}, "must be at least 1"),
        (b"  \n", {}, "the file is empty"),
    ]:
        answer = post_upload(admin, content, **fields)
        assert answer.status_code == 400, fields
        assert message in answer.get_data(as_text=True), fields
    assert count(app, ImportJob) == 0
    for _ in range(import_jobs.MAX_PENDING):
        assert post_upload(admin, good).status_code == 302
    answer = post_upload(admin, good)
    assert answer.status_code == 400
    assert "already waiting" in answer.get_data(as_text=True)
    assert count(app, ImportJob) == import_jobs.MAX_PENDING


def test_progress_shows_a_running_job_n_of_m(app, admin):
    make_study(app, documents=[("doc-0", ["Existing."])])
    assert post_upload(admin, b'{"d": ["A."]}').status_code == 302
    with app.extensions["db_sessionmaker"]() as session:  # no app context: requests get theirs
        job = import_jobs.claim(session, "test-worker")
        assert imports(admin)[0]["message"] == "Reading the file"
        import_jobs.report_progress(session, job, 3, total=10)
        assert imports(admin)[0]["message"] == "Running: 3 of 10 documents"
        import_jobs.report_progress(session, job, 10)
    assert imports(admin)[0]["message"] == "Storing 10 documents"
    assert imports(admin)[0]["status"] == "running"


def test_a_stale_running_job_is_taken_over_and_stored_once(app, admin):
    """A worker that died mid-job: another claims the job after STALE_AFTER and stores it;
    the dead worker's late finish is refused, so nothing is stored twice."""
    make_study(app, documents=[("doc-0", ["Existing."])])
    assert post_upload(admin, b'{"late": ["A."]}').status_code == 302
    with app.app_context(), session_scope() as session:
        dead = import_jobs.claim(session, "dead-worker")
        session.execute(
            update(ImportJob).values(heartbeat_at=utcnow() - import_jobs.STALE_AFTER * 2)
        )
        session.commit()
    assert run_import_worker(app) == {"done": 1}
    assert document_ids(app) == ["doc-0", "late"]
    with app.app_context(), session_scope() as session:
        from app.errors import Conflict

        with pytest.raises(Conflict):
            import_jobs.mark_done(session, dead, {"documents": 1})
        session.rollback()
        assert session.scalar(select(ImportJob.attempts)) == 2


def test_transient_errors_are_retried_with_backoff_then_fail(app, admin, tmp_path):
    make_study(app, documents=[("doc-0", ["Existing."])])
    # A real "database is locked": one connection holds the write lock, another gives up.
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    holder = create_engine(url, connect_args={"timeout": 0})
    waiter = create_engine(url, connect_args={"timeout": 0})
    with holder.connect() as first:
        first.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        first.commit()
        first.exec_driver_sql("BEGIN IMMEDIATE")
        with pytest.raises(OperationalError) as locked, waiter.connect() as second:
            second.exec_driver_sql("INSERT INTO t VALUES (1)")
        first.rollback()
    holder.dispose()
    waiter.dispose()
    assert "locked" in str(locked.value)
    assert is_transient(locked.value)
    assert not is_transient(InvalidInput("docs.json:1: invalid JSON"))

    assert post_upload(admin, b'{"d": ["A."]}').status_code == 302
    with app.app_context(), session_scope() as session:
        job_id = session.scalar(select(ImportJob.id))
        for attempt in range(1, queue.MAX_ATTEMPTS + 1):
            job = import_jobs.claim(session, "w")
            assert job is not None and job.attempts == attempt
            status = import_jobs.retry(session, job_id, "database is locked")
            if attempt < queue.MAX_ATTEMPTS:
                assert status == "queued"
                waiting = session.get(ImportJob, job_id)
                run_after = waiting.run_after.replace(tzinfo=None)  # SQLite gives it naive
                soonest = utcnow().replace(tzinfo=None) + queue.backoff(attempt)
                assert run_after > soonest - timedelta(seconds=5)
                assert import_jobs.claim(session, "w") is None  # not before its backoff
                session.execute(update(ImportJob).values(run_after=utcnow()))
                session.commit()
        assert status == "failed"
        failed = session.get(ImportJob, job_id)
        assert (failed.error, failed.payload) == ("database is locked", b"")
    assert document_ids(app) == ["doc-0"]


def test_migration_matches_the_model(database_url):
    """Alembic's autogenerate finds nothing to change for import_jobs after 0002."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            diff = [d for d in compare_metadata(context, Base.metadata) if "import_jobs" in repr(d)]
            assert "import_jobs" in inspect(connection).get_table_names()
    finally:
        engine.dispose()
    assert diff == []


def test_keep_alive_beats_for_its_own_claim_only(app, admin):
    """A long spaCy pass or store keeps the job claimed; a taken-over job is left alone."""
    make_study(app, documents=[("doc-0", ["Existing."])])
    assert post_upload(admin, b'{"d": ["A."]}').status_code == 302
    old = utcnow() - import_jobs.STALE_AFTER * 2
    with app.extensions["db_sessionmaker"]() as session:
        job = import_jobs.claim(session, "slow-worker")
        session.execute(update(ImportJob).values(heartbeat_at=old))
        session.commit()
        with import_jobs.KeepAlive(session.get_bind(), job, every=0.05):
            time.sleep(0.5)
        beat = session.scalar(select(ImportJob.heartbeat_at))
        assert beat.replace(tzinfo=None) > old.replace(tzinfo=None) + import_jobs.STALE_AFTER
        assert import_jobs.claim(session, "other-worker") is None  # still alive
        session.execute(update(ImportJob).values(heartbeat_at=old))
        session.commit()
        with app.extensions["db_sessionmaker"]() as other:  # another worker's own session
            taken = import_jobs.claim(other, "other-worker")
            assert taken is not None and taken.claimed_by == "other-worker"
        session.execute(update(ImportJob).values(heartbeat_at=old))
        session.commit()
        with import_jobs.KeepAlive(session.get_bind(), job, every=0.05):
            time.sleep(0.3)
        beat = session.scalar(select(ImportJob.heartbeat_at))
        assert beat.replace(tzinfo=None) == old.replace(tzinfo=None)


def test_a_file_that_keeps_killing_its_worker_fails_after_max_attempts(app, admin):
    make_study(app, documents=[("doc-0", ["Existing."])])
    assert post_upload(admin, b'{"d": ["A."]}').status_code == 302
    factory = app.extensions["db_sessionmaker"]
    for attempt in range(1, queue.MAX_ATTEMPTS + 1):
        with factory() as session:
            job = import_jobs.claim(session, f"doomed-{attempt}")
            assert job is not None and job.attempts == attempt
            stale = utcnow() - import_jobs.STALE_AFTER * 2
            session.execute(update(ImportJob).values(heartbeat_at=stale))
            session.commit()
    assert run_import_worker(app) == {}
    [job] = imports(admin)
    assert job["status"] == "failed"
    assert job["error"] == "the worker stopped while importing this file 5 times"
    assert document_ids(app) == ["doc-0"]
