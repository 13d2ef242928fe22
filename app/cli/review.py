"""``marginalia review``: auto-accept candidates by votes, review progress, promote a
reviewed document to gold, workers scored against the adjudicated layer."""

from __future__ import annotations

import json

import click

from app.cli.base import OneLineGroup, counted, with_app

BY = "cli"  # who the adjudicated rows written from the command line name


@click.group(cls=OneLineGroup)
def review() -> None:
    """Adjudication: from workers' spans to one curated set (docs/METRICS.md)."""


@review.command("auto-accept")
@click.argument("slug")
@click.option("--min-workers", type=int, default=2, show_default=True, help="Votes needed.")
@click.option("--document", "documents", multiple=True, help="Only these documents.")
@click.option("--by", default=BY, show_default=True, help="Name recorded as the decider.")
@click.option(
    "--min-posterior",
    type=float,
    default=None,
    help="Only candidates the consensus holds: overlapping a sentence of their category whose "
    "stored MACE posterior is at least this (0 to 1).",
)
@with_app
def auto_accept_command(
    slug: str, min_workers: int, documents: tuple[str, ...], by: str, min_posterior: float | None
) -> None:
    """Accept every undecided candidate that at least --min-workers workers marked (and,
    with --min-posterior, that the worker models' consensus holds)."""
    from sqlalchemy import select

    from app.db import begin_write, session_scope
    from app.documents.studies import find_document, get_study
    from app.models import Document
    from app.quality.adjudication import auto_accept
    from app.rules.work import Work, select_documents

    left_out = 0
    with session_scope() as session:
        begin_write(session)
        study = get_study(session, slug)
        if documents:
            chosen = [find_document(session, study, doc) for doc in documents]
        else:  # the whole study but its practice documents (the training phase)
            every = session.scalars(
                select(Document)
                .where(Document.study_id == study.id)
                .order_by(Document.position, Document.id)
            ).all()
            chosen = list(session.scalars(select_documents(study, Work(), Document)))
            left_out = len(every) - len(chosen)
        accepted = auto_accept(session, chosen, min_workers, by, min_posterior)
    note = f" ({counted(left_out, 'practice document')} left out)" if left_out else ""
    held = f" held by the consensus at >= {min_posterior:g}" if min_posterior is not None else ""
    click.echo(f"accepted {counted(accepted, 'candidate')} with >= {min_workers} votes{held}{note}")


@review.command("status")
@click.argument("slug")
@with_app
def status_command(slug: str) -> None:
    """Review progress per document: workers, status, accepted and rejected rows (TSV, ids
    made spreadsheet-safe)."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.formats.spreadsheet import spreadsheet_safe
    from app.quality.review_state import review_progress

    with session_scope() as session:
        for row in review_progress(session, get_study(session, slug)):
            click.echo(
                f"{spreadsheet_safe(row['document'])}\t{row['workers']} workers\t{row['status']}\t"
                f"{row['accepted']} accepted\t{row['rejected']} rejected"
            )


@review.command("promote")
@click.argument("slug")
@click.argument("document")
@with_app
def promote_command(slug: str, document: str) -> None:
    """Make a document marked done gold: its gold errors become its accepted layer."""
    from app.db import begin_write, session_scope
    from app.documents.studies import find_document, get_study
    from app.quality.adjudication import promote

    with session_scope() as session:
        begin_write(session)
        study = get_study(session, slug)
        count = promote(session, find_document(session, study, document))
    click.echo(f"{document} is gold now with {counted(count, 'error')}")


@review.command("scores")
@click.argument("slug")
@click.option("--json", "as_json", is_flag=True, help="The whole result as JSON.")
@with_app
def scores_command(slug: str, as_json: bool) -> None:
    """Each worker's strict P/R/F1 against the adjudicated layer (documents marked done)."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality.review_state import adjudicated_scores

    with session_scope() as session:
        rows = adjudicated_scores(session, get_study(session, slug))
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    from app.formats.spreadsheet import spreadsheet_safe

    click.echo("worker\tdocuments\tP\tR\tF1\tlenient F1")
    for row in rows:
        overall = row["overall"]
        click.echo(
            f"{spreadsheet_safe(row['worker_id'])}\t{row['documents']}\t{shown(overall['precision'])}\t"
            f"{shown(overall['recall'])}\t{shown(overall['f1'])}\t"
            f"{shown(row['lenient']['overall']['f1'])}"
        )
