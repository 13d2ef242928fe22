"""Shared fixtures: a migrated app on SQLite (default) or on the suite's real Postgres."""

from __future__ import annotations

import gc
import itertools
import os
import sqlite3
from pathlib import Path

import pytest

from app import create_app
from app.migrate import upgrade
from tests import pg_cluster

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("MARGINALIA_SHARED_DATA", REPO.parent / "shared" / "data"))
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
_counter = itertools.count()


def shared_file(*parts: str) -> Path:
    """A file of ../shared/data; when it is absent, skip the test cleanly, or fail it when
    ``MARGINALIA_REQUIRE_DATA`` is set (CI has the data, so there the test must run)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        if os.environ.get("MARGINALIA_REQUIRE_DATA"):
            pytest.fail(f"shared data {path} is missing (MARGINALIA_REQUIRE_DATA is set)")
        pytest.skip(f"shared data {path} is not available")
    return path


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> tuple[Path, dict]:
    """A T5 small enough to train in seconds, on SNaC train's first summary (enough epochs
    that it says something on that summary), saved in HF format: trained once per session
    for the detector's tests and the worker's. ``(folder, training summary)``."""
    from model_server.train import train
    from tests.helpers import tiny_config

    data = shared_file("snac", "train.json")
    out = tmp_path_factory.mktemp("t5") / "tiny"
    config = tiny_config(epochs=60, max_minutes=1.5, d_model=64, d_ff=128)
    return out, train(data, out, cfg=config, limit_docs=1, progress=False)


@pytest.fixture(scope="session")
def postgres_cluster():
    cluster = pg_cluster.start_cluster()
    if cluster is None:
        if os.environ.get("MARGINALIA_REQUIRE_POSTGRES"):
            pytest.fail("Postgres binaries are missing (make test installs them)")
        pytest.skip("no PostgreSQL server binaries installed")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def postgres_template(postgres_cluster):
    """A migrated database that every Postgres test copies (CREATE DATABASE ... TEMPLATE)."""
    url = pg_cluster.create_database(postgres_cluster, "marginalia_template")
    upgrade(url)
    from sqlalchemy import create_engine

    create_engine(url).dispose()
    return "marginalia_template"


_SQLITE_TEMPLATE: dict[str, Path] = {}


def make_database_url(kind: str, request, tmp_path: Path) -> str:
    """A fresh, migrated database of ``kind`` (``sqlite`` or ``postgres``) for one test.

    SQLite copies one migrated template file (Alembic costs ~0.5 s per database); Postgres
    databases are copied from a migrated template and dropped when the test ends.
    """
    if kind == "sqlite":
        template = _SQLITE_TEMPLATE.get("path")
        # A later pytest session in the same process (mutmut runs several) has a new tmp.
        if template is None or not template.exists():
            folder = request.getfixturevalue("tmp_path_factory").mktemp("sqlite-template")
            template = folder / "template.db"
            upgrade(f"sqlite:///{template}")
            _SQLITE_TEMPLATE["path"] = template
        target = tmp_path / "marginalia.db"
        source, copy = sqlite3.connect(template), sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            source.close()
            copy.close()
        return f"sqlite:///{target}"
    cluster = request.getfixturevalue("postgres_cluster")
    template = request.getfixturevalue("postgres_template")
    name = f"test_{os.getpid()}_{next(_counter)}"
    url = pg_cluster.create_database(cluster, name, template)
    request.addfinalizer(lambda: pg_cluster.drop_database(cluster, name))
    return url


@pytest.fixture
def database_url(request, tmp_path) -> str:
    """SQLite by default; a module can override this fixture with ``params=BACKENDS``."""
    return make_database_url("sqlite", request, tmp_path)


@pytest.fixture(autouse=True)
def _collect_leftover_connections():
    """Collect garbage after each test, at a safe point. A pooled connection left for the
    garbage collector can be finalised (a rollback: Python code) inside the next test's
    werkzeug ``ast.parse`` (route compilation in ``create_app``), which Python 3.11.7 reports
    as "AST constructor recursion depth mismatch" (cpython gh-106905): a flaky setup error in
    whichever test comes next, not our code. The survivors are then frozen out of the
    collector's view, so each collection only walks what one test allocated (a full one over
    the loaded models would cost ~0.3 s per test)."""
    yield
    gc.collect()
    gc.freeze()


# Password hashes in the suite's apps: one cheap pbkdf2 round instead of scrypt's ~85 ms of
# CPU (hundreds of logins); outside these fixtures (the CLI's processes, production) scrypt.
TEST_PASSWORD_HASH = "pbkdf2:sha256:1"


@pytest.fixture
def app(database_url):
    application = create_app(
        {
            "DATABASE_URL": database_url,
            "TESTING": True,
            "SECRET_KEY": "test",
            "PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH,
        }
    )
    yield application
    application.extensions["db_engine"].dispose()


@pytest.fixture
def client(app):
    return app.test_client()


def make_study(
    app,
    slug: str = "demo",
    taxonomy: str = "taxonomies/snac.yaml",
    documents=None,
    *,
    suggestions: str = "hidden",
    annotators_per_doc: int = 3,
    gold: bool = False,
):
    """Create a study and import ``documents`` [(external_id, [segment texts])] into it."""
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.formats import DocumentInput

    documents = documents or [("doc-1", ["First segment.", "Second segment.", "Third one."])]
    inputs = [
        d if isinstance(d, DocumentInput) else DocumentInput(d[0], list(d[1])) for d in documents
    ]
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session,
            slug,
            REPO / taxonomy,
            suggestions=suggestions,
            annotators_per_doc=annotators_per_doc,
        )
        import_documents(session, study, inputs, gold=gold)
        return study.id


@pytest.fixture
def flask_saw(app):
    """The API paths that reached Flask (the worker API's entry answered the others)."""
    import flask

    seen: list[str] = []

    @app.before_request
    def _seen():
        if flask.request.path.startswith("/api/assignments/"):
            path = flask.request.path.rsplit("/", 1)[-1]
            seen.append(f"{flask.request.method} {path}")

    return seen
