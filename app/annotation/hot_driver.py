"""How the hot path's statements (:mod:`app.annotation.hot_sql`) reach the database.

:func:`execute` runs one on a request's ORM session or a bare connection: on Postgres as a
server-side prepared statement (``PREPARE`` once per connection, then ``EXECUTE``): planning
was most of Postgres's CPU per add (0.65 -> 0.24 ms measured, see docs/PERFORMANCE.md). An
engine made with ``execution_options={"marginalia_prepared": False}``
(``PREPARED_STATEMENTS=0``, e.g. behind a transaction-pooling PgBouncer, which cannot keep
them) runs them as plain statements. :class:`Driver` is the fast lane's way on Postgres: the
same statements on a pooled connection's psycopg2 cursor, in as few round trips as the rules
allow.
"""

from __future__ import annotations

import re
from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Connection, CursorResult, Executable, TextClause
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

PREPARED_KEY = "marginalia_prepared"  # the set of names prepared on a DBAPI connection
_IDLE = 0  # psycopg2.extensions.TRANSACTION_STATUS_IDLE: no transaction open on the server
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


_DIALECT = postgresql.psycopg2.dialect()


@cache
def _plain_form(statement: Executable) -> str:
    """``statement`` as psycopg2 runs it unprepared (``%(name)s`` placeholders). A ``text()``
    statement, or a Core one whose every value is a named parameter the caller binds (a
    value of its own, e.g. ``status == "active"``, would be a parameter nobody sends: spell
    it as SQL, ``literal_column``)."""
    compiled = statement.compile(dialect=_DIALECT)
    sql = str(compiled)
    own = [name for name, value in compiled.params.items() if value is not None]
    if own or "POSTCOMPILE" in sql:
        raise ValueError(
            f"a hot statement with values of its own ({own or sql}): spell them as SQL"
        )
    return sql


@cache
def _postgres_form(statement: Executable) -> tuple[str, tuple[str, ...]]:
    """``statement`` for ``PREPARE`` (``$1``, ``$2`` …) and its parameters' names in order."""
    names: list[str] = []

    def number(match: re.Match) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    return _PLACEHOLDER.sub(number, _plain_form(statement)), tuple(names)


@cache
def _bind_processors(statement: Executable) -> tuple[tuple[str, Any], ...]:
    """The parameters whose values psycopg2 cannot take as they are (a ``JSON`` column's
    dict), with SQLAlchemy's own converter for each: what its execution would apply."""
    compiled = statement.compile(dialect=_DIALECT)
    found = []
    for name, bind in compiled.binds.items():
        process = bind.type.dialect_impl(_DIALECT).bind_processor(_DIALECT)
        if process is not None:
            found.append((name, process))
    return tuple(found)


def _bound(statement: Executable, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as SQLAlchemy would send them for ``statement`` (its converters applied)."""
    processors = _bind_processors(statement)
    if not processors:
        return params
    return {**params, **{name: process(params[name]) for name, process in processors}}


def _execute_sql(name: str, names: tuple[str, ...]) -> str:
    arguments = ", ".join(f"%({key})s" for key in names)
    return f"EXECUTE marginalia_{name}({arguments})"


def execute(
    db: Session | Connection | Driver,
    name: str,
    statement: TextClause,
    params: dict[str, Any],
    alone: bool = False,
) -> CursorResult | DriverResult:
    """Run ``statement`` (one of this module's) with ``params``: prepared on Postgres under
    ``name`` (once per connection), as it is elsewhere; ``alone``: on the driver with no
    transaction open, committed as it runs (:meth:`Driver.run`)."""
    if isinstance(db, Driver):
        return db.run(name, statement, params, alone=alone)
    connection = db if isinstance(db, Connection) else db.connection()
    if connection.dialect.name != "postgresql" or not connection.get_execution_options().get(
        PREPARED_KEY, True
    ):
        return connection.execute(statement, params)
    body, names = _postgres_form(statement)
    prepared = connection.info.setdefault(PREPARED_KEY, set())
    if name not in prepared:
        # Not undone by a rollback: a prepared statement lives as long as the connection.
        connection.exec_driver_sql(f"PREPARE marginalia_{name} AS {body}")
        prepared.add(name)
    return connection.exec_driver_sql(_execute_sql(name, names), params)


@cache
def _row_type(names: tuple[str, ...]) -> type:
    return namedtuple("Row", names)  # noqa: PYI024 - attribute access like SQLAlchemy's Row


class DriverResult:
    """What the short paths read of a result: ``first()``, ``scalar()``, ``all()``,
    ``rowcount``."""

    def __init__(self, cursor: Any) -> None:
        self.rowcount = cursor.rowcount
        self.names = tuple(column.name for column in cursor.description or ())
        self.rows = cursor.fetchall() if cursor.description else []

    def first(self) -> Any:
        return _row_type(self.names)(*self.rows[0]) if self.rows else None

    def scalar(self) -> Any:
        return self.rows[0][0] if self.rows else None

    def all(self) -> list[tuple]:
        return list(self.rows)


class Driver:
    """A pooled Postgres connection used through its psycopg2 cursor, for the fast lane
    (app/web/fast_lane.py): this module's prepared statements without SQLAlchemy's execution
    context (a third of the lane's CPU per add). ``scalar``/``scalars`` run a Core select
    compiled for it (the short paths' cache misses; plain columns only). One transaction:
    :meth:`commit` or :meth:`rollback`, then :meth:`close` (back to the pool).

    Round trips are most of Postgres's CPU for such short transactions, so the driver sends
    ``BEGIN`` with the transaction's first statement (psycopg2 would send it alone: the
    connection is in autocommit mode while the driver holds it, and back out of it when
    returned), and :meth:`claim_and_run` sends a claim and its write together. With
    ``alone`` and no transaction open, the statements go without ``BEGIN``: Postgres runs the
    statements of one query string as one transaction of their own, each statement with its
    own snapshot (READ COMMITTED), committed when the last one succeeds and rolled back
    whole when one fails, so the ``COMMIT`` round trip goes too (:meth:`commit` has nothing
    left to send). An add or a remove is one round trip (issue 31), a multi-label mark
    ``BEGIN; claim; write``, its other rows, then ``COMMIT``. Writes whose result is not read
    go with the ``COMMIT`` (:meth:`later`): a position is ``BEGIN; claim``, the time budget's
    read, then its seconds and events with the ``COMMIT``.

    With prepared statements off (``PREPARED_STATEMENTS=0``, a transaction-pooling PgBouncer
    in front) the driver sends the same statements as plain SQL, with the same round trips:
    issue 31 measured the SQLAlchemy path that stood in for it at ~2x Postgres's CPU per
    document."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.prepare = engine.get_execution_options().get(PREPARED_KEY, True)
        self.connection = engine.raw_connection()
        self.dbapi = self.connection.dbapi_connection
        self.prepared = self.connection.info.setdefault(PREPARED_KEY, set())
        self.begun = False
        self.pending: list[bytes] = []  # statements sent with the COMMIT (:meth:`later`)
        try:
            if self.dbapi.info.transaction_status != _IDLE:  # the pool's ping (app/db.py)
                self.dbapi.rollback()
            self.dbapi.autocommit = True
        except Exception:
            self.connection.invalidate()
            raise

    def _sql(self, name: str, statement: Executable, alone: bool = False) -> str:
        """``EXECUTE`` of ``statement`` (``PREPARE``d first on a new connection), or the
        statement itself when prepared statements are off; led by ``BEGIN`` when it opens the
        transaction (unless ``alone``: see the class)."""
        if self.prepare:
            body, names = _postgres_form(statement)
            sql = _execute_sql(name, names)
            if name not in self.prepared:
                # Not undone by a rollback: a prepared statement lives as long as the connection.
                sql = f"PREPARE marginalia_{name} AS {body}; {sql}"
                self.prepared.add(name)
        else:
            sql = _plain_form(statement)
        if not self.begun and not alone:
            sql = f"BEGIN; {sql}"
            self.begun = True
        return sql

    def run(
        self, name: str, statement: Executable, params: dict[str, Any], alone: bool = False
    ) -> DriverResult:
        """``statement``; with ``alone`` and no transaction open, committed as it runs."""
        cursor = self.dbapi.cursor()
        cursor.execute(self._sql(name, statement, alone), _bound(statement, params))
        return DriverResult(cursor)

    def claim_and_run(
        self,
        claim: tuple[str, Executable],
        write: tuple[str, Executable],
        params: dict[str, Any],
        alone: bool = False,
    ) -> DriverResult:
        """The claim and then the write, one round trip; the write's result. The write
        runs after the claim took the row lock, with its own (later) snapshot, so it sees
        every add committed before the lock; its ``WHERE`` must repeat the claim's rule
        (the claim's row count is not read). With ``alone`` and no transaction open, the
        two are a transaction of their own, committed in the same round trip."""
        sql = f"{self._sql(*claim, alone)}; {self._sql(*write, alone)}"
        cursor = self.dbapi.cursor()
        cursor.execute(sql, _bound(write[1], _bound(claim[1], params)))
        return DriverResult(cursor)

    def _select(self, query: Any) -> list[tuple]:
        compiled = query.compile(dialect=self.engine.dialect)
        cursor = self.dbapi.cursor()
        cursor.execute(str(compiled), compiled.params)
        return cursor.fetchall()

    def scalar(self, query: Any) -> Any:
        rows = self._select(query)
        return rows[0][0] if rows else None

    def scalars(self, query: Any) -> list[Any]:
        return [row[0] for row in self._select(query)]

    def later(self, name: str, statement: Executable, params: dict[str, Any]) -> None:
        """``statement``, whose result is not read, sent with the ``COMMIT`` (one round trip
        less each; dropped by a rollback; an error surfaces from :meth:`commit`). Run at once
        the first time on a connection, so a ``PREPARE`` is never dropped unsent."""
        if self.prepare and name not in self.prepared:
            self.run(name, statement, params)
            return
        cursor = self.dbapi.cursor()
        self.pending.append(cursor.mogrify(self._sql(name, statement), _bound(statement, params)))

    def _end(self, command: str) -> None:
        pending, self.pending = self.pending, []
        if self.begun:
            self.begun = False
            if command == "COMMIT" and pending:
                command = b"; ".join([*pending, b"COMMIT"])
            self.dbapi.cursor().execute(command)

    def commit(self) -> None:
        self._end("COMMIT")

    def rollback(self) -> None:
        self._end("ROLLBACK")

    def close(self) -> None:
        """Back to the pool as SQLAlchemy left it: out of autocommit, no transaction open
        (else the connection is dropped)."""
        if self.dbapi.info.transaction_status != _IDLE:
            self.connection.invalidate()
            return
        self.dbapi.autocommit = False
        self.connection.close()

    def fail(self, error: Exception) -> None:
        """End after ``error``: the connection is dropped (its transaction may be left open
        and aborted, and a ``PREPARE`` counted as done may never have run, when a statement
        before it in the same query string failed). A lost
        connection drops the pool with it (a restarted database left every pooled connection
        dead: the next request gets a fresh one)."""
        self.connection.invalidate()
        dbapi = self.engine.dialect.loaded_dbapi
        if isinstance(error, (dbapi.OperationalError, dbapi.InterfaceError)):
            self.engine.dispose(close=False)


def execute_later(
    db: Session | Connection | Driver, name: str, statement: TextClause, params: dict[str, Any]
) -> None:
    """:func:`execute` for a write whose result is not read: on the driver, sent with the
    ``COMMIT`` (:meth:`Driver.later`); elsewhere run now."""
    if isinstance(db, Driver):
        db.later(name, statement, params)
    else:
        execute(db, name, statement, params)


def driver_for(engine: Any) -> Driver | None:
    """A :class:`Driver` when ``engine`` is Postgres (prepared statements on or off), else
    None."""
    if engine.dialect.name != "postgresql":
        return None
    return Driver(engine)
