"""``marginalia llm``: a study's LLM annotators (app/llm/): set them up, price them, queue a
run for ``marginalia worker``, follow it, read the calibration."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import click

from app.cli.base import OneLineGroup, counted, with_app


@click.group("llm", cls=OneLineGroup)
def llm() -> None:
    """LLM annotators of a study: blind beside the humans, calibrated, with their cost."""


@llm.group("annotator", cls=OneLineGroup)
def annotator_group() -> None:
    """Add, change, list or remove a study's LLM annotators."""


OPTIONS = {
    "base_url": ("--base-url", str, "The endpoint: https://api.openai.com/v1, "
                 "http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama)."),
    "model": ("--model", str, "The model's name at the endpoint."),
    "api_key_env": ("--api-key-env", str, "The environment variable holding the key "
                    "(read by the worker; never stored). Default OPENAI_API_KEY."),
    "temperature": ("--temperature", float, "Sampling temperature (default 0)."),
    "preset": ("--preset", click.Choice(["taxonomy", "booookscore"]),
               "taxonomy: a segment at a time with the study's categories (default); "
               "booookscore: BooookScore's per-sentence confusion protocol."),
    "structured": ("--structured", click.Choice(["json_schema", "json_object"]),
                   "Structured output by JSON schema (default), or a JSON object only."),
    "concurrency": ("--concurrency", int, "Requests in flight to the endpoint (default 4)."),
    "per_minute": ("--per-minute", float, "Requests started per minute (default 0: no limit)."),
    "timeout": ("--timeout", float, "Seconds before a request is retried (default 120)."),
    "max_retries": ("--max-retries", int, "Retries on 429, 5xx and timeouts (default 4)."),
    "max_tokens": ("--max-tokens", int, "Tokens an answer may take (default 2048)."),
    "batch": ("--batch", int, "booookscore: sentences judged per request (default 10)."),
    "max_context": ("--max-context", int, "taxonomy: characters of earlier text sent "
                    "(default 50000)."),
}  # fmt: skip


def _with_options(command: Any) -> Any:
    for name, (flag, kind, text) in reversed(OPTIONS.items()):
        command = click.option(flag, name, type=kind, default=None, help=text)(command)
    return command


@annotator_group.command("add")
@click.argument("slug")
@click.argument("name")
@_with_options
@with_app
def annotator_add(slug: str, name: str, **given: Any) -> None:
    """Add annotator NAME (worker ID llm:NAME), or change the options given."""
    from app.db import begin_write, session_scope
    from app.documents.studies import get_study
    from app.errors import InvalidInput
    from app.llm.annotators import Annotator, annotators, save

    with session_scope() as session:
        begin_write(session)
        study = get_study(session, slug)
        chosen = {k: v for k, v in given.items() if v is not None}
        old = annotators(study).get(name)
        if old is None and not {"base_url", "model"} <= set(chosen):
            raise InvalidInput("a new annotator needs --base-url and --model")
        new = dataclasses.replace(old, **chosen) if old else Annotator(name=name, **chosen)
        saved = save(session, study, new)
    click.echo(
        f"{'changed' if old else 'added'} annotator {saved.worker_id}: {saved.model} at "
        f"{saved.base_url}, preset {saved.preset}, temperature {saved.temperature:g}"
    )


@annotator_group.command("list")
@click.argument("slug")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@with_app
def annotator_list(slug: str, as_json: bool) -> None:
    """The study's LLM annotators and their settings (never a key)."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.llm.annotators import annotators

    with session_scope() as session:
        found = annotators(get_study(session, slug))
    if as_json:
        click.echo(json.dumps({n: a.setting() for n, a in found.items()}, indent=2))
        return
    for a in found.values():
        click.echo(
            f"{a.worker_id}: {a.model} at {a.base_url} (key from ${a.api_key_env}), preset "
            f"{a.preset}, temperature {a.temperature:g}, {a.concurrency} in flight"
        )
    if not found:
        click.echo("no LLM annotator: marginalia llm annotator add SLUG NAME ...", err=True)


@annotator_group.command("remove")
@click.argument("slug")
@click.argument("name")
@with_app
def annotator_remove(slug: str, name: str) -> None:
    """Forget an annotator that has annotated nothing."""
    from app.db import begin_write, session_scope
    from app.documents.studies import get_study
    from app.llm.annotators import remove

    with session_scope() as session:
        begin_write(session)
        remove(session, get_study(session, slug), name)
    click.echo(f"removed annotator llm:{name}")


@llm.command("price")
@click.argument("slug")
@click.option("--model", default=None, help="The model priced (as annotators name it).")
@click.option("--input", "input_price", type=float, default=None, help="Per million tokens in.")
@click.option("--output", "output_price", type=float, default=None, help="Per million out.")
@click.option("--human-per-hour", type=float, default=None, help="The humans' pay per hour.")
@click.option("--currency", default=None, help="Three-letter code (default USD).")
@with_app
def price_command(slug: str, **given: Any) -> None:
    """Set the prices the calibration's costs use; with no option, print them."""
    from app.db import begin_write, session_scope
    from app.documents.studies import get_study
    from app.llm.annotators import costs, set_costs

    with session_scope() as session:
        begin_write(session)
        study = get_study(session, slug)
        table = (
            set_costs(study, **given)
            if any(v is not None for v in given.values())
            else costs(study)
        )
    click.echo(json.dumps(table, indent=2))


@llm.command("annotate")
@click.argument("slug")
@click.option("--annotator", "name", required=True, help="The annotator's NAME.")
@click.option("--documents", default="", help="Document ids, comma-separated (default: all).")
@with_app
def annotate_command(slug: str, name: str, documents: str) -> None:
    """Queue a run of the annotator over the study's documents (marginalia worker runs it)."""
    from app.db import begin_write, session_scope
    from app.documents.studies import get_study
    from app.llm.annotators import annotator
    from app.llm.runs import queue_run

    chosen = [d.strip() for d in documents.split(",") if d.strip()]
    with session_scope() as session:
        begin_write(session)
        study = get_study(session, slug)
        run = queue_run(
            session, study, annotator(study, name), documents=chosen, requested_by="cli"
        )
        run_id, count = run.id, run.documents
    click.echo(f"run {run_id} queued: llm:{name} over {counted(count, 'document')}")


@llm.command("status")
@click.argument("slug")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@with_app
def status_command(slug: str, as_json: bool) -> None:
    """The study's latest LLM runs: documents done, failed, tokens, the stage."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.llm.runs import recent_runs
    from app.llm.text import format_runs

    with session_scope() as session:
        states = recent_runs(session, get_study(session, slug).id, limit=20)
    click.echo(json.dumps(states, indent=2) if as_json else format_runs(states), nl=as_json)


@llm.command("calibration")
@click.argument("slug")
@click.option("--annotator", "name", required=True, help="The annotator's NAME.")
@click.option("--now", is_flag=True, help="Compute it here now instead of reading the stored one.")
@click.option(
    "--min-humans",
    type=click.IntRange(min=1),
    default=None,
    help="With --now: K of the consensus (default: a majority of the other humans).",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@with_app
def calibration_command(
    slug: str, name: str, now: bool, min_humans: int | None, as_json: bool
) -> None:
    """The annotator's calibration: its P/R/F1, α, γ and cost beside the humans'."""  # fmt: skip
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.errors import InvalidInput
    from app.llm.annotators import annotator
    from app.llm.runs import latest_calibration
    from app.llm.text import format_calibration

    with session_scope() as session:
        study = get_study(session, slug)
        annotator(study, name)
        if now:
            from app.llm.calibration import calibrate

            result = calibrate(session, study.id, name, min_humans=min_humans)
        else:
            run = latest_calibration(session, study.id, name)
            if run is None:
                raise InvalidInput(f"llm:{name} has no calibration yet: its run computes one")
            result = run.calibration
    click.echo(json.dumps(result, indent=2) if as_json else format_calibration(result), nl=as_json)
