"""Small hardening: /healthz tells anonymous callers only ok or not ok; an upload over
the upload limit is told that limit; CSV downloads carry one charset; the SQLite file is
private (0600) and acknowledged commits are durable (synchronous=FULL)."""

from __future__ import annotations

import io
import os
import socket
import stat

import pytest
from sqlalchemy import text

from app import create_app
from app.db import session_scope
from app.migrate import upgrade
from app.models import DetectionJob
from tests.conftest import make_study
from tests.test_admin import admin, csrf, researcher  # noqa: F401 - fixtures

SECRET_HOST_PASSWORD = "s3cret-db-password"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_healthz_hides_the_database_error_from_anonymous_callers():
    url = f"postgresql+psycopg2://dbadmin:{SECRET_HOST_PASSWORD}@127.0.0.1:{closed_port()}/prod"
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "t"})
    answer = app.test_client().get("/healthz")
    assert answer.status_code == 503
    assert answer.get_json() == {"ok": False}
    body = answer.get_data(as_text=True)
    assert "127.0.0.1" not in body and "dbadmin" not in body and "connect" not in body


def fail_a_job(app):
    make_study(app, suggestions="shown")
    with app.app_context(), session_scope() as session:
        job = session.query(DetectionJob).first()
        job.last_error = "Traceback ...\nOSError: /srv/models/minilm missing (host gpu-7)"
        job.attempts = 1


def test_healthz_shows_anonymous_callers_only_ok(app, client):
    fail_a_job(app)
    answer = client.get("/healthz")
    assert answer.status_code == 200
    assert answer.get_json() == {"ok": True}
    assert "gpu-7" not in answer.get_data(as_text=True)


def test_healthz_shows_details_to_a_logged_in_researcher(app, admin):  # noqa: F811
    fail_a_job(app)
    health = admin.get("/healthz").get_json()
    assert health["ok"] is True and health["database"] == "ok"
    assert "gpu-7" in health["detector_queue"]["recent_errors"][0]["error"]


def test_an_upload_over_the_upload_limit_names_that_limit(app, admin):  # noqa: F811
    make_study(app)
    answer = admin.post(
        "/admin/studies/demo/documents",
        data={"csrf_token": csrf(admin), "file": (io.BytesIO(b"{}"), "d.json")},
        content_type="multipart/form-data",
        environ_overrides={"CONTENT_LENGTH": str(40 * 1024 * 1024)},
    )
    assert answer.status_code == 413
    error = answer.get_json()["error"]
    assert "32 MB" in error and "65536" not in error


def test_an_api_body_over_the_api_limit_names_the_api_limit(app, client):
    make_study(app)
    answer = client.post("/api/assignments", data=b"x" * 70_000, content_type="application/json")
    assert answer.status_code == 413
    assert "64 KB" in answer.get_json()["error"]


def test_csv_download_has_one_charset(app, admin):  # noqa: F811
    make_study(app)
    for fmt in ("csv", "jsonl", "snac"):
        answer = admin.get(f"/admin/studies/demo/export.{fmt}")
        assert answer.status_code == 200
        assert answer.headers["Content-Type"].count("charset") == 1, answer.headers["Content-Type"]


def test_a_new_sqlite_database_is_private_and_fully_synchronous(tmp_path):
    old_umask = os.umask(0o022)
    try:
        path = tmp_path / "new" / "marginalia.db"
        url = f"sqlite:///{path}"
        upgrade(url)
        app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "t"})
        make_study(app)
        with app.extensions["db_engine"].connect() as connection:
            assert connection.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
            assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            for file in path.parent.iterdir():
                assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
        app.extensions["db_engine"].dispose()
    finally:
        os.umask(old_umask)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_in_memory_sqlite_still_works(url):
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "t"})
    with app.extensions["db_engine"].connect() as connection:
        assert connection.execute(text("SELECT 1")).scalar() == 1
