"""Where an action gets its handle (:mod:`app.annotation.handle`): one of its own from a
pooled connection (the web's worker entry, a background job), or one on a Flask view's or a
command's ORM session, in its transaction."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.annotation.handle import Handle
from app.annotation.postgres_handle import PostgresHandle
from app.annotation.sqlite_handle import SQLiteHandle


def open_handle(engine: Engine, *, write: bool = True) -> Handle:
    """A handle owning a pooled connection of ``engine``; ``write``: a writer's transaction
    (SQLite's ``BEGIN IMMEDIATE``)."""
    if engine.dialect.name == "postgresql":
        return PostgresHandle(engine, engine.connect(), owned=True)
    return SQLiteHandle(engine, engine.connect(), owned=True, write=write)


def handle_of(session: Session) -> Handle:
    """A handle on ``session``'s connection, in its transaction (the session's owner commits);
    the session's pending changes are flushed first, so the handle's statements see them."""
    session.flush()
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        return PostgresHandle(connection.engine, connection, owned=False, session=session)
    return SQLiteHandle(connection.engine, connection, owned=False, session=session)
