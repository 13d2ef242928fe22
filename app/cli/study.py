"""``marginalia taxonomy check``, ``study create``, ``report`` and ``demo``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from app.cli.base import OneLineCommand, OneLineGroup, counted, with_app


@click.group(cls=OneLineGroup)
def taxonomy() -> None:
    """Error taxonomies."""


@taxonomy.command("check")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def taxonomy_check(file: Path) -> None:
    """Validate a taxonomy YAML file and list its categories."""
    from app.documents.taxonomy import TaxonomyError, load_taxonomy

    try:
        snapshot = load_taxonomy(file)
    except TaxonomyError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    click.echo(
        f"{file}: {snapshot['name']} — {counted(len(snapshot['categories']), 'category', 'categories')}"
    )
    for cat in snapshot["categories"]:
        scope = ", whole sentence" if cat["scope"] == "sentence" else ""
        group = f" [{cat['group']}]" if cat["group"] else ""
        click.echo(
            f"  {cat['shortcut']}  {cat['id']:<14} {cat['kind']}{scope}{group}  {cat['label']}"
        )


@click.group(cls=OneLineGroup)
def study() -> None:
    """Studies."""


@study.command("create")
@click.argument("slug")
@click.option(
    "--taxonomy", "taxonomy_path", required=True, type=click.Path(dir_okay=False, path_type=Path)
)
@click.option("--annotators-per-doc", default=3, show_default=True, type=int)
@click.option(
    "--suggestions",
    default="hidden",
    show_default=True,
    type=click.Choice(["off", "shown", "hidden"]),
)
@click.option("--title", default=None, help="Shown to workers; defaults to the taxonomy name.")
@click.option(
    "--owner",
    metavar="EMAIL",
    default=None,
    help="The researcher who owns it; without one only admins see the study.",
)
@click.option(
    "--allow-unseen-submit",
    is_flag=True,
    help="Let workers submit before opening every segment (default: refused).",
)
@with_app
def study_create(
    slug: str,
    taxonomy_path: Path,
    annotators_per_doc: int,
    suggestions: str,
    title: str | None,
    owner: str | None,
    allow_unseen_submit: bool,
) -> None:
    """Create a study (the same arguments again change nothing)."""
    from app.db import session_scope
    from app.documents.studies import create_study, suggestions_warning
    from app.researchers.accounts import find_researcher

    with session_scope() as session:
        owner_row = find_researcher(session, owner) if owner is not None else None
        created_study, created = create_study(
            session,
            slug,
            taxonomy_path,
            annotators_per_doc=annotators_per_doc,
            suggestions=suggestions,
            title=title,
        )
        if created and owner_row is not None:
            created_study.owner_id = owner_row.id
        if created:  # a new study refuses a submit before every segment was opened
            created_study.settings = {
                **(created_study.settings or {}),
                "require_all_segments_seen": not allow_unseen_submit,
            }
        verb = "created" if created else "already exists, unchanged:"
        click.echo(
            f"study {created_study.slug} {verb} ({created_study.taxonomy_name}, "
            f"{counted(annotators_per_doc, 'annotator')} per document, suggestions {suggestions})"
        )
        warning = suggestions_warning(created_study.taxonomy, suggestions)
        if warning:
            click.echo(f"warning: {warning}", err=True)


@click.command("report", cls=OneLineCommand)
@click.argument("slug")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option(
    "--include-practice",
    is_flag=True,
    help="Count the practice documents of a training phase too (left out by default).",
)
@click.option(
    "--wait",
    "wait",
    is_flag=False,
    flag_value=600.0,
    default=None,
    type=click.FloatRange(min=0),
    metavar="[SECONDS]",
    help="When the work changed since the stored report, wait (up to SECONDS, 600 by "
    "default) for `marginalia worker` to bring the report and its slow figures current.",
)
@click.option(
    "--stored-figures",
    is_flag=True,
    hidden=True,
    help="Kept for scripts: the slow figures are always the stored ones.",
)
@with_app
def report_command(
    slug: str, as_json: bool, include_practice: bool, wait: float | None, stored_figures: bool
) -> None:
    """Progress, per-worker scores and agreement of a study (its real documents): the stored
    report when the work has not changed since the worker computed it, else the report now
    with γ and the worker models as last computed (their state and age say so), or, with
    --wait, the worker's new one."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.errors import InvalidInput
    from app.quality.reporting import format_report
    from app.quality.served import command_report

    def computing(stored: dict) -> None:
        said = "none is stored yet" if stored["state"] == "none" else (
            f"the work changed since the stored one ({stored['computed_at']})"
        )  # fmt: skip
        click.echo(
            f"note: {said}: computing the report now, with γ and the worker models as the "
            "worker last stored them (--wait: the worker's new report)",
            err=True,
        )

    with session_scope() as session:
        study = get_study(session, slug)
        try:
            report = command_report(
                session,
                study,
                include_practice=include_practice,
                wait=wait,
                computing=computing,
                as_text=as_json,
            )
        except TimeoutError as exc:
            raise InvalidInput(
                f"the report was not brought current within {wait:g} s (its job: {exc}): is "
                "`marginalia worker` running?"
            ) from None
    if isinstance(report, str):  # the stored report's JSON, current: printed as stored
        click.echo(report)
        return
    unitized = report["agreement"].get("unitized") or {}
    if unitized.get("state") not in (None, "current"):
        click.echo(
            f"note: γ and the worker models are {unitized.get('state')} (computed "
            f"{unitized.get('computed_at') or 'never'}): `marginalia worker` brings them "
            "current; `--wait` waits for it",
            err=True,
        )
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        click.echo(format_report(report))


DEMO_TITLE = "Demo: coherence errors in story summaries"


@click.command("demo", cls=OneLineCommand)
@click.option("--slug", default="demo", show_default=True)
@click.option(
    "--owner", metavar="EMAIL", default=None, help="Its owner; without one only admins see it."
)
@click.option(
    "--reset", is_flag=True, help="Delete the demo study and its work first, then make it anew."
)
@with_app
def demo_command(slug: str, owner: str | None, reset: bool) -> None:
    """Create the demo study with the shipped demo documents (once). It never fills up: once
    every slot is taken, each arrival still gets a document it has not had."""
    from sqlalchemy import func, select

    from app.config import PROJECT_ROOT
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.formats import parse_documents
    from app.models import Document
    from app.researchers.accounts import find_researcher

    if reset:
        from app.documents.lifecycle import delete_study
        from app.errors import InvalidInput
        from app.models import Study

        with session_scope() as session:
            old = session.scalar(select(Study).where(Study.slug == slug))
            if old is not None:
                if not (old.settings or {}).get("demo"):
                    raise InvalidInput(f"study {slug!r} is not a demo study: not deleted")
                counts = delete_study(session, old, slug)
                click.echo(
                    f"demo study {slug!r} deleted ({counted(counts['assignments'], 'assignment')})"
                )
    with session_scope() as session:
        owner_row = find_researcher(session, owner) if owner is not None else None
        demo, created = create_study(
            session,
            slug,
            PROJECT_ROOT / "taxonomies" / "snac.yaml",
            annotators_per_doc=3,
            suggestions="shown",
            title=DEMO_TITLE,
        )
        if created and owner_row is not None:
            demo.owner_id = owner_row.id
        if created or demo.title == DEMO_TITLE:  # (a demo study made before the flag too)
            demo.settings = {**(demo.settings or {}), "demo": True}
        count = session.scalar(select(func.count()).where(Document.study_id == demo.id))
        if count:
            click.echo(f"demo study {slug!r} already has {counted(count, 'document')}")
            return
        from flask import current_app

        from app.entities import load_pipeline

        documents = parse_documents(
            PROJECT_ROOT / "app" / "documents" / "demo_data" / "documents.json", "snac"
        )
        result = import_documents(
            session, demo, documents, nlp=load_pipeline(current_app.config["SPACY_MODEL"])
        )
        click.echo(f"demo study {slug!r}: {counted(result.documents, 'document')} loaded")


# ``study share | unshare | set-owner SLUG EMAIL``: app/researchers/access.py does the work.
SHARING = (
    (
        "share",
        "share",
        "Let another researcher see, export and change a study (a collaborator).",
        "study {slug} shared with {email}",
    ),
    (
        "unshare",
        "unshare",
        "Take a study back from a collaborator.",
        "study {slug} no longer shared with {email}",
    ),
    (
        "set-owner",
        "set_owner",
        "Give a study (for example one made before owners existed) to a researcher.",
        "study {slug} is now owned by {email}",
    ),
)


def _sharing_command(name: str, action: str, help_text: str, done: str) -> None:
    @study.command(name, help=help_text)
    @click.argument("slug")
    @click.argument("email")
    @with_app
    def command(slug: str, email: str) -> None:
        from app.db import session_scope
        from app.documents.studies import get_study
        from app.researchers import access

        with session_scope() as session:
            researcher = getattr(access, action)(session, get_study(session, slug), email)
            click.echo(done.format(slug=slug, email=researcher.email))


for _sharing in SHARING:
    _sharing_command(*_sharing)


@taxonomy.command("from-thresh", cls=OneLineCommand)
@click.argument("template", type=click.Path(dir_okay=False, path_type=Path))
def taxonomy_from_thresh(template: Path) -> None:
    """Print our taxonomy YAML made from a Thresh typology template."""
    from app.cli.base import one_line_errors
    from app.formats.thresh_typology import template_to_yaml

    with one_line_errors():
        click.echo(template_to_yaml(template), nl=False)


@study.command("license")
@click.argument("slug")
@click.argument("licence", required=False)
@click.option("--clear", is_flag=True, help="Forget the licence (the card says unknown).")
@with_app
def study_license(slug: str, licence: str | None, clear: bool) -> None:
    """Show or set the licence the parquet export's dataset card names (e.g. cc-by-4.0)."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.formats.dataset_card import DEFAULT_LICENSE, set_license

    with session_scope() as session:
        found = get_study(session, slug)
        if clear or licence is not None:
            set_license(found, None if clear else licence)
        click.echo((found.settings or {}).get("license") or DEFAULT_LICENSE)


@study.command("detector")
@click.argument("slug")
@click.argument("folder", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--shipped", is_flag=True, help="Back to the worker's own detector.")
@click.option(
    "--retrain-every",
    type=int,
    help="Retrain the study's model (a worker's job) each time N more documents are curated; 0: off.",
)
@click.option(
    "--layer",
    type=click.Choice(["adjudicated", "workers", "gold"]),
    default="adjudicated",
    show_default=True,
    help="With --retrain-every: the curated work to learn from.",
)
@click.option("--min-workers", type=int, default=1, show_default=True, help="With --layer workers.")
@with_app
def study_detector(
    slug: str,
    folder: Path | None,
    shipped: bool,
    retrain_every: int | None,
    layer: str,
    min_workers: int,
) -> None:
    """Make the study's suggestions come from a model learned from its work (FOLDER, from
    ``detector train --study``; stored in the database), or (--shipped) the worker's own
    detector; its documents are queued for detection again. ``--retrain-every N``: a worker
    trains a new model from the study's curated work each time N more documents are curated,
    and the study uses it. Without any: show which model, and the retraining rule."""
    from app.db import session_scope
    from app.detection.learned_models import chosen_model, store_model, use_model
    from app.detection.retraining import SETTING, latest, retrain_rule, set_rule
    from app.documents.studies import get_study

    if folder is not None and shipped:
        raise click.UsageError("give a model folder or --shipped, not both")
    rule = None if retrain_every is None else retrain_rule(retrain_every, layer, min_workers)
    with session_scope() as session:
        found = get_study(session, slug)
        if folder is not None or shipped:
            row = None if shipped else store_model(session, found, folder)
            queued = use_model(session, found, None if row is None else row.id)
            click.echo(f"{counted(queued, 'document')} queued for detection", err=True)
        if retrain_every is not None:
            set_rule(found, rule)
        row = chosen_model(session, found)
        click.echo("shipped" if row is None else f"learned {row.version} (model {row.id})")
        rule = (found.settings or {}).get(SETTING)
        if rule:
            last = latest(session, found)
            since = (
                "no training yet"
                if last is None
                else f"last training {last.status} at {counted(last.documents, 'document')}"
            )
            click.echo(
                f"retrained every {counted(rule['every'], 'curated document')} "
                f"({rule['layer']} layer); {since}"
            )
