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


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision``; safe to run again."""
    if url.startswith("sqlite"):
        from app.db import create_private_sqlite_file

        create_private_sqlite_file(url)
    command.upgrade(alembic_config(url), revision)
