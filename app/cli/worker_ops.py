"""``marginalia prolific approve|reject|bonus|screen-out``: settle a study's Prolific submissions
through Prolific's API (``app/crowd/prolific_api.py``; token in ``PROLIFIC_API_TOKEN``);
``marginalia study time-settings``: the speeder threshold and the all-segments-seen rule."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import click
from sqlalchemy import select

from app.cli.base import OneLineCommand, OneLineGroup, counted, with_app
from app.errors import InvalidInput


@click.group("prolific", cls=OneLineGroup)
def prolific() -> None:
    """Approve, reject or bonus a study's Prolific workers through Prolific's API."""


def _session():
    from flask import current_app

    return current_app.extensions["db_sessionmaker"]()


def _screened_out(session, study) -> list[str]:
    """The study's workers whose state is ``screened_out`` (out of practice attempts)."""
    from app.annotation.reviews import worker_states

    return sorted(w for w, s in worker_states(session, study).items() if s == "screened_out")


def _workers(session, study, workers: tuple[str, ...], reviewed: str | None) -> list[str]:
    from app.annotation.reviews import review_status

    if reviewed:
        chosen = sorted(w for w, s in review_status(session, study).items() if s == reviewed)
        if workers:
            chosen = sorted(set(chosen) | set(workers))
    else:
        chosen = list(dict.fromkeys(workers))
    if not chosen:
        raise InvalidInput("name workers with --worker ID (or --reviewed)")
    return chosen


def submissions(session, study, workers: list[str]) -> list[tuple[str, str, str]]:
    """(worker ID, Prolific submission ID = stored SESSION_ID, Prolific study ID) of each
    named worker's Prolific assignments, each submission once; a worker without one refused."""
    from app.models import Assignment

    rows = session.execute(
        select(Assignment.worker_id, Assignment.platform_data)
        .where(
            Assignment.study_id == study.id,
            Assignment.platform == "prolific",
            Assignment.worker_id.in_(workers),
        )
        .order_by(Assignment.id)
    ).all()
    found: dict[str, tuple[str, str, str]] = {}
    for worker, data in rows:
        session_id = (data or {}).get("session_id")
        if session_id:
            found.setdefault(session_id, (worker, session_id, (data or {}).get("study_id", "")))
    missing = [w for w in workers if w not in {v[0] for v in found.values()}]
    if missing:
        raise InvalidInput(f"worker {missing[0]!r} has no Prolific submission in this study")
    return list(found.values())


def _run(dry_run: bool, calls: list[tuple[str, Any]], verb: str) -> None:
    from app.crowd.prolific_api import ProlificClient

    if dry_run:
        for text, _ in calls:
            click.echo(f"would {text}")
        return
    client = ProlificClient()
    for done, (text, call) in enumerate(calls):
        try:
            call(client)
        except Exception as exc:
            if done:
                click.echo(f"{verb} {counted(done, 'submission')} before the error", err=True)
            raise exc
        click.echo(text)


WORKER = click.option("--worker", "workers", multiple=True, help="A worker ID (repeat).")
DRY = click.option("--dry-run", is_flag=True, help="Print the requests, send nothing.")


@prolific.command("approve")
@click.argument("slug")
@WORKER
@click.option("--reviewed", is_flag=True, help="Every worker approved on the worker page.")
@DRY
@with_app
def approve_command(slug: str, workers: tuple[str, ...], reviewed: bool, dry_run: bool) -> None:
    """Approve the workers' Prolific submissions (the SESSION_ID each arrived with)."""
    from app.documents.studies import get_study

    session = _session()
    study = get_study(session, slug)
    chosen = _workers(session, study, workers, "approved" if reviewed else None)
    out = set(_screened_out(session, study))
    for worker in chosen:  # approving would pay them in full
        if worker in out:
            click.echo(f"skip {worker}: screened out (use marginalia prolific screen-out)")
    chosen = [w for w in chosen if w not in out]
    found = submissions(session, study, chosen) if chosen else []
    calls = [
        (f"approve submission {sid} of {worker}", lambda c, s=sid: c.approve(s))
        for worker, sid, _ in found
    ]
    _run(dry_run, calls, "approved")


@prolific.command("reject")
@click.argument("slug")
@WORKER
@click.option("--reviewed", is_flag=True, help="Every worker rejected on the worker page.")
@click.option("--category", required=True, help="Prolific's rejection_category, e.g. FAILED_CHECK.")
@click.option("--message", required=True, help="Shown to the worker; at least 100 characters.")
@DRY
@with_app
def reject_command(
    slug: str, workers: tuple[str, ...], reviewed: bool, category: str, message: str, dry_run: bool
) -> None:
    """Reject the workers' Prolific submissions with a category and a message."""
    from app.crowd.prolific_api import check_rejection
    from app.documents.studies import get_study

    check_rejection(message, category)
    session = _session()
    study = get_study(session, slug)
    found = submissions(
        session, study, _workers(session, study, workers, "rejected" if reviewed else None)
    )
    calls = [
        (
            f"reject submission {sid} of {worker} ({category})",
            lambda c, s=sid: c.reject(s, message, category),
        )
        for worker, sid, _ in found
    ]
    _run(dry_run, calls, "rejected")


@prolific.command("bonus")
@click.argument("slug")
@WORKER
@click.option("--amount", default=None, help="Bonus per worker in the study's currency, e.g. 1.50.")
@click.option(
    "--per-document",
    default=None,
    help="Instead: this much per real document submitted, times --by, e.g. 0.20.",
)
@click.option(
    "--by",
    type=click.Choice(["gold-f1", "expected-f1"]),
    default=None,
    help="With --per-document: the document's gold F1 or the worker's expected F1.",
)
@click.option(
    "--confirm",
    default=None,
    help="With --per-document: the total the run without it printed; only then is it paid.",
)
@DRY
@with_app
def bonus_command(
    slug: str,
    workers: tuple[str, ...],
    amount: str | None,
    per_document: str | None,
    by: str | None,
    confirm: str | None,
    dry_run: bool,
) -> None:
    """Pay bonuses: one bulk bonus set up per Prolific study, then paid. --amount pays each
    named worker the same; --per-document pays each Prolific worker (or the named ones) per
    document from gold F1 or expected F1, printing the bonuses first and paying only with
    --confirm TOTAL."""
    from app.crowd.prolific_api import bonus_amount
    from app.documents.studies import get_study

    if (amount is None) == (per_document is None):
        raise InvalidInput("give --amount (the same for each worker) or --per-document with --by")
    session = _session()
    study = get_study(session, slug)
    if per_document is not None:
        per_study = _per_document(session, study, bonus_amount(per_document), by, workers)
        if per_study is None or (confirm is None and not dry_run):
            return
        if confirm is not None and not dry_run:
            _check_total(per_study, confirm)
    else:
        value = bonus_amount(amount or "")
        found = submissions(session, study, _workers(session, study, workers, None))
        per_study = defaultdict(list)
        for worker, _, prolific_study in found:
            if not prolific_study:
                raise InvalidInput(f"worker {worker!r} arrived without a STUDY_ID: cannot bonus")
            if (worker, value) not in per_study[prolific_study]:
                per_study[prolific_study].append((worker, value))

    def pay(client, prolific_study: str, paid: list[tuple[str, Any]]) -> None:
        payment = client.set_up_bonuses(prolific_study, paid)
        client.pay_bonuses(payment)

    calls = [
        (
            f"pay {counted(len(paid), 'bonus', 'bonuses')} of "
            f"{_amounts(paid)} in Prolific study {ps}",
            lambda c, ps=ps, paid=paid: pay(c, ps, paid),
        )
        for ps, paid in per_study.items()
    ]
    _run(dry_run, calls, "paid")


def _amounts(paid: list[tuple[str, Any]]) -> str:
    values = {str(value) for _, value in paid}
    return values.pop() if len(values) == 1 else f"{sum(v for _, v in paid)} in all"


def _per_document(session, study, rate, by: str | None, workers: tuple[str, ...]):
    """The per-document bonuses printed (see app/quality/bonuses.py), by Prolific study; None
    when there is nothing to pay."""
    from app.quality.bonuses import document_bonuses, total

    if by is None:
        raise InvalidInput("--per-document needs --by gold-f1 or --by expected-f1")
    bonuses = document_bonuses(session, study, rate, by, list(workers) or None)
    per_study: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for bonus in bonuses:
        figures = " ".join("–" if f is None else f"{f:.2f}" for f in bonus.figures)
        click.echo(
            f"{bonus.worker_id}: {counted(len(bonus.figures), 'document')} ({by} {figures}) "
            f"-> {bonus.amount}"
        )
        if not bonus.prolific_study:
            raise InvalidInput(f"worker {bonus.worker_id!r} arrived without a STUDY_ID")
        per_study[bonus.prolific_study].append((bonus.worker_id, bonus.amount))
    if not bonuses:
        click.echo("no bonus to pay: no document with a figure above 0")
        return None
    click.echo(f"total {total(bonuses)} in the study's currency")
    click.echo(f"to pay it, run again with --confirm {total(bonuses)}")
    return per_study


def _check_total(per_study: dict[str, list[tuple[str, Any]]], confirm: str) -> None:
    """Pay only the total the researcher saw (the bonuses may have changed since)."""
    from decimal import Decimal, InvalidOperation

    now = sum((value for paid in per_study.values() for _, value in paid), Decimal(0))
    try:
        seen = Decimal(confirm)
    except InvalidOperation:
        raise InvalidInput(f"--confirm {confirm!r} is not an amount") from None
    if seen != now:
        raise InvalidInput(f"the total is now {now}, not {confirm}: nothing was paid")


@prolific.command("screen-out")
@click.argument("slug")
@WORKER
@click.option(
    "--increase-places", is_flag=True, help="Give each screened-out place to a new participant."
)
@click.option("--bonus", default=None, help="Pay each of them this much on top, e.g. 0.20.")
@DRY
@with_app
def screen_out_command(
    slug: str, workers: tuple[str, ...], increase_places: bool, bonus: str | None, dry_run: bool
) -> None:
    """Screen out, on Prolific, the workers screened out here (out of practice attempts
    without the pass mark): every one of them, or those named with --worker. The Prolific
    study needs a fixed screen-out payment (Prolific's "screen out" feature)."""
    from app.crowd.prolific_api import bonus_amount
    from app.documents.studies import get_study

    amount = bonus_amount(bonus) if bonus is not None else None
    session = _session()
    study = get_study(session, slug)
    out = _screened_out(session, study)
    for worker in workers:
        if worker not in out:
            raise InvalidInput(f"{worker} is not screened out in study {slug}")
    chosen = list(dict.fromkeys(workers)) or out
    if not chosen:
        raise InvalidInput(f"no worker is screened out in study {slug}")
    per_study: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for worker, submission, prolific_study in submissions(session, study, chosen):
        if not prolific_study:
            raise InvalidInput(f"worker {worker!r} arrived without a STUDY_ID: cannot screen out")
        per_study[prolific_study].append((worker, submission))
    calls = [
        (
            f"screen out {counted(len(pairs), 'submission')} in Prolific study {ps} "
            f"({', '.join(dict.fromkeys(w for w, _ in pairs))})",
            lambda c, ps=ps, ids=[s for _, s in pairs]: c.screen_out(
                ps, ids, increase_places=increase_places, bonus=amount
            ),
        )
        for ps, pairs in per_study.items()
    ]
    _run(dry_run, calls, "screened out")


@click.command("time-settings", cls=OneLineCommand)
@click.argument("slug")
@click.option(
    "--min-seconds-per-segment",
    type=float,
    default=None,
    help="Flag workers whose median active seconds per segment is below this.",
)
@click.option("--no-min-seconds", is_flag=True, help="Remove the speeder threshold.")
@click.option(
    "--require-all-seen/--allow-unseen",
    default=None,
    help="Refuse (or allow) a submit before every segment was opened.",
)
@with_app
def time_settings_command(
    slug: str, min_seconds_per_segment: float | None, no_min_seconds: bool, require_all_seen
) -> None:
    """Show or change a study's time-on-task settings."""
    import json

    from app.annotation.timing import apply_settings
    from app.documents.studies import get_study

    session = _session()
    try:
        study = get_study(session, slug)
        described = apply_settings(
            study,
            min_seconds=min_seconds_per_segment,
            clear_min=no_min_seconds,
            require_seen=require_all_seen,
        )
        session.commit()
    finally:
        session.close()
    click.echo(json.dumps(described, sort_keys=True))


def register(main: click.Group, study_group: click.Group) -> None:
    main.add_command(prolific)
    study_group.add_command(time_settings_command)
