"""``marginalia researcher ...``: researcher accounts."""

from __future__ import annotations

import click

from app.cli.base import OneLineGroup, password_option, with_app


@click.group(cls=OneLineGroup)
def researcher() -> None:
    """Researcher accounts (the only accounts with a login)."""


@researcher.command("create")
@click.argument("email")
@password_option(help="Prompted for (twice) unless given; at least 10 characters.")
@with_app
def researcher_create(email: str, password: str) -> None:
    """Create a researcher account."""
    from app.db import session_scope
    from app.researchers.accounts import create_researcher

    with session_scope() as session:
        create_researcher(session, email, password)
    click.echo(f"researcher {email.strip().lower()} created")


@researcher.command("set-password")
@click.argument("email")
@password_option()
@with_app
def researcher_set_password(email: str, password: str) -> None:
    """Change a researcher's password."""
    from app.db import session_scope
    from app.researchers.accounts import set_password

    with session_scope() as session:
        set_password(session, email, password)
    click.echo("password changed")
