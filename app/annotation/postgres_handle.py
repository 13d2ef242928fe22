"""The Postgres backend of the actions' handle (:mod:`app.annotation.handle`): a pooled
connection used through its psycopg2 cursor, statements prepared once per connection (or
plain with ``PREPARED_STATEMENTS=0``), ``BEGIN`` sent with the transaction's first statement,
a pair in one round trip, the queued writes with the ``COMMIT``, and a statement run alone
with no transaction open committed by the server as it runs."""

from __future__ import annotations

import hashlib
import re
from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Connection, Engine, Executable
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from app.annotation.cache import Bounded
from app.annotation.handle import Handle, Result, lost_connection

PREPARED_KEY = "marginalia_prepared"  # the set of names prepared on a pooled connection
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
        raise ValueError(f"a prebuilt statement with values of its own ({own or sql}): use query()")
    return sql


@cache
def _prepared_form(statement: Executable) -> tuple[str, str, tuple[str, ...]]:
    """The name ``statement`` is prepared under (from its text: the same statement, the same
    name on every connection), its body for ``PREPARE`` (``$1``, ``$2`` …) and its
    parameters' names in order."""
    names: list[str] = []

    def number(match: re.Match) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    body = _PLACEHOLDER.sub(number, _plain_form(statement))
    name = "marginalia_" + hashlib.sha1(body.encode(), usedforsecurity=False).hexdigest()[:20]
    return name, body, tuple(names)


# query()'s compiled statements by shape (SQLAlchemy's cache key: the statement without
# its values), as SQLAlchemy's own connection caches them: an arrival's choices are built per
# call with the study's and worker's values, and compiling one costs ~1 ms where running it
# costs a tenth of that. Each entry: the SQL, the compiled form, its bind processors.
_compiled_cache: Bounded[tuple[str, Any, tuple[tuple[str, Any], ...]]] = Bounded(500, 500)


def _compiled_query(statement: Executable, dialect: Any) -> tuple[str, dict[str, Any]]:
    """``statement``'s SQL and its values as psycopg2 takes them, compiled once per shape;
    a statement with a list for ``IN`` (rendered into the SQL) is compiled each time."""
    key = statement._generate_cache_key()  # None: a shape SQLAlchemy cannot cache either
    shape = None if key is None else (dialect.name, key.key)
    entry = None if shape is None else _compiled_cache.get(shape)
    if entry is None:
        compiled = statement.compile(dialect=dialect, cache_key=key)
        if key is None or compiled.post_compile_params or compiled.literal_execute_params:
            compiled = statement.compile(
                dialect=dialect, compile_kwargs={"render_postcompile": True}
            )
            params = compiled.construct_params()
            return str(compiled), _processed(params, _processors(compiled, dialect))
        entry = (str(compiled), compiled, _processors(compiled, dialect))
        _compiled_cache.put(shape, entry)
    sql, compiled, processors = entry
    params = compiled.construct_params(extracted_parameters=key.bindparams)
    return sql, _processed(params, processors)


def _processors(compiled: Any, dialect: Any) -> tuple[tuple[str, Any], ...]:
    """The parameters of ``compiled`` whose values psycopg2 cannot take as they are (a
    ``JSON`` column's dict), with SQLAlchemy's own converter for each: what its execution
    would apply."""
    found = []
    for name, bind in compiled.binds.items():
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            found.append((name, process))
    return tuple(found)


def _processed(params: dict[str, Any], processors: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    for name, process in processors:
        if name in params:
            params[name] = process(params[name])
    return params


@cache
def _bind_processors(statement: Executable) -> tuple[tuple[str, Any], ...]:
    """:func:`_processors` of a prebuilt statement."""
    return _processors(statement.compile(dialect=_DIALECT), _DIALECT)


def _bound(statement: Executable, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as SQLAlchemy would send them for ``statement`` (its converters applied)."""
    processors = _bind_processors(statement)
    if not processors:
        return params
    return {**params, **{name: process(params[name]) for name, process in processors}}


@cache
def _row_type(names: tuple[str, ...]) -> type:
    return namedtuple("Row", names, rename=True)  # noqa: PYI024 - attribute access like a Row


def _result(cursor: Any) -> Result:
    if cursor.description is None:
        return Result([], cursor.rowcount)
    row = _row_type(tuple(column.name for column in cursor.description))
    return Result([row(*values) for values in cursor.fetchall()], cursor.rowcount)


class PostgresHandle(Handle):
    """A pooled Postgres connection used through its psycopg2 cursor (see the module)."""

    dialect = "postgresql"

    def __init__(
        self, engine: Engine, connection: Connection, *, owned: bool, session: Session | None = None
    ) -> None:
        self.engine = engine
        self.connection = connection
        self.owned = owned
        self.prepare = engine.get_execution_options().get(PREPARED_KEY, True)
        self.dbapi = connection.connection.dbapi_connection
        self.prepared: set[str] = connection.connection.info.setdefault(PREPARED_KEY, set())
        self.begun = not owned  # a borrowed connection is in its session's transaction
        self.pending: list[tuple[str | None, str | None, bytes]] = []  # later(): name, body, SQL
        self._session = session
        if owned:
            try:
                if self.dbapi.info.transaction_status != _IDLE:  # the pool's ping (app/db.py)
                    self.dbapi.rollback()
                self.dbapi.autocommit = True
            except Exception:
                connection.invalidate()
                connection.close()
                raise

    def _sql(self, statements: tuple[Executable, ...], alone: bool) -> str:
        """The query string of ``statements``: new ``PREPARE``s first, then ``BEGIN`` when it
        opens the transaction (unless ``alone``), then each ``EXECUTE`` (or the statement
        itself with prepared statements off)."""
        parts: list[str] = []
        runs: list[str] = []
        for statement in statements:
            if self.prepare:
                name, body, names = _prepared_form(statement)
                if name not in self.prepared:
                    parts.append(f"PREPARE {name} AS {body}")
                    self.prepared.add(name)
                runs.append(_execute(name, names))
            else:
                runs.append(_plain_form(statement))
        if not self.begun and not alone:
            parts.append("BEGIN")
            self.begun = True
        return "; ".join(parts + runs)

    def run(self, statement: Executable, params: dict[str, Any], *, alone: bool = False) -> Result:
        cursor = self.dbapi.cursor()
        cursor.execute(self._sql((statement,), alone), _bound(statement, params))
        return _result(cursor)

    def _pair(
        self, first: Executable, second: Executable, params: dict[str, Any], alone: bool
    ) -> Result:
        cursor = self.dbapi.cursor()
        sql = self._sql((first, second), alone)
        cursor.execute(sql, _bound(second, _bound(first, params)))
        return _result(cursor)

    def later(self, statement: Executable, params: dict[str, Any]) -> None:
        if self._session is not None and not self.owned:  # a session's: its owner commits
            self.run(statement, params)
            return
        name = body = None
        if self.prepare:
            name, body, names = _prepared_form(statement)
            sql = _execute(name, names)
        else:
            sql = _plain_form(statement)
        mogrified = self.dbapi.cursor().mogrify(sql, _bound(statement, params))
        self.pending.append((name, body, mogrified))

    def query(self, statement: Executable) -> Result:
        sql, params = _compiled_query(statement, self.engine.dialect)
        if not self.begun:
            sql, self.begun = f"BEGIN; {sql}", True
        cursor = self.dbapi.cursor()
        cursor.execute(sql, params)
        return _result(cursor)

    def session(self) -> Session:
        if self._session is None:
            self._send_pending(with_commit=False)
            if not self.begun:
                self.dbapi.cursor().execute("BEGIN")
                self.begun = True
            self._session = Session(bind=self.connection, expire_on_commit=False)
        return self._session

    def _send_pending(self, *, with_commit: bool) -> None:
        """The queued writes (their new ``PREPARE``s first), with ``COMMIT`` if asked: inside
        the open transaction, else as one of their own."""
        pending, self.pending = self.pending, []
        prepares: dict[str, str] = {}
        for name, body, _sql in pending:
            if name is not None and name not in self.prepared and name not in prepares:
                prepares[name] = f"PREPARE {name} AS {body}"
        parts = [text.encode() for text in prepares.values()]
        self.prepared.update(prepares)
        if not self.begun and with_commit and pending:  # one implicit transaction
            parts += [sql for _name, _body, sql in pending]
        else:
            if not self.begun and pending:
                parts.append(b"BEGIN")
                self.begun = True
            parts += [sql for _name, _body, sql in pending]
            if with_commit and self.begun:
                parts.append(b"COMMIT")
                self.begun = False
        if parts:
            self.dbapi.cursor().execute(b"; ".join(parts))

    def commit(self) -> None:
        if not self.owned:
            return
        if self._session is not None:
            self._session.flush()
        self._send_pending(with_commit=True)

    def rollback(self) -> None:
        if not self.owned:
            return
        self.pending = []
        if self.begun:
            self.begun = False
            self.dbapi.cursor().execute("ROLLBACK")

    def close(self) -> None:
        """Back to the pool as SQLAlchemy left it: out of autocommit, no transaction open
        (else the connection is dropped)."""
        if not self.owned:
            return
        if self._session is not None:
            self._session.close()  # its rollback is psycopg2's no-op in autocommit mode
        if self.dbapi.info.transaction_status != _IDLE:
            self.connection.invalidate()
        else:
            self.dbapi.autocommit = False
        self.connection.close()

    def fail(self, error: BaseException) -> None:
        """The connection is dropped (its transaction may be left open and aborted). A lost
        connection drops the pool with it (a restarted database left every pooled connection
        dead: the next request gets a fresh one)."""
        if not self.owned:
            return
        try:
            self.connection.invalidate()
            self.connection.close()
        finally:
            if lost_connection(error):
                self.engine.dispose(close=False)


def _execute(name: str, names: tuple[str, ...]) -> str:
    arguments = ", ".join(f"%({key})s" for key in names)
    return f"EXECUTE {name}({arguments})" if names else f"EXECUTE {name}"
