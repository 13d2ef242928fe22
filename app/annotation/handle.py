"""The one way the worker actions reach the database: a :class:`Handle`.

Every action (:mod:`app.annotation.add`, ``remove``, ``position``, ``edit``, ``submit``,
``arrive``, ``read``, ``practice_check``, ``hint_events``) takes a handle and calls only the
methods below, whatever the database and whoever called it (the web's worker entry, a Flask
page view, the CLI, a test). It never asks which kind it holds: what differs between the
databases is the handle's business, or a statement-building function's
(:mod:`app.annotation.hot_sql`) when the SQL itself differs.

* :meth:`Handle.run` runs one prebuilt statement with its parameters; ``alone``: it may be a
  transaction of its own when none is open (a read, or a write whose ``WHERE`` carries its
  whole rule); inside an open transaction it simply joins it.
* :meth:`Handle.pair` runs two (a lock or claim, then the write whose result is read).
* :meth:`Handle.later` queues a write whose result is not read; it goes with the commit.
* :meth:`Handle.query` runs a Core statement built by the caller (rare paths: the arrival
  policy's choices, a refusal's wording), compiled on the spot.
* :meth:`Handle.session` is an ORM session on the same connection and transaction, for the
  rules other rooms write through the ORM (the pause rule, the qualification's scoring and
  screen-out), never for an action's own statements.

Two backends:

* **Postgres** (:class:`~app.annotation.postgres_handle.PostgresHandle`): the psycopg2 cursor of a pooled connection, no
  SQLAlchemy execution per statement (a third of the web's CPU per add when it had one).
  Statements are prepared on the server once per connection (``PREPARE``, then ``EXECUTE``):
  planning was most of Postgres's CPU per add (0.65 -> 0.24 ms, docs/PERFORMANCE.md); with
  ``PREPARED_STATEMENTS=0`` (a transaction-pooling PgBouncer, which cannot keep them) the same
  statements go as plain SQL. Round trips are most of Postgres's CPU for such short
  transactions, so the handle sends ``BEGIN`` with the transaction's first statement (the
  connection is in autocommit mode while the handle holds it), a pair in one round trip, the
  queued writes with the ``COMMIT``; and a statement or pair run ``alone`` with no transaction
  open goes without ``BEGIN``: Postgres runs the statements of one query string as one
  transaction, each with its own snapshot (READ COMMITTED), committed when the last succeeds,
  so the ``COMMIT`` round trip goes too. ``PREPARE``s lead the query string: a prepared
  statement is not undone by a rollback nor by a later statement's failure.
* **SQLite** (:class:`~app.annotation.sqlite_handle.SQLiteHandle`): the pooled sqlite3 connection through SQLAlchemy, the
  writer's ``BEGIN IMMEDIATE`` at the first statement (app/db.py: a read-then-write never
  fails half-way), the same statements run one after another, committed by :meth:`commit`.

A handle either owns its connection (:func:`app.annotation.connect.open_handle`: the caller
commits or rolls back, then closes) or borrows a Flask view's or a command's ORM session
(:func:`app.annotation.connect.handle_of`: the session's owner commits; the handle's
:meth:`commit` and :meth:`rollback` leave it alone). The backends:
:mod:`app.annotation.postgres_handle`, :mod:`app.annotation.sqlite_handle`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from sqlalchemy import Engine, Executable
from sqlalchemy.orm import Session


class Result:
    """What an action reads of a statement's result: ``first()``, ``scalar()``, ``all()``,
    ``rowcount``; rows read by attribute (``row.status``) or unpacked."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def first(self) -> Any:
        return self.rows[0] if self.rows else None

    def scalar(self) -> Any:
        return self.rows[0][0] if self.rows else None

    def all(self) -> list[Any]:
        return list(self.rows)


class Handle(ABC):
    """One transaction's way to the database (see the module's docstring)."""

    engine: Engine
    dialect: str  # "postgresql" or "sqlite": for the statement-building functions

    @abstractmethod
    def run(self, statement: Executable, params: dict[str, Any], *, alone: bool = False) -> Result:
        """``statement`` with ``params``; ``alone``: committed as it runs when no
        transaction is open."""

    def pair(
        self,
        first: Executable | None,
        second: Executable,
        params: dict[str, Any],
        *,
        alone: bool = False,
    ) -> Result:
        """``first`` (a lock or a claim: its result is not read), then ``second``, whose result
        is returned; one round trip on Postgres. ``second`` runs after ``first`` took its
        locks, with its own (later) snapshot, so it sees every write committed before them.
        Without ``first``, ``second`` alone (:meth:`run`) on either database."""
        if first is None:
            return self.run(second, params, alone=alone)
        return self._pair(first, second, params, alone)

    @abstractmethod
    def _pair(
        self, first: Executable, second: Executable, params: dict[str, Any], alone: bool
    ) -> Result:
        """:meth:`pair` with both statements, as this database sends them."""

    @abstractmethod
    def later(self, statement: Executable, params: dict[str, Any]) -> None:
        """A write whose result is not read: sent with the commit (dropped by a rollback)."""

    @abstractmethod
    def query(self, statement: Executable) -> Result:
        """A Core statement the caller built, values included (the arrival's choices), compiled
        once per shape: its values are bound to the cached SQL."""

    @abstractmethod
    def session(self) -> Session:
        """An ORM session on this handle's connection and transaction (see the module)."""

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def rollback(self) -> None: ...

    @abstractmethod
    def close(self) -> None:
        """Give the connection back (an owned handle); nothing for a borrowed one."""

    @abstractmethod
    def fail(self, error: BaseException) -> None:
        """End after ``error`` (instead of :meth:`close`): the connection is dropped."""


def lost_connection(error: BaseException) -> bool:
    """Whether ``error`` is the database failing for a while (the connection lost or refused,
    the server restarting, a lock or deadlock given up, SQLite busy), raised by psycopg2 or
    sqlite3 directly or wrapped by SQLAlchemy: nothing was stored, a retry goes through."""
    import sqlite3

    from sqlalchemy.exc import DBAPIError

    if isinstance(error, DBAPIError):
        if error.connection_invalidated:
            return True
        error = error.orig  # type: ignore[assignment]
    transient: tuple[type, ...] = (sqlite3.OperationalError,)
    try:
        import psycopg2
    except ImportError:  # pragma: no cover - an install without Postgres's driver
        pass
    else:
        transient += (psycopg2.OperationalError, psycopg2.InterfaceError)
    return isinstance(error, transient)
