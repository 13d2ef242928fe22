"""``marginalia import`` and ``marginalia export``: documents in, annotations out."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from app.cli.base import OneLineCommand, counted, with_app
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
@click.option("--no-ner", is_flag=True, help="Skip named-entity cues.")
@with_app
def import_command(
    slug: str,
    file: Path,
    fmt: str,
    sentences_per_segment: int | None,
    gold: bool,
    practice: bool,
    checks: bool,
    no_ner: bool,
) -> None:
    """Load documents (a file; for brat a folder or zip) into a study in one transaction."""
    gold = gold or practice
    if gold and checks:
        raise InvalidInput("--checks cannot be combined with --gold or --practice")
    from flask import current_app

    from app.db import session_scope
    from app.documents.storing import SKIPPED_PAIRS
    from app.documents.studies import analyse_entities, get_study, import_documents
    from app.formats import parse_documents

    documents = parse_documents(
        file, fmt, sentences_per_segment=sentences_per_segment, gold=gold or checks
    )
    nlp = None
    if not no_ner:
        from app.entities import load_pipeline

        nlp = load_pipeline(current_app.config["SPACY_MODEL"])
    with session_scope() as session:
        study = get_study(session, slug)
        entities = analyse_entities(study, documents, nlp, progress=True)
    # A fresh session: its first statement takes SQLite's write lock (begin_write), so the
    # bulk insert neither waits on spaCy nor fails on a concurrent annotation save.
    with session_scope() as session:
        result = import_documents(
            session,
            study,
            documents,
            gold=gold,
            checks=checks,
            practice=practice,
            nlp=nlp,
            entities=entities,
        )
    parts = [
        f"imported {counted(result.documents, 'document')} ({counted(result.segments, 'segment')})"
    ]
    if result.imported_annotations:
        parts.append(
            f"{counted(result.imported_annotations, 'annotation')} kept as "
            f"{counted(result.imported_assignments, 'imported assignment')}"
        )
    if result.imported_suggestions:
        parts.append(counted(result.imported_suggestions, "imported suggestion"))
    if result.skipped_pairs:
        parts.append(f"{counted(result.skipped_pairs, 'edit')} {SKIPPED_PAIRS}")
    if checks:
        parts.append(counted(result.gold_errors, "attention check"))
    if gold or checks:
        if not checks:
            parts.append(counted(result.gold_errors, "gold error"))
        if result.unlocated_gold:
            parts.append(
                f"{counted(result.unlocated_gold, 'gold span')} not found verbatim in their segment"
            )
        if result.ambiguous_gold:
            parts.append(
                f"{counted(result.ambiguous_gold, 'gold span')} occur more than once at word "
                "boundaries (placed at the first free occurrence)"
            )
        if result.mid_word_gold:
            parts.append(f"{counted(result.mid_word_gold, 'gold span')} found only inside a word")
    parts.append(
        counted(result.entities, "entity", "entities") if result.ner_available else "no entity cues"
    )
    if result.detection_jobs:
        parts.append(f"{counted(result.detection_jobs, 'detection job')} queued")
    click.echo(", ".join(parts))
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
    type=click.Choice(["workers", "adjudicated"]),
    default="workers",
    show_default=True,
    help="Every submitted worker's annotations, or the adjudicated layer (marginalia review).",
)
@click.option(
    "--columns",
    "extra",
    default="",
    help=(
        "Optional columns after the default ones (csv, jsonl): "
        "category_label,segment_text,paired_end_segment."
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
) -> None:
    """Stream a study's counted annotations (or, as assignments-csv / assignments-jsonl,
    one row per assignment)."""
    from flask import current_app

    from app.documents.studies import get_study
    from app.formats import FILE_SET_FORMATS, Work, iter_export, iter_export_files
    from app.formats.bundles import write_folder

    if review_status is not None and layer != "adjudicated":
        raise InvalidInput("--review-status applies to --layer adjudicated only")
    work = Work(layer, include_practice, review_status or "done", include_in_progress)
    session = current_app.extensions["db_sessionmaker"]()
    try:
        if fmt in FILE_SET_FORMATS:
            if out is None:
                raise InvalidInput(f"{fmt} writes several files: pass --out FOLDER")
            count = write_folder(
                out, iter_export_files(session, get_study(session, slug), fmt, work)
            )
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
