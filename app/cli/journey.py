"""``marginalia study pause|close|reopen|archive|delete``, documents removed or replaced, and
the worker's journey: ``study instructions``, ``study questionnaire``, ``study return-codes``,
``study answers``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from app.cli.base import counted, with_app
from app.formats import IMPORT_FORMATS

ACTION_HELP = {
    "pause": "Pause a study: arriving workers get a page saying so, started work goes on.",
    "close": "Close a study: no new work; workers already inside a document may finish.",
    "reopen": "Reopen a paused, closed or archived study.",
    "archive": "Close a study and leave it out of the studies list.",
}


def _status_command(action: str) -> click.Command:
    @click.command(action, help=ACTION_HELP[action])
    @click.argument("slug")
    @with_app
    def command(slug: str) -> None:
        from app.db import session_scope
        from app.documents.lifecycle import change_status
        from app.documents.studies import get_study

        with session_scope() as session:
            status = change_status(get_study(session, slug), action)
        click.echo(f"study {slug} is {status}")

    return command


@click.command("delete")
@click.argument("slug")
@click.option("--confirm", required=True, metavar="SLUG", help="The study's slug, again.")
@with_app
def study_delete(slug: str, confirm: str) -> None:
    """Delete a study with every document, assignment and annotation in it."""
    from app.db import session_scope
    from app.documents.lifecycle import delete_study
    from app.documents.studies import get_study

    with session_scope() as session:
        counts = delete_study(session, get_study(session, slug), confirm)
    click.echo(
        f"study {slug} deleted ({counted(counts['documents'], 'document')}, "
        f"{counted(counts['assignments'], 'assignment')})"
    )


@click.command("remove-document")
@click.argument("slug")
@click.argument("document_id")
@with_app
def remove_document_command(slug: str, document_id: str) -> None:
    """Remove a document nobody has submitted or annotated."""
    from app.db import session_scope
    from app.documents.lifecycle import remove_document
    from app.documents.studies import get_study

    with session_scope() as session:
        remove_document(session, get_study(session, slug), document_id)
    click.echo(f"document {document_id} removed from study {slug}")


@click.command("replace-documents")
@click.argument("slug")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--format", "fmt", default="auto", type=click.Choice(IMPORT_FORMATS))
@click.option("--gold", is_flag=True, help="Store the file's annotations as gold.")
@click.option("--no-ner", is_flag=True, help="Skip named-entity cues.")
@with_app
def replace_documents_command(slug: str, file: Path, fmt: str, gold: bool, no_ner: bool) -> None:
    """Import FILE; documents it shares IDs with are replaced, in one transaction, provided
    nobody submitted or annotated them (else nothing changes)."""
    from flask import current_app

    from app.db import begin_write, session_scope
    from app.documents.lifecycle import replace_documents
    from app.documents.studies import analyse_entities, get_study
    from app.formats import parse_documents

    documents = parse_documents(file, fmt, gold=gold)
    nlp = None
    if not no_ner:
        from app.entities import load_pipeline

        nlp = load_pipeline(current_app.config["SPACY_MODEL"])
    with session_scope() as session:
        entities = analyse_entities(get_study(session, slug), documents, nlp)
    with session_scope() as session:
        study = get_study(begin_write(session), slug)
        replaced, result = replace_documents(
            session, study, documents, gold=gold, nlp=nlp, entities=entities
        )
    click.echo(
        f"{counted(result.documents, 'document')} stored, {counted(replaced, 'document')} "
        "of them replacing an earlier version"
    )


@click.command("instructions")
@click.argument("slug")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--clear", is_flag=True, help="Remove the instructions.")
@with_app
def instructions_command(slug: str, file: Path | None, clear: bool) -> None:
    """Show, set (a Markdown FILE) or clear the instructions workers see above the text."""
    from app.db import session_scope
    from app.documents.journey import set_instructions
    from app.documents.studies import get_study

    with session_scope() as session:
        study = get_study(session, slug)
        if file is None and not clear:
            click.echo((study.settings or {}).get("instructions") or "(no instructions)")
            return
        text = "" if clear else file.read_text(encoding="utf-8")
        stored = set_instructions(study, text)
    click.echo(f"study {slug}: instructions {'set' if stored else 'cleared'}")


@click.command("questionnaire")
@click.argument("slug")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--clear", is_flag=True, help="Remove the consent text and questionnaires.")
@with_app
def questionnaire_command(slug: str, file: Path | None, clear: bool) -> None:
    """Show, set (a YAML FILE, see docs/PLATFORMS.md) or clear consent and questionnaires."""
    from app.db import session_scope
    from app.documents.journey import definition, set_definition
    from app.documents.studies import get_study

    with session_scope() as session:
        study = get_study(session, slug)
        if file is not None or clear:
            text = "" if clear else file.read_text(encoding="utf-8")
            set_definition(study, text, str(file))
        snapshot = definition(study)
    if not snapshot:
        click.echo(f"study {slug}: no consent text and no questionnaires")
        return
    click.echo(
        f"study {slug}: consent {'yes' if snapshot['consent'] else 'no'}, "
        f"{counted(len(snapshot['after_document']), 'question')} after each document, "
        f"{counted(len(snapshot['after_study']), 'question')} after the study"
    )


@click.command("return-codes")
@click.argument("slug")
@click.option("--no-places", default=None, help="Code when no document is left ('' clears).")
@click.option("--unavailable", default=None, help="Code when the study is paused or closed.")
@click.option("--declined", default=None, help="Code when a worker does not consent.")
@with_app
def return_codes_command(
    slug: str, no_places: str | None, unavailable: str | None, declined: str | None
) -> None:
    """Show or set the completion codes that send workers with no work back to Prolific."""
    from app.crowd.returns import return_codes, set_return_code
    from app.db import session_scope
    from app.documents.studies import get_study

    with session_scope() as session:
        study = get_study(session, slug)
        for reason, code in (
            ("no_places", no_places),
            ("unavailable", unavailable),
            ("declined", declined),
        ):
            if code is not None:
                set_return_code(study, reason, code)
        codes = return_codes(study)
    for reason in ("no_places", "unavailable", "declined"):
        click.echo(f"{reason}: {codes.get(reason, '-')}")


@click.command("answers")
@click.argument("slug")
@click.option("--format", "fmt", default="csv", type=click.Choice(["csv", "jsonl"]))
@with_app
def answers_command(slug: str, fmt: str) -> None:
    """Print the questionnaire answers, one row per assignment (CSV is spreadsheet-safe)."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.formats.answers import iter_answers

    with session_scope() as session:
        for chunk in iter_answers(session, get_study(session, slug), fmt):
            sys.stdout.write(chunk)


def register(study_group: click.Group) -> None:
    for action in ACTION_HELP:
        study_group.add_command(_status_command(action))
    for command in (
        study_delete,
        remove_document_command,
        replace_documents_command,
        instructions_command,
        questionnaire_command,
        return_codes_command,
        answers_command,
    ):
        study_group.add_command(command)
