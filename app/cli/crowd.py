"""``marginalia study settings`` and ``marginalia mturk create-hits``: the crowd platforms."""

from __future__ import annotations

import json
from typing import Any

import click

from app.cli.base import with_app as _run


@click.command("settings")
@click.argument("slug")
@click.option("--platform", type=click.Choice(["generic", "prolific", "mturk"]), default=None)
@click.option(
    "--completion-url",
    default=None,
    help="Where workers go after submitting ('' clears; {code} = their code).",
)
@click.option(
    "--abandon-after-minutes",
    type=float,
    default=None,
    help="Re-offer active assignments idle this long (default 45).",
)
@click.option(
    "--hold-minutes",
    type=float,
    default=None,
    help="How long a new assignment keeps its slot before its page is used (default 5).",
)
@click.option(
    "--randomise-conditions/--no-randomise-conditions",
    default=None,
    help="Split workers into assisted and unassisted conditions.",
)
@click.option(
    "--qualification-f1",
    default=None,
    help="F1 on gold documents needed before real ones ('off' disables).",
)
@click.option(
    "--qualification-attempts",
    type=int,
    default=None,
    help="Gold documents a worker may try (default 2).",
)
@click.option(
    "--max-hints-per-segment",
    type=int,
    default=None,
    help="Most detector hints shown on one segment, best scores first (default 3; 0 shows none).",
)
@click.option(
    "--min-hint-score",
    type=float,
    default=None,
    help="Hints scored below this (0-1) are not shown (default 0).",
)
@click.option(
    "--hints",
    type=click.Choice(["precise", "balanced", "thorough"]),
    default=None,
    help="Detector operating point for hints and suggestions (default balanced).",
)
@click.option(
    "--screen-out-url",
    default=None,
    help="Where a worker who fails the practice documents goes ('' clears; on Prolific a "
    "completion URL whose code has the 'screened out' action).",
)
@click.option(
    "--min-catch-rate",
    default=None,
    help="Flag workers who catch fewer than this share (0-1) of the attention checks ('off' "
    "disables).",
)
@click.option(
    "--lang",
    default=None,
    help="The documents' language, a tag such as en, ar or zh-Hans ('' clears); the pages "
    "mark the text with it, and a right-to-left language sets the direction.",
)
@click.option(
    "--dir",
    "direction",
    type=click.Choice(["ltr", "rtl", "auto", ""]),
    default=None,
    help="The documents' direction ('' clears: from --lang).",
)
@click.option(
    "--interface-lang",
    default=None,
    help="The language of the worker pages' own text: en or de ('' clears: --lang when the "
    "pages have it, else each worker's browser).",
)
@click.option(
    "--pause-after",
    type=int,
    default=None,
    help="The pause rule: checked once a worker has submitted this many documents (default 5).",
)
@click.option(
    "--pause-below-expected-f1",
    default=None,
    help="Pause workers whose expected F1 (worker models) is below this (0-1; 'off').",
)
@click.option(
    "--pause-below-gold-f1",
    default=None,
    help="Pause workers whose mean gold F1 is below this (0-1; 'off').",
)
@click.option(
    "--documents-per-session",
    type=int,
    default=None,
    help="Documents a participant does per visit, with one completion code (default 1).",
)
@click.option(
    "--allow-shorter-session/--no-shorter-session",
    default=None,
    help="When no document is left before the last, end the session with its code (default) "
    "or send the worker back to the platform.",
)
@click.option(
    "--reward",
    default=None,
    help="The reward per session, e.g. 2.50, for the dashboard's hourly rate ('' clears).",
)
@click.option("--currency", default=None, help="The reward's currency, e.g. GBP (the default).")
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
def study_settings(
    slug: str,
    platform: str | None,
    completion_url: str | None,
    abandon_after_minutes: float | None,
    hold_minutes: float | None,
    randomise_conditions: bool | None,
    qualification_f1: str | None,
    qualification_attempts: int | None,
    max_hints_per_segment: int | None,
    min_hint_score: float | None,
    hints: str | None,
    screen_out_url: str | None,
    min_catch_rate: str | None,
    lang: str | None,
    direction: str | None,
    interface_lang: str | None,
    pause_after: int | None,
    pause_below_expected_f1: str | None,
    pause_below_gold_f1: str | None,
    documents_per_session: int | None,
    allow_shorter_session: bool | None,
    reward: str | None,
    currency: str | None,
    as_json: bool,
) -> None:
    """Show or change a study's platform and assignment settings and its texts' language."""

    @_run
    def apply() -> dict[str, Any]:
        from app.annotation.session_settings import configure_sessions
        from app.crowd import platforms
        from app.db import session_scope
        from app.documents import language
        from app.documents.studies import get_study
        from app.errors import InvalidInput

        changes: dict[str, Any] = {}
        if platform is not None:
            changes["platform"] = platform
        if completion_url is not None:
            changes["completion_url"] = completion_url or None
        if abandon_after_minutes is not None:
            changes["abandon_after_minutes"] = abandon_after_minutes
        if hold_minutes is not None:
            changes["hold_minutes"] = hold_minutes
        if hints is not None:
            changes["hints"] = hints
        if randomise_conditions is not None:
            changes["randomise_conditions"] = randomise_conditions
        if qualification_f1 is not None:
            if qualification_f1.strip().lower() in ("off", "none", ""):
                changes["qualification_f1"] = None
            else:
                try:
                    changes["qualification_f1"] = float(qualification_f1)
                except ValueError:
                    raise InvalidInput(
                        f"--qualification-f1 {qualification_f1!r} is not a number or 'off'"
                    ) from None
        if qualification_attempts is not None:
            changes["qualification_attempts"] = qualification_attempts
        if max_hints_per_segment is not None:
            changes["max_hints_per_segment"] = max_hints_per_segment
        if screen_out_url is not None:
            changes["screen_out_url"] = screen_out_url
        if min_catch_rate is not None:
            off = min_catch_rate.strip().lower() in ("off", "none", "")
            changes["min_catch_rate"] = None if off else min_catch_rate
        if min_hint_score is not None:
            changes["min_hint_score"] = min_hint_score
        texts: dict[str, Any] = {}
        for key, value in (("lang", lang), ("dir", direction), ("interface_lang", interface_lang)):
            if value is not None:
                texts[key] = value
        pause = (pause_after, pause_below_expected_f1, pause_below_gold_f1)
        given = {
            "documents": documents_per_session,
            "shorter": allow_shorter_session,
            "reward": reward,
            "currency": currency,
        }
        with session_scope() as session:
            study = get_study(session, slug)
            if any(value is not None for value in pause):
                _configure_pause(study, *pause)
            described = language.configure_language(study, **texts)
            sessions = configure_sessions(
                study, **{key: value for key, value in given.items() if value is not None}
            )
            return {**platforms.configure_study(study, **changes), **described, **sessions}

    described = apply()
    if as_json:
        click.echo(json.dumps(described, indent=2))
        return
    for key, value in described.items():
        click.echo(f"{key}: {'-' if value is None else value}")


def _configure_pause(study: Any, after: int | None, competence: str | None, gold: str | None):
    """The pause rule's options over the study's rule (an option not given keeps its value)."""
    from app.annotation import pausing

    rule = pausing.pause_rule(study)
    pausing.configure_pause(
        study,
        after=after if after is not None else (rule.after if rule else 5),
        min_expected_f1=competence if competence is not None else (rule and rule.min_expected_f1),
        min_gold_f1=gold if gold is not None else (rule and rule.min_gold_f1),
    )


@click.group("mturk")
def mturk() -> None:
    """Mechanical Turk (closed by AWS on 2026-09-30; kept for compatible endpoints)."""


@mturk.command("create-hits")
@click.argument("slug")
@click.option("--count", type=click.IntRange(min=1), required=True, help="HITs to create.")
@click.option("--reward", required=True, help="US dollars per assignment, e.g. 1.50.")
@click.option(
    "--base-url",
    envvar="MARGINALIA_PUBLIC_URL",
    required=True,
    help="The site's public https:// address (or MARGINALIA_PUBLIC_URL).",
)
@click.option("--sandbox/--production", default=True, show_default=True)
@click.option(
    "--batch",
    default="1",
    show_default=True,
    help="Batch name; the same name again creates nothing twice.",
)
@click.option(
    "--max-assignments",
    type=click.IntRange(min=1),
    default=None,
    help="Workers per HIT (default: the study's annotators per document).",
)
@click.option("--title", default=None)
def create_hits_command(
    slug: str,
    count: int,
    reward: str,
    base_url: str,
    sandbox: bool,
    batch: str,
    max_assignments: int | None,
    title: str | None,
) -> None:
    """Post COUNT ExternalQuestion HITs that open the study's start page."""

    @_run
    def post():
        from app.crowd.mturk import create_hits, make_client
        from app.db import session_scope
        from app.documents.studies import get_study

        with session_scope() as session:
            study = get_study(session, slug)
            return create_hits(
                make_client(sandbox=sandbox),
                study,
                count=count,
                reward=reward,
                base_url=base_url,
                batch=batch,
                max_assignments=max_assignments,
                title=title,
            )

    result = post()
    where = "sandbox" if sandbox else "PRODUCTION"
    click.echo(
        f"{len(result.created)} HITs created on the {where} endpoint"
        + (f" (HIT group {result.group_id})" if result.group_id else "")
    )
    if result.skipped:
        click.echo(
            f"{len(result.skipped)} HITs of batch {batch!r} already existed and were "
            "skipped (use --batch NAME for a new batch)"
        )


def register(main: click.Group, study_group: click.Group) -> None:
    study_group.add_command(study_settings)
    main.add_command(mturk)
