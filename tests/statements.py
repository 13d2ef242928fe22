"""What the database receives: every query string an app's engine sends, on Postgres through
the psycopg2 cursor the actions use (a cursor class that records, set on each checkout) and
on SQLite through SQLAlchemy's cursor events. Instrumentation of the drivers only: the
statements run as they would."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event

CONTROL = re.compile(r"^(BEGIN|COMMIT|ROLLBACK|PREPARE|SAVEPOINT|RELEASE|DEALLOCATE)\b", re.I)


@contextmanager
def recorded(app) -> Iterator[list[str]]:
    """The query strings (round trips) ``app``'s engine sends inside the block, in order."""
    engine = app.extensions["db_engine"]
    sent: list[str] = []
    if engine.dialect.name == "postgresql":
        import psycopg2.extensions

        class Recording(psycopg2.extensions.cursor):
            def execute(self, query, params=None):
                sent.append(query if isinstance(query, str) else query.decode())
                return super().execute(query, params)

        def record(dbapi_connection, _record, _proxy) -> None:
            dbapi_connection.cursor_factory = Recording

        def reset(dbapi_connection, _record) -> None:
            dbapi_connection.cursor_factory = psycopg2.extensions.cursor

        event.listen(engine, "checkout", record)
        event.listen(engine, "checkin", reset)
        try:
            yield sent
        finally:
            event.remove(engine, "checkout", record)
            event.remove(engine, "checkin", reset)
        return

    def record_sqlite(_conn, _cursor, statement, *_args) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", record_sqlite)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record_sqlite)


def statements(sent: list[str]) -> list[str]:
    """The data statements of ``sent`` (``EXECUTE`` of a prepared one counted as one), the
    transaction's control and ``PREPARE`` left out."""
    out = []
    for query in sent:
        for part in query.split("; "):
            part = part.strip()
            if part and not CONTROL.match(part):
                out.append(part)
    return out


_PREPARED = re.compile(r"^PREPARE (\w+) AS (.*)$", re.S)
_EXECUTED = re.compile(r"^EXECUTE (\w+)")


def words(sent: list[str], known: list[str] | None = None) -> list[str]:
    """The first word of each data statement of ``sent`` (``SELECT``, ``INSERT``, ``UPDATE``,
    ``WITH`` …), an ``EXECUTE`` read as the statement it runs, from the ``PREPARE``s seen in
    ``known`` (a recording that began earlier) or in ``sent``."""
    bodies: dict[str, str] = {}
    for query in [*(known or []), *sent]:
        for part in query.split("; "):
            prepared = _PREPARED.match(part.strip())
            if prepared:
                bodies[prepared[1]] = prepared[2]
    out = []
    for part in statements(sent):
        executed = _EXECUTED.match(part)
        text = bodies[executed[1]] if executed else part
        out.append(text.lstrip("( ").split(None, 1)[0].upper())
    return out
