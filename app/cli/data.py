"""``marginalia import`` and ``marginalia export``: documents in, annotations out."""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path

import click

from app.cli.base import OneLineCommand, with_app
from app.documents.import_report import import_summary
from app.errors import InvalidInput
from app.formats import EXPORT_FORMATS, IMPORT_FORMATS


@click.command("import", cls=OneLineCommand)
@click.argument("slug")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    type=click.Choice(IMPORT_FORMATS),
)
@click.option("--sentences-per-segment", type=click.IntRange(min=1), default=None)
@click.option(
    "--gold",
    is_flag=True,
    help="Store the file's annotations as gold (snac, thresh, labelstudio, brat); without it "
    "they are kept as submitted work of imported workers.",
)
@click.option(
    "--practice",
    is_flag=True,
    help="The documents are practice documents for the training phase: gold whose answers a "
    "worker is shown segment by segment, never graded (the study's other gold documents "
    "grade the qualification; study settings --qualification-f1).",
)
@click.option(
    "--checks",
    is_flag=True,
    help="The file's errors are attention checks: the documents are real work, each worker's "
    "catch rate of the checks is reported.",
)
@click.option(
    "--as-work",
    is_flag=True,
    help="Keep a SNaC file's errors as imported work: one imported worker per vote rank "
    "(vote-1 marks every error, vote-2 those with two votes or more, ...).",
)
@click.option("--no-ner", is_flag=True, help="Skip named-entity cues.")
@click.option(
    "--source",
    default=None,
    help="The system that generated every document of the file (what `marginalia compare "
    "--by source` groups by), over what the file says.",
)
@with_app
def import_command(
    slug: str,
    file: Path,
    fmt: str,
    sentences_per_segment: int | None,
    gold: bool,
    practice: bool,
    checks: bool,
    as_work: bool,
    no_ner: bool,
    source: str | None,
) -> None:
    """Load documents (a file; for brat a folder or zip) into a study in one transaction, and
    say what became of every part of the file (a big file read and stored in batches)."""
    gold = gold or practice
    if gold and checks:
        raise InvalidInput("--checks cannot be combined with --gold or --practice")
    if as_work and (gold or checks):
        raise InvalidInput("--as-work cannot be combined with --gold, --practice or --checks")
    from flask import current_app

    from app.db import session_scope
    from app.documents import staged
    from app.documents.studies import get_study
    from app.formats import parse_document_batches

    batches = parse_document_batches(
        file,
        fmt,
        sentences_per_segment=sentences_per_segment,
        gold=gold or checks,
        as_work=as_work,
        source=source,
    )
    with session_scope() as session:
        study = get_study(session, slug)
    first = next(batches)  # a file refused by its first entry fails before spaCy is loaded
    nlp = None
    if not no_ner:
        from app.entities import load_pipeline

        nlp = load_pipeline(current_app.config["SPACY_MODEL"])
    # The file read, analysed and prepared a batch at a time with no lock held, then stored
    # in one transaction (app/documents/staged.py): all or nothing, memory one batch. A fresh
    # session: its first statement takes SQLite's write lock (begin_write), so the inserts
    # neither wait on spaCy nor fail on a concurrent annotation save.
    options = {"gold": gold, "checks": checks, "practice": practice, "nlp": nlp}
    every = itertools.chain([first], batches)
    with staged.prepare(study, every, **options) as spill, session_scope() as session:
        result = staged.store(session, study, spill)
    counts = {**dataclasses.asdict(result), "gold": gold and not checks, "checks": checks}
    click.echo("imported " + ", ".join(import_summary(counts, "cli")))
    if practice and not (study.settings or {}).get("qualification"):
        click.echo(
            "note: this study has no pass mark yet, so these documents are handed out as real "
            "work: set one with `marginalia study settings "
            f"{slug} --qualification-f1 F` to make them practice documents"
        )


@click.command("export", cls=OneLineCommand)
@click.argument("slug")
@click.option(
    "--format", "fmt", default="csv", show_default=True, type=click.Choice(EXPORT_FORMATS)
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write to FILE instead of standard output (a new FOLDER for brat, labelstudio, parquet).",
)
@click.option(
    "--layer",
    default="workers",
    show_default=True,
    help=(
        "Every submitted worker's annotations, the adjudicated layer (marginalia review), "
        "the consensus: the sentence units whose MACE posterior is at least --min-posterior, "
        "or llm:NAME, one LLM annotator's marks (marginalia llm)."
    ),
)
@click.option(
    "--include-llm",
    is_flag=True,
    help="Workers' layer: the LLM annotators' marks beside the humans'.",
)
@click.option(
    "--columns",
    "extra",
    default="",
    help=(
        "Optional columns after the default ones (csv, jsonl): category_label,segment_text "
        "(paired_end_segment, once optional, is now a default column)."
    ),
)
@click.option(
    "--include-practice",
    is_flag=True,
    help="Keep the practice documents of a training phase (with a role column).",
)
@click.option(
    "--review-status",
    type=click.Choice(["done", "any"]),
    default=None,
    help="Adjudicated layer: the documents marked done (default) or any reviewed document.",
)
@click.option(
    "--include-in-progress",
    is_flag=True,
    help="Workers' layer: also the live annotations of assignments not submitted yet.",
)
@click.option(
    "--min-posterior",
    type=float,
    default=None,
    help="Consensus layer: the MACE posterior a unit needs (default 0.9).",
)
@with_app
def export_command(
    slug: str,
    fmt: str,
    out: Path | None,
    layer: str,
    extra: str,
    include_practice: bool,
    review_status: str | None,
    include_in_progress: bool,
    min_posterior: float | None,
    include_llm: bool,
) -> None:
    """Stream a study's counted annotations (or, as assignments-csv / assignments-jsonl,
    one row per assignment)."""
    from flask import current_app

    from app.documents.studies import get_study
    from app.formats import FILE_SET_FORMATS, Work, iter_export, iter_export_files
    from app.formats.bundles import write_folder

    if review_status is not None and layer != "adjudicated":
        raise InvalidInput("--review-status applies to --layer adjudicated only")
    if min_posterior is not None and layer != "consensus":
        raise InvalidInput("--min-posterior applies to --layer consensus only")
    work = Work(layer, include_practice, review_status or "done", include_in_progress)
    if include_llm:
        work = dataclasses.replace(work, workers="everyone")
    if min_posterior is not None:
        work = dataclasses.replace(work, min_posterior=min_posterior)
    session = current_app.extensions["db_sessionmaker"]()
    try:
        if fmt in FILE_SET_FORMATS:
            if out is None:
                raise InvalidInput(f"{fmt} writes several files: pass --out FOLDER")
            study = get_study(session, slug)
            count = write_folder(out, iter_export_files(session, study, fmt, work, streamed=True))
            click.echo(f"wrote {count} files to {out}", err=True)
            return
        names = tuple(n.strip() for n in extra.split(",") if n.strip())
        chunks = iter_export(session, get_study(session, slug), fmt, work, names)
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
