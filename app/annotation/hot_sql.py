"""The hot path's SQL (:mod:`app.annotation.fast`), written once per dialect.

Plain ``text()`` statements built at import: a request binds its values and runs them, with
no statement construction, cache-key walk or ORM unit of work (issue 17's profile: building
Core statements per request cost more than running them). Each writing statement carries the
whole rule it enforces in its ``WHERE``, so it changes nothing unless every condition holds:

- :data:`CLAIM` and friends: the token's assignment is live (``status = 'active'``; one place:
  :data:`LIVE`), it is locked (an ``UPDATE`` takes the row lock, so two racing adds cannot both
  pass the duplicate guard), and the worker's activity is stamped;
- :func:`insert_annotation`: no live duplicate from another ``client_id``; the unique
  ``(assignment_id, client_id)`` decides a retry (``ON CONFLICT DO NOTHING``);
- a checked practice segment is frozen (``practice_checks``, empty outside practice).

These are the rules' only definitions (issue 25): nothing in Python decides them again. On a
refusal, ``STATE*``, ``EARLIER`` and :func:`duplicate_of` read the same conditions back so
:mod:`app.annotation.refusals` can word the answer.

Postgres and SQLite differ in two spellings only: typed NULLs (``CAST``) and null-safe
equality (``IS NOT DISTINCT FROM`` / ``IS``). On Postgres, :func:`execute` runs each
statement as a server-side prepared statement (``PREPARE`` once per connection, then
``EXECUTE``): planning was most of Postgres's CPU per add (0.65 -> 0.24 ms measured, see
docs/PERFORMANCE.md). An engine made with ``execution_options={"marginalia_prepared":
False}`` (``PREPARED_STATEMENTS=0``, e.g. behind a transaction-pooling PgBouncer, which
cannot keep them) runs them as plain statements.
"""

from __future__ import annotations

import re
from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import (
    Connection,
    CursorResult,
    DateTime,
    Float,
    Integer,
    TextClause,
    bindparam,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

TIMESTAMP = DateTime(timezone=True)

# The token's assignment, and what makes it writable: the one place to add a condition.
ROW = "assignments.id = :assignment_id AND assignments.token = :token"
LIVE = f"{ROW} AND status = 'active'"
STAMP = "last_seen_at = :now, engaged_at = COALESCE(engaged_at, :now)"
FROZEN_SEGMENT = (
    "EXISTS (SELECT 1 FROM practice_checks WHERE practice_checks.assignment_id = "
    ":assignment_id AND practice_checks.segment = :segment)"
)
FROZEN_ANNOTATION = (
    "EXISTS (SELECT 1 FROM practice_checks JOIN annotations ON annotations.assignment_id "
    "= practice_checks.assignment_id AND annotations.segment = practice_checks.segment "
    "WHERE practice_checks.assignment_id = :assignment_id AND annotations.id = :annotation_id)"
)
NOT_FROZEN_SEGMENT = f"NOT {FROZEN_SEGMENT}"
NOT_FROZEN_ANNOTATION = f"NOT {FROZEN_ANNOTATION}"


def _stamped(sql: str) -> TextClause:
    return text(sql).bindparams(bindparam("now", type_=TIMESTAMP))


# The token's fixed keys (cached per process by :mod:`app.annotation.fast`): they never change.
KEYS = text(
    "SELECT assignments.id, assignments.document_id, assignments.study_id, "
    "assignments.created_at, documents.created_at AS document_created_at, "
    "studies.taxonomy_hash FROM assignments "
    "JOIN documents ON documents.id = assignments.document_id "
    "JOIN studies ON studies.id = assignments.study_id WHERE assignments.token = :token"
).columns(
    id=Integer,
    document_id=Integer,
    study_id=Integer,
    created_at=TIMESTAMP,
    document_created_at=TIMESTAMP,
)

CLAIM = _stamped(f"UPDATE assignments SET {STAMP} WHERE {LIVE}")
CLAIM_FOR_ADD = _stamped(f"UPDATE assignments SET {STAMP} WHERE {LIVE} AND {NOT_FROZEN_SEGMENT}")
CLAIM_FOR_REMOVE = _stamped(
    f"UPDATE assignments SET {STAMP} WHERE {LIVE} AND {NOT_FROZEN_ANNOTATION}"
)
CLAIM_POSITION = _stamped(
    f"UPDATE assignments SET {STAMP}, current_segment = :segment WHERE {LIVE}"
)

# The rows of the mark that annotation :annotation_id belongs to: a multi-label mark's other
# rows name its first row in ``mark`` (issue 28), and a remove of any of them takes them all.
MARK_HEAD = (
    "COALESCE((SELECT head.mark FROM annotations head WHERE head.id = :annotation_id "
    "AND head.assignment_id = :assignment_id), :annotation_id)"
)
OF_MARK = f"assignment_id = :assignment_id AND {MARK_HEAD} IN (id, mark)"

REMOVE = _stamped(f"UPDATE annotations SET removed_at = COALESCE(removed_at, :now) WHERE {OF_MARK}")

# REMOVE with the claim's rule repeated, for :meth:`Driver.claim_and_run` (see insert_annotation).
REMOVE_CHECKED = _stamped(
    f"UPDATE annotations SET removed_at = COALESCE(removed_at, :now) WHERE {OF_MARK} "
    f"AND EXISTS (SELECT 1 FROM assignments WHERE {LIVE}) AND {NOT_FROZEN_ANNOTATION}"
)

# What a position report's time budget needs (app/annotation/timing.py): the last report's
# time and the seconds stored so far.
REPORTED = text(
    "SELECT MAX(updated_at) AS last, COALESCE(SUM(active_seconds), 0) AS total "
    "FROM segment_times WHERE assignment_id = :assignment_id"
).columns(last=TIMESTAMP, total=Float)

ADD_SECONDS = text(
    "INSERT INTO segment_times (assignment_id, segment, active_seconds, updated_at) "
    "VALUES (:assignment_id, :segment, :seconds, :now) "
    "ON CONFLICT (assignment_id, segment) DO UPDATE SET "
    "active_seconds = segment_times.active_seconds + excluded.active_seconds, "
    "updated_at = excluded.updated_at"
).bindparams(bindparam("now", type_=TIMESTAMP), bindparam("seconds", type_=Float))

# Suggestion events (app/annotation/hint_events.py): the ids narrowed to those the worker is
# shown before any write, then each (suggestion, event) stored once.
INSERT_EVENT = _stamped(
    "INSERT INTO suggestion_events (assignment_id, suggestion_id, event, created_at) "
    "VALUES (:assignment_id, :suggestion_id, :event, :now) "
    "ON CONFLICT (assignment_id, suggestion_id, event) DO NOTHING"
)

# The annotations columns an add writes, in order, with the SQL type a NULL needs on Postgres.
ANNOTATION_COLUMNS = (
    ("segment", "segment", "INTEGER"),
    ("start", "start_offset", "INTEGER"),
    ("end", "end_offset", "INTEGER"),
    ("text", "text", "TEXT"),
    ("category", "category", "TEXT"),
    ("paired_segment", "paired_segment", "INTEGER"),
    ("paired_start", "paired_start", "INTEGER"),
    ("paired_end", "paired_end", "INTEGER"),
    ("paired_text", "paired_text", "TEXT"),
    ("paired_end_segment", "paired_end_segment", "INTEGER"),
    ("comment", "comment", "TEXT"),
    ("client_id", "client_id", "TEXT"),
    ("suggestion_id", "suggestion_id", "INTEGER"),
    ("attributes_json", "attributes", "JSON"),  # JSON text or NULL (app/annotation/fast.py)
    ("mark", "mark", "INTEGER"),  # a multi-label mark's first row, on its other rows
)
# A duplicate: the same span, category and pair (the page flashes the existing mark).
DUPLICATE_COLUMNS = (
    "segment",
    "start_offset",
    "end_offset",
    "category",
    "paired_segment",
    "paired_start",
    "paired_end",
)


def _duplicates(dialect: str, what: str) -> str:
    """``SELECT what`` of the assignment's live annotations under another ``client_id`` with
    the same span, category and pair: the duplicate guard, written once for the insert's
    ``NOT EXISTS`` and for naming the existing mark (:data:`duplicate_of`)."""
    postgres = dialect == "postgresql"
    name_of = {column: name for name, column, _type in ANNOTATION_COLUMNS}
    same = " AND ".join(
        f"a.{column} IS NOT DISTINCT FROM "
        f"{_value(postgres, name_of[column], 'TEXT' if column == 'category' else 'INTEGER')}"
        if postgres
        else f"a.{column} IS :{name_of[column]}"
        for column in DUPLICATE_COLUMNS
    )
    return (
        f"SELECT {what} FROM annotations a WHERE a.assignment_id = :assignment_id "
        f"AND a.removed_at IS NULL AND a.client_id <> :client_id AND {same}"
    )


def _value(postgres: bool, name: str, sql_type: str) -> str:
    return f"CAST(:{name} AS {sql_type})" if postgres else f":{name}"


@cache
def insert_annotation(dialect: str, checked: bool = False) -> TextClause:
    """``INSERT … SELECT … WHERE NOT EXISTS (live duplicate) ON CONFLICT DO NOTHING
    RETURNING id`` for ``dialect`` (``postgresql`` or ``sqlite``). ``checked`` repeats the
    claim's conditions (live assignment, segment not frozen), for :meth:`Driver.claim_and_run`:
    sent with :data:`CLAIM_FOR_ADD` in one round trip, it must store nothing when the claim
    found nothing (whose row count is not read)."""
    postgres = dialect == "postgresql"
    columns = ", ".join(column for _name, column, _type in ANNOTATION_COLUMNS)
    values = ", ".join(_value(postgres, name, kind) for name, _column, kind in ANNOTATION_COLUMNS)
    null_time = "CAST(NULL AS TIMESTAMP WITH TIME ZONE)" if postgres else "NULL"
    return text(
        f"INSERT INTO annotations (assignment_id, {columns}, created_at, removed_at) "
        f"SELECT :assignment_id, {values}, :now, {null_time} "
        f"WHERE NOT EXISTS ({_duplicates(dialect, '1')}) "
        + (
            f"AND EXISTS (SELECT 1 FROM assignments WHERE {LIVE}) AND {NOT_FROZEN_SEGMENT} "
            if checked
            else ""
        )
        + "ON CONFLICT (assignment_id, client_id) DO NOTHING RETURNING id"
    ).bindparams(bindparam("now", type_=TIMESTAMP))


# Why a claim or a write found nothing, read on a refusal only (app/annotation/refusals.py):
# the claim's conditions as columns (the practice freeze for an add's segment, a removed
# annotation, or not read), the annotation stored under a client_id, the duplicate's id.
STATE = text(f"SELECT status, 0 AS frozen FROM assignments WHERE {ROW}")
STATE_FOR_ADD = text(
    f"SELECT status, CASE WHEN {FROZEN_SEGMENT} THEN 1 ELSE 0 END AS frozen "
    f"FROM assignments WHERE {ROW}"
)
STATE_FOR_REMOVE = text(
    f"SELECT status, CASE WHEN {FROZEN_ANNOTATION} THEN 1 ELSE 0 END AS frozen "
    f"FROM assignments WHERE {ROW}"
)
EARLIER = text(
    "SELECT id, "
    + ", ".join(f'{column} AS "{name}"' for name, column, _type in ANNOTATION_COLUMNS)
    + ", created_at FROM annotations "
    "WHERE assignment_id = :assignment_id AND client_id = :client_id"
).columns(created_at=TIMESTAMP)


# The other categories of the multi-label mark whose first row is :mark, in order.
MARK_CATEGORIES = text(
    "SELECT category FROM annotations WHERE assignment_id = :assignment_id AND mark = :mark "
    "ORDER BY id"
)


@cache
def duplicate_of(dialect: str) -> TextClause:
    """The mark (its first row's id) of the live annotation an add duplicates (the first,
    when several)."""
    return text(f"{_duplicates(dialect, 'COALESCE(a.mark, a.id)')} ORDER BY a.id LIMIT 1")


PREPARED_KEY = "marginalia_prepared"  # the set of names prepared on a DBAPI connection
_IDLE = 0  # psycopg2.extensions.TRANSACTION_STATUS_IDLE: no transaction open on the server
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


@cache
def _postgres_form(statement: TextClause) -> tuple[str, tuple[str, ...]]:
    """``statement`` for ``PREPARE`` (``$1``, ``$2`` …) and its parameters' names in order."""
    names: list[str] = []

    def number(match: re.Match) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    sql = str(statement.compile(dialect=postgresql.psycopg2.dialect()))
    return _PLACEHOLDER.sub(number, sql), tuple(names)


@cache
def _plain_form(statement: TextClause) -> str:
    """``statement`` as psycopg2 runs it unprepared (``%(name)s`` placeholders)."""
    return str(statement.compile(dialect=postgresql.psycopg2.dialect()))


def _execute_sql(name: str, names: tuple[str, ...]) -> str:
    arguments = ", ".join(f"%({key})s" for key in names)
    return f"EXECUTE marginalia_{name}({arguments})"


def execute(
    db: Session | Connection | Driver, name: str, statement: TextClause, params: dict[str, Any]
) -> CursorResult | DriverResult:
    """Run ``statement`` (one of this module's) with ``params``: prepared on Postgres under
    ``name`` (once per connection), as it is elsewhere."""
    if isinstance(db, Driver):
        return db.run(name, statement, params)
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
    returned), and :meth:`claim_and_run` sends a claim and its write together: an add or a
    remove is two round trips (``BEGIN; claim; write``, then ``COMMIT``) instead of four.

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
        try:
            if self.dbapi.info.transaction_status != _IDLE:  # the pool's ping (app/db.py)
                self.dbapi.rollback()
            self.dbapi.autocommit = True
        except Exception:
            self.connection.invalidate()
            raise

    def _sql(self, name: str, statement: TextClause) -> str:
        """``EXECUTE`` of ``statement`` (``PREPARE``d first on a new connection), or the
        statement itself when prepared statements are off; led by ``BEGIN`` when it opens the
        transaction."""
        if self.prepare:
            body, names = _postgres_form(statement)
            sql = _execute_sql(name, names)
            if name not in self.prepared:
                # Not undone by a rollback: a prepared statement lives as long as the connection.
                sql = f"PREPARE marginalia_{name} AS {body}; {sql}"
                self.prepared.add(name)
        else:
            sql = _plain_form(statement)
        if not self.begun:
            sql = f"BEGIN; {sql}"
            self.begun = True
        return sql

    def run(self, name: str, statement: TextClause, params: dict[str, Any]) -> DriverResult:
        cursor = self.dbapi.cursor()
        cursor.execute(self._sql(name, statement), params)
        return DriverResult(cursor)

    def claim_and_run(
        self, claim: tuple[str, TextClause], write: tuple[str, TextClause], params: dict[str, Any]
    ) -> DriverResult:
        """The claim and then the write, one round trip; the write's result. The write
        runs after the claim took the row lock, with its own (later) snapshot, so it sees
        every add committed before the lock; its ``WHERE`` must repeat the claim's rule
        (the claim's row count is not read)."""
        sql = f"{self._sql(*claim)}; {self._sql(*write)}"
        cursor = self.dbapi.cursor()
        cursor.execute(sql, params)
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

    def _end(self, command: str) -> None:
        if self.begun:
            self.begun = False
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


def driver_for(engine: Any) -> Driver | None:
    """A :class:`Driver` when ``engine`` is Postgres (prepared statements on or off), else
    None."""
    if engine.dialect.name != "postgresql":
        return None
    return Driver(engine)
