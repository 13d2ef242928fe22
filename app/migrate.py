"""Running Alembic migrations from code (``marginalia db upgrade`` and the Procfile release)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config

from app.config import PROJECT_ROOT, normalise_database_url


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    config.set_main_option("sqlalchemy.url", normalise_database_url(url).replace("%", "%%"))
    return config


def current_revisions(url: str) -> tuple[str, ...]:
    """The revisions the database at ``url`` is stamped with (empty for a new database)."""
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine

    engine = create_engine(normalise_database_url(url))
    try:
        with engine.connect() as connection:
            return tuple(sorted(MigrationContext.configure(connection).get_current_heads()))
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Bring the database at ``url`` to ``revision``; safe to run again. Returns the
    revisions before and after, so the caller can say whether anything was done."""
    if url.startswith("sqlite"):
        from app.db import create_private_sqlite_file

        create_private_sqlite_file(url)
    before = current_revisions(url)
    command.upgrade(alembic_config(url), revision)
    return before, current_revisions(url)
