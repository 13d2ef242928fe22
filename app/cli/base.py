"""What every ``marginalia`` command shares: one-line errors, the app context, one-line usage."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from app.documents.text import counted as counted  # the commands' plurals
from app.errors import MarginaliaError


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn our errors, file errors and database errors into one line and exit status 1."""
    from sqlalchemy.exc import ArgumentError, DBAPIError

    try:
        yield
    except MarginaliaError as exc:
        fail(str(exc))
    except BrokenPipeError:
        # The reader went away (``marginalia export ... | head``): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:
        fail(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except ArgumentError as exc:
        fail(f"DATABASE_URL is not a usable database URL: {exc}")
    except DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        fail(f"database error: {reason} (check DATABASE_URL; has `marginalia db upgrade` run?)")


def with_app(func: Callable[..., Any]) -> Callable[..., Any]:
    """Run the command inside an app context; turn our errors into one-line messages."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from app import create_app

        with one_line_errors():
            app = create_app()
            with app.app_context():
                return func(*args, **kwargs)

    return wrapper


class _OneLineUsage:
    """A usage error (bad option value, missing argument, unknown command) is one line on
    stderr and exit status 1, like every other bad input (CONTRACT.md)."""

    def make_context(self, info_name, args, parent=None, **extra):  # type: ignore[no-untyped-def]
        try:
            return super().make_context(info_name, args, parent=parent, **extra)  # type: ignore[misc]
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else info_name
            fail(f"{where}: {exc.format_message()}")

    def resolve_command(self, ctx, args):  # type: ignore[no-untyped-def]
        try:
            return super().resolve_command(ctx, args)  # type: ignore[misc]
        except click.UsageError as exc:
            fail(f"{ctx.command_path}: {exc.format_message()}")


class OneLineCommand(_OneLineUsage, click.Command):
    pass


class OneLineGroup(_OneLineUsage, click.Group):
    command_class = OneLineCommand
    group_class = type


def _checked_password(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """Refuse a too-short password as soon as it is typed, then ask for it again to confirm."""
    from click.core import ParameterSource

    from app.researchers.accounts import MIN_PASSWORD_CHARS

    if value is None:
        raise click.BadParameter("a password is required")
    if len(value) < MIN_PASSWORD_CHARS:
        raise click.BadParameter(f"the password must have at least {MIN_PASSWORD_CHARS} characters")
    if ctx.get_parameter_source(param.name or "password") is ParameterSource.PROMPT:
        again = click.prompt(
            "Repeat for confirmation", hide_input=True, default="", show_default=False
        )
        if again != value:
            raise click.BadParameter("the two entries do not match")
    return value


def password_option(**kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--password``, prompted for (hidden) unless given; checked before the confirmation."""
    return click.option(
        "--password",
        prompt=True,
        hide_input=True,
        callback=_checked_password,
        **kwargs,
    )
