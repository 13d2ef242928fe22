"""The ``marginalia`` command line (CONTRACT.md): one transaction per command, clear errors."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from app.errors import InvalidInput, MarginaliaError


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


class _Command(_OneLineUsage, click.Command):
    pass


class _Group(_OneLineUsage, click.Group):
    command_class = _Command
    group_class = type


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Marginalia: fine-grained span annotation of long generated text."""


@main.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Apply Alembic migrations to DATABASE_URL (safe to run again)."""
    from app.config import database_url
    from app.migrate import upgrade

    with one_line_errors():
        upgrade(database_url(), revision)
    click.echo("database is up to date")


@main.group()
def taxonomy() -> None:
    """Error taxonomies."""


@taxonomy.command("check")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def taxonomy_check(file: Path) -> None:
    """Validate a taxonomy YAML file and list its categories."""
    from app.taxonomy import TaxonomyError, load_taxonomy

    try:
        snapshot = load_taxonomy(file)
    except TaxonomyError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    click.echo(f"{file}: {snapshot['name']} — {len(snapshot['categories'])} categories")
    for cat in snapshot["categories"]:
        scope = ", whole sentence" if cat["scope"] == "sentence" else ""
        group = f" [{cat['group']}]" if cat["group"] else ""
        click.echo(f"  {cat['shortcut']}  {cat['id']:<14} {cat['kind']}{scope}{group}  {cat['label']}")


@main.group()
def study() -> None:
    """Studies."""


@study.command("create")
@click.argument("slug")
@click.option("--taxonomy", "taxonomy_path", required=True,
              type=click.Path(dir_okay=False, path_type=Path))
@click.option("--annotators-per-doc", default=3, show_default=True, type=int)
@click.option("--suggestions", default="hidden", show_default=True,
              type=click.Choice(["off", "shown", "hidden"]))
@click.option("--title", default=None, help="Shown to workers; defaults to the taxonomy name.")
@with_app
def study_create(slug: str, taxonomy_path: Path, annotators_per_doc: int, suggestions: str,
                 title: str | None) -> None:
    """Create a study (the same arguments again change nothing)."""
    from app.db import session_scope
    from app.studies import create_study

    with session_scope() as session:
        created_study, created = create_study(
            session, slug, taxonomy_path, annotators_per_doc=annotators_per_doc,
            suggestions=suggestions, title=title,
        )
        verb = "created" if created else "already exists, unchanged:"
        click.echo(f"study {created_study.slug} {verb} ({created_study.taxonomy_name}, "
                   f"{annotators_per_doc} annotators per document, suggestions {suggestions})")


@main.command("import")
@click.argument("slug")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "falte", "paragraphs", "snac", "jsonl"]))
@click.option("--sentences-per-segment", type=click.IntRange(min=1), default=None)
@click.option("--gold", is_flag=True, help="Store the file's errors as gold (snac format).")
@click.option("--no-ner", is_flag=True, help="Skip named-entity cues.")
@with_app
def import_command(slug: str, file: Path, fmt: str, sentences_per_segment: int | None,
                   gold: bool, no_ner: bool) -> None:
    """Load documents into a study in one transaction."""
    from flask import current_app

    from app.db import session_scope
    from app.importers import parse_documents
    from app.studies import get_study, import_documents

    documents = parse_documents(file, fmt, sentences_per_segment=sentences_per_segment,
                                gold=gold)
    nlp = None
    if not no_ner:
        from app.entities import load_pipeline

        nlp = load_pipeline(current_app.config["SPACY_MODEL"])
    with session_scope() as session:
        result = import_documents(session, get_study(session, slug), documents, gold=gold,
                                  nlp=nlp, progress=True)
    parts = [f"imported {result.documents} documents ({result.segments} segments)"]
    if gold:
        parts.append(f"{result.gold_errors} gold errors")
        if result.unlocated_gold:
            parts.append(f"{result.unlocated_gold} gold spans not found verbatim in their segment")
    parts.append(f"{result.entities} entities" if result.ner_available else "no entity cues")
    if result.detection_jobs:
        parts.append(f"{result.detection_jobs} detection jobs queued")
    click.echo(", ".join(parts))


@main.command("export")
@click.argument("slug")
@click.option("--format", "fmt", default="csv", show_default=True,
              type=click.Choice(["csv", "jsonl", "snac"]))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to FILE instead of standard output.")
@with_app
def export_command(slug: str, fmt: str, out: Path | None) -> None:
    """Stream a study's annotations."""
    from flask import current_app

    from app.export import iter_export
    from app.studies import get_study

    session = current_app.extensions["db_sessionmaker"]()
    try:
        chunks = iter_export(session, get_study(session, slug), fmt)
        if out is None:
            for chunk in chunks:
                sys.stdout.write(chunk)
        else:
            # Written beside the target and renamed at the end: never a half file at --out.
            partial = out.with_name(out.name + ".partial")
            try:
                with partial.open("w", encoding="utf-8", newline="") as handle:
                    for chunk in chunks:
                        handle.write(chunk)
                partial.replace(out)
            except OSError as exc:
                partial.unlink(missing_ok=True)
                raise InvalidInput(f"{out}: cannot write: {exc.strerror}") from None
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
    finally:
        session.close()


@main.command("detect")
@click.argument("slug")
@click.option("--detector", "detector_name", default=None,
              help="rules, minilm or a checkpoint folder (default: DETECTOR_MODEL or the best).")
@with_app
def detect_command(slug: str, detector_name: str | None) -> None:
    """Run the detector over a study's documents now (progress bar)."""
    from app.db import session_scope
    from app.detection import detect_study
    from app.studies import get_study
    from model_server.detector import load_detector

    detector = load_detector(detector_name)
    with session_scope() as session:
        count = detect_study(session, get_study(session, slug), detector)
    click.echo(f"{count} suggestions stored ({detector.name} {detector.version})")


@main.command("worker")
@click.option("--once", is_flag=True, help="Stop when the queue is empty.")
@click.option("--health", is_flag=True, help="Print the queue's state as JSON and exit.")
@click.option("--detector", "detector_name", default=None,
              help="rules, minilm or a checkpoint folder (default: DETECTOR_MODEL or the best).")
@click.option("--poll", default=2.0, show_default=True, help="Seconds between idle polls.")
@with_app
def worker_command(once: bool, health: bool, detector_name: str | None, poll: float) -> None:
    """The long-running detector worker (Procfile ``worker:``)."""
    import logging
    import signal

    from flask import current_app

    from app import jobs
    from app.detection import work

    factory = current_app.extensions["db_sessionmaker"]
    if health:
        with factory() as session:
            click.echo(json.dumps(jobs.health(session), indent=2))
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s worker %(message)s")
    from model_server.detector import load_detector

    detector = load_detector(detector_name)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    click.echo(f"worker started with detector {detector.name} {detector.version}", err=True)
    try:
        stats = work(factory, detector, once=once, poll_seconds=poll,
                     should_stop=lambda: bool(stopping))
    except KeyboardInterrupt:
        return
    click.echo(f"worker stopped: {stats['done']} documents, {stats['failed']} failures, "
               f"{stats['suggestions']} suggestions", err=True)


@main.command("report")
@click.argument("slug")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@with_app
def report_command(slug: str, as_json: bool) -> None:
    """Progress, per-worker scores and agreement of a study."""
    from app.db import session_scope
    from app.reporting import format_report, study_report
    from app.studies import get_study

    with session_scope() as session:
        report = study_report(session, get_study(session, slug))
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        click.echo(format_report(report))


@main.group()
def researcher() -> None:
    """Researcher accounts (the only accounts with a login)."""


@researcher.command("create")
@click.argument("email")
@click.password_option(help="Prompted for (twice) unless given; at least 10 characters.")
@with_app
def researcher_create(email: str, password: str) -> None:
    """Create a researcher account."""
    from app.auth import create_researcher
    from app.db import session_scope

    with session_scope() as session:
        create_researcher(session, email, password)
    click.echo(f"researcher {email.strip().lower()} created")


@researcher.command("set-password")
@click.argument("email")
@click.password_option()
@with_app
def researcher_set_password(email: str, password: str) -> None:
    """Change a researcher's password."""
    from app.auth import set_password
    from app.db import session_scope

    with session_scope() as session:
        set_password(session, email, password)
    click.echo("password changed")


@main.command("demo")
@click.option("--slug", default="demo", show_default=True)
@with_app
def demo_command(slug: str) -> None:
    """Create the demo study with the shipped demo documents (once)."""
    from sqlalchemy import func, select

    from app.config import PROJECT_ROOT
    from app.db import session_scope
    from app.importers import parse_documents
    from app.models import Document
    from app.studies import create_study, import_documents

    with session_scope() as session:
        demo, _ = create_study(session, slug, PROJECT_ROOT / "taxonomies" / "snac.yaml",
                               annotators_per_doc=3, suggestions="shown",
                               title="Demo: coherence errors in story summaries")
        count = session.scalar(select(func.count()).where(Document.study_id == demo.id))
        if count:
            click.echo(f"demo study {slug!r} already has {count} documents")
            return
        from flask import current_app

        from app.entities import load_pipeline

        documents = parse_documents(PROJECT_ROOT / "app" / "demo_data" / "documents.json", "snac")
        result = import_documents(session, demo, documents,
                                  nlp=load_pipeline(current_app.config["SPACY_MODEL"]))
        click.echo(f"demo study {slug!r}: {result.documents} documents loaded")


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--debug", is_flag=True)
def serve_command(host: str, port: int, debug: bool) -> None:
    """Development server on the embedded default database."""
    from app import create_app

    create_app().run(host=host, port=port, debug=debug, use_reloader=False, threaded=True)


def _register_optional() -> None:
    """Attach command groups that live in other packages (the detector's)."""
    try:
        from model_server.cli import register
    except ImportError:
        return
    register(main)


_register_optional()


def _register_platforms() -> None:
    """Attach ``study settings`` and ``mturk create-hits`` (app/platform_cli.py)."""
    from app.platform_cli import register

    register(main, study)


_register_platforms()


if __name__ == "__main__":
    main()
