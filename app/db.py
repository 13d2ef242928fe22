"""Engine and session handling: one engine per app, one session per request or command."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flask import Flask, current_app, g
from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str, *, prepared_statements: bool = True) -> Engine:
    """Create an engine with the settings each backend needs for concurrent annotators.

    ``prepared_statements=False`` (``PREPARED_STATEMENTS=0``): the hot path's statements are
    not prepared on the server (app/annotation/hot_sql.py), for a connection pooler in
    transaction mode (PgBouncer), which cannot keep them.
    """
    if url.startswith("sqlite"):
        create_private_sqlite_file(url)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            # Let SQLAlchemy, not the driver, open transactions (so savepoints work).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            # FULL: a commit that answered is on disk, also after a power cut (NORMAL in
            # WAL mode may lose the last transactions).
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(connection):
            # Writers take the write lock at BEGIN (see begin_write): a read-then-write
            # transaction then never fails half-way when another writer got in first.
            mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
            connection.exec_driver_sql(f"BEGIN {mode}")

        return engine
    engine = create_engine(
        url,
        pool_size=10,
        max_overflow=20,
        execution_options={"marginalia_prepared": prepared_statements},
    )
    ping_when_idle(engine)
    return engine


# A pooled connection back within this many seconds is used without a ping (SQLAlchemy's
# pool_pre_ping costs a SELECT 1 round trip on every request, a sixth of an add's time). One
# that broke meanwhile (the server restarted) fails its request with a 503 "try again"
# (app/web/__init__.py), and SQLAlchemy then replaces every older connection of the pool.
PING_AFTER_IDLE_S = 2.0


def ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection on checkout only when it has been idle a while."""

    @event.listens_for(engine, "checkin")
    def _returned(_dbapi_connection, record) -> None:
        record.info["returned_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_connection, record, _proxy) -> None:
        returned = record.info.get("returned_at")
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE_S:
            return
        try:
            cursor = dbapi_connection.cursor()
            cursor.execute("SELECT 1")
            cursor.close()
        except engine.dialect.loaded_dbapi.Error as exc:
            # The pool drops this connection and checks out another (SQLAlchemy's recipe).
            raise DisconnectionError() from exc


def create_private_sqlite_file(url: str) -> None:
    """Create a SQLite URL's database file readable by its owner only (0600), before SQLite
    creates it with the umask's 0644; SQLite gives its -wal and -shm files the same mode."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def init_app(app: Flask) -> None:
    """Attach an engine and session factory to the app and close sessions after each request."""
    engine = make_engine(
        app.config["DATABASE_URL"],
        prepared_statements=bool(app.config.get("PREPARED_STATEMENTS", True)),
    )
    app.extensions["db_engine"] = engine
    app.extensions["db_sessionmaker"] = sessionmaker(engine, expire_on_commit=False)

    @app.teardown_appcontext
    def _close_session(_exc):
        session = g.pop("db_session", None)
        if session is not None:
            session.close()


def get_session() -> Session:
    """The current request's session (created on first use)."""
    if "db_session" not in g:
        g.db_session = current_app.extensions["db_sessionmaker"]()
    return g.db_session


def begin_write(session: Session) -> Session:
    """Start ``session``'s transaction as a writer (SQLite: BEGIN IMMEDIATE; others: as is).

    Call before the first statement of a request that will write.
    """
    if not session.in_transaction():
        session.connection(execution_options={"sqlite_begin": "IMMEDIATE"})
    return session


@contextmanager
def session_scope() -> Iterator[Session]:
    """A session committed on success and rolled back on error (CLI and workers)."""
    session = current_app.extensions["db_sessionmaker"]()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
