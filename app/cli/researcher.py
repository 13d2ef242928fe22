"""``marginalia researcher ...``: researcher accounts, roles and API keys."""

from __future__ import annotations

import click

from app.cli.base import OneLineGroup, password_option, with_app

ROLE_CHOICE = click.Choice(["researcher", "admin"])


@click.group(cls=OneLineGroup)
def researcher() -> None:
    """Researcher accounts (the only accounts with a login) and their API keys."""


@researcher.command("create")
@click.argument("email")
@password_option(help="Prompted for (twice) unless given; at least 10 characters.")
@click.option("--admin", is_flag=True, help="An admin sees and changes every study.")
@with_app
def researcher_create(email: str, password: str, admin: bool) -> None:
    """Create a researcher account."""
    from app.db import session_scope
    from app.researchers.accounts import create_researcher

    with session_scope() as session:
        created = create_researcher(
            session, email, password, role="admin" if admin else "researcher"
        )
        click.echo(f"researcher {created.email} created ({created.role})")


@researcher.command("set-password")
@click.argument("email")
@password_option()
@with_app
def researcher_set_password(email: str, password: str) -> None:
    """Change a researcher's password (their open sessions end)."""
    from app.db import session_scope
    from app.researchers.accounts import set_password

    with session_scope() as session:
        set_password(session, email, password)
    click.echo("password changed; the researcher's sessions have ended")


@researcher.command("set-role")
@click.argument("email")
@click.argument("role", type=ROLE_CHOICE)
@with_app
def researcher_set_role(email: str, role: str) -> None:
    """Make a researcher an admin (sees every study) or a plain researcher."""
    from app.db import session_scope
    from app.researchers.accounts import set_role

    with session_scope() as session:
        changed = set_role(session, email, role)
        click.echo(f"researcher {changed.email} is now {role}")


@researcher.command("list")
@with_app
def researcher_list() -> None:
    """Every researcher: e-mail, role, state, studies owned, API keys, last login."""
    from app.db import session_scope
    from app.models import isoformat
    from app.researchers.accounts import list_researchers

    with session_scope() as session:
        click.echo("email\trole\tstate\tstudies\tkeys\tlast_login")
        for row, owned, keys in list_researchers(session):
            state = "disabled" if row.disabled_at is not None else "active"
            last = isoformat(row.last_login_at) or "never"
            click.echo(f"{row.email}\t{row.role}\t{state}\t{owned}\t{keys}\t{last}")


def _set_disabled(email: str, disabled: bool) -> None:
    from app.db import session_scope
    from app.researchers.accounts import set_disabled

    with session_scope() as session:
        changed = set_disabled(session, email, disabled)
        verb = "disabled: sessions and API keys refused" if disabled else "enabled"
        click.echo(f"researcher {changed.email} {verb}")


@researcher.command("disable")
@click.argument("email")
@with_app
def researcher_disable(email: str) -> None:
    """Disable an account: its sessions and API keys stop working at once."""
    _set_disabled(email, True)


@researcher.command("enable")
@click.argument("email")
@with_app
def researcher_enable(email: str) -> None:
    """Enable a disabled account again (it logs in anew)."""
    _set_disabled(email, False)


@researcher.command("delete")
@click.argument("email")
@click.option(
    "--reassign-to",
    metavar="EMAIL",
    default=None,
    help="Give the researcher's studies to this researcher (required if they own any).",
)
@with_app
def researcher_delete(email: str, reassign_to: str | None) -> None:
    """Delete an account with its API keys and shares; refused while it owns studies."""
    from app.db import session_scope
    from app.researchers.accounts import delete_researcher

    with session_scope() as session:
        moved = delete_researcher(session, email, reassign_to)
    suffix = f"; {moved} studies now owned by {reassign_to.strip().lower()}" if moved else ""
    click.echo(f"researcher {email.strip().lower()} deleted{suffix}")


@researcher.command("key")
@click.argument("email")
@click.option("--label", default="", help="A note to tell keys apart (e.g. the script's name).")
@with_app
def researcher_key(email: str, label: str) -> None:
    """Print a new API key once (only its hash is stored); scripts send it as
    ``Authorization: Bearer <key>``."""
    from app.db import session_scope
    from app.researchers.keys import create_key

    with session_scope() as session:
        _, key = create_key(session, email, label)
    click.echo(key)


@researcher.command("keys")
@click.argument("email")
@with_app
def researcher_keys(email: str) -> None:
    """List a researcher's API keys by their visible prefix (never the key)."""
    from app.db import session_scope
    from app.models import isoformat
    from app.researchers.keys import list_keys

    with session_scope() as session:
        click.echo("prefix\tlabel\tcreated\tlast_used\trevoked")
        for row in list_keys(session, email):
            click.echo(
                f"{row.prefix}\t{row.label}\t{isoformat(row.created_at)}\t"
                f"{isoformat(row.last_used_at) or 'never'}\t{isoformat(row.revoked_at) or 'no'}"
            )


@researcher.command("revoke-key")
@click.argument("prefix")
@with_app
def researcher_revoke_key(prefix: str) -> None:
    """Revoke an API key (its prefix as `researcher keys` lists it): refused at once."""
    from app.db import session_scope
    from app.researchers.keys import revoke_key

    with session_scope() as session:
        row = revoke_key(session, prefix)
        click.echo(f"API key {row.prefix} revoked")
