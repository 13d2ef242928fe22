"""``marginalia db upgrade`` and ``marginalia serve``: the schema and the development server."""

from __future__ import annotations

import click

from app.cli.base import OneLineCommand, OneLineGroup, one_line_errors


@click.group(cls=OneLineGroup)
def db() -> None:
    """Database schema."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Apply Alembic migrations to DATABASE_URL (safe to run again)."""
    from app.config import database_url
    from app.migrate import upgrade

    with one_line_errors():
        before, after = upgrade(database_url(), revision)
    if not before:
        click.echo(f"database created (schema revision {', '.join(after)})")
    elif before != after:
        click.echo(f"database upgraded from {', '.join(before)} to {', '.join(after)}")
    else:
        click.echo("database is up to date")


@click.command("serve", cls=OneLineCommand)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--debug", is_flag=True)
def serve_command(host: str, port: int, debug: bool) -> None:
    """Development server on the embedded default database."""
    from app import create_app

    create_app().run(host=host, port=port, debug=debug, use_reloader=False, threaded=True)
