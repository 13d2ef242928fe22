"""``marginalia compare``: the systems of a study compared, with intervals and tests."""

from __future__ import annotations

import json
from pathlib import Path

import click

from app.cli.base import OneLineCommand, with_app
from app.errors import InvalidInput

RESAMPLES = 9_999


@click.command("compare", cls=OneLineCommand)
@click.argument("slug")
@click.option(
    "--by",
    type=click.Choice(("source",)),
    default="source",
    show_default=True,
    help="What a system is: the documents' source.",
)
@click.option(
    "--layer",
    type=click.Choice(("workers", "adjudicated")),
    default="workers",
    show_default=True,
    help="Which errors count: workers' marks (--min-workers of them) or the adjudicated layer.",
)
@click.option(
    "--min-workers",
    type=click.IntRange(min=1),
    default=None,
    help="K: an error counts when at least K workers marked it (default 2, or 1 in a study "
    "with one worker per document).",
)
@click.option(
    "--resamples", type=click.IntRange(1, 1_000_000), default=RESAMPLES, show_default=True
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--include-practice", is_flag=True, help="Count a training phase's practice documents too."
)
@click.option(
    "--plot",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write the figure to this file (.svg or .png).",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--llm", default=None, help="Also rank the systems from LLM annotator NAME's marks.")
@with_app
def compare_command(
    slug: str,
    by: str,
    layer: str,
    min_workers: int | None,
    resamples: int,
    seed: int,
    include_practice: bool,
    plot: Path | None,
    as_json: bool,
    llm: str | None,
) -> None:
    """Errors per 100 words, per sentence and the clean-sentence share of each system, with
    95% bootstrap intervals, and every pair's difference with a permutation test."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality.compare import compare_systems
    from app.quality.compare_text import format_comparison

    fmt = plot.suffix.lower().lstrip(".") if plot is not None else None
    if plot is not None and fmt not in ("svg", "png"):
        raise InvalidInput(f"--plot {plot}: the file must end in .svg or .png")
    with session_scope() as session:
        study = get_study(session, slug)
        labels = {c["id"]: c["label"] for c in (study.taxonomy or {}).get("categories", [])}
        result = compare_systems(
            session,
            study,
            by=by,
            layer=layer,
            min_workers=min_workers,
            resamples=resamples,
            seed=seed,
            include_practice=include_practice,
        )
        if llm is not None:  # side by side with the humans' ranking (app/llm/ranks.py)
            from app.llm.ranks import format_ranks, ranks_side_by_side

            result["llm_ranks"] = ranks_side_by_side(session, study, f"llm:{llm}")
    if plot is not None:
        from app.quality.compare_plot import figure_bytes

        try:
            plot.write_bytes(figure_bytes(result, fmt or "svg", labels))
        except OSError as exc:
            raise InvalidInput(f"--plot {plot}: cannot write: {exc.strerror}") from None
        click.echo(f"figure written to {plot}", err=True)
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        click.echo(format_comparison(result), nl=False)
        if llm is not None:
            click.echo(format_ranks(result["llm_ranks"], f"llm:{llm}"), nl=False)
