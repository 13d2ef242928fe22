"""The SQLite backend of the actions' handle (:mod:`app.annotation.handle`): the pooled sqlite3
connection through SQLAlchemy, the writer's ``BEGIN IMMEDIATE`` at the first statement
(app/db.py), the same statements run one after another, committed by :meth:`commit`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, Executable
from sqlalchemy.orm import Session

from app.annotation.handle import Handle, Result


class SQLiteHandle(Handle):
    """The pooled sqlite3 connection through SQLAlchemy (see the module)."""

    dialect = "sqlite"

    def __init__(
        self,
        engine: Engine,
        connection: Connection,
        *,
        owned: bool,
        write: bool = True,
        session: Session | None = None,
    ) -> None:
        self.engine = engine
        self.connection = connection
        self.owned = owned
        self._session = session
        if owned and write:
            connection.execution_options(sqlite_begin="IMMEDIATE")

    def run(self, statement: Executable, params: dict[str, Any], *, alone: bool = False) -> Result:
        result = self.connection.execute(statement, params)
        rows = result.all() if result.returns_rows else []
        return Result(rows, result.rowcount)

    def _pair(
        self, first: Executable, second: Executable, params: dict[str, Any], alone: bool
    ) -> Result:
        self.connection.execute(first, params)
        return self.run(second, params)

    def later(self, statement: Executable, params: dict[str, Any]) -> None:
        self.connection.execute(statement, params)

    def query(self, statement: Executable) -> Result:
        result = self.connection.execute(statement)
        rows = result.all() if result.returns_rows else []
        return Result(rows, result.rowcount)

    def session(self) -> Session:
        if self._session is None:
            if not self.connection.in_transaction():
                self.connection.begin()
            self._session = Session(bind=self.connection, expire_on_commit=False)
        return self._session

    def commit(self) -> None:
        if not self.owned:
            return
        if self._session is not None:
            self._session.flush()
        if self.connection.in_transaction():
            self.connection.commit()

    def rollback(self) -> None:
        if self.owned and self.connection.in_transaction():
            self.connection.rollback()

    def close(self) -> None:
        if not self.owned:
            return
        if self._session is not None:
            self._session.close()
        self.connection.close()

    def fail(self, error: BaseException) -> None:
        if not self.owned:
            return
        try:
            self.connection.invalidate()
        finally:
            self.connection.close()
