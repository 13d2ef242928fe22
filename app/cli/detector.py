"""``marginalia detect`` and ``marginalia worker``: the detector over a study, the queue worker."""

from __future__ import annotations

import json

import click

from app.cli.base import OneLineCommand, with_app


@click.command("detect", cls=OneLineCommand)
@click.argument("slug")
@click.option(
    "--detector",
    "detector_name",
    default=None,
    help="rules, minilm, openai:<model> or a checkpoint folder (default: DETECTOR_MODEL).",
)
@with_app
def detect_command(slug: str, detector_name: str | None) -> None:
    """Run the detector over a study's documents now (progress bar)."""
    from app.db import session_scope
    from app.detection.worker import detect_study
    from app.documents.studies import get_study
    from model_server.detector import load_detector

    detector = load_detector(detector_name)
    with session_scope() as session:
        count = detect_study(session, get_study(session, slug), detector)
    click.echo(f"{count} suggestions stored ({detector.name} {detector.version})")


@click.command("worker", cls=OneLineCommand)
@click.option("--once", is_flag=True, help="Stop when the queue is empty.")
@click.option("--health", is_flag=True, help="Print the queue's state as JSON and exit.")
@click.option(
    "--detector",
    "detector_name",
    default=None,
    help="rules, minilm, openai:<model> or a checkpoint folder (default: DETECTOR_MODEL).",
)
@click.option("--poll", default=2.0, show_default=True, help="Seconds between idle polls.")
@with_app
def worker_command(once: bool, health: bool, detector_name: str | None, poll: float) -> None:
    """The long-running detector worker (Procfile ``worker:``)."""
    import logging
    import signal

    from flask import current_app

    from app.detection import jobs
    from app.detection.worker import work

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
        stats = work(
            factory, detector, once=once, poll_seconds=poll, should_stop=lambda: bool(stopping)
        )
    except KeyboardInterrupt:
        return
    click.echo(
        f"worker stopped: {stats['done']} documents, {stats['failed']} failures, "
        f"{stats['suggestions']} suggestions, {stats['tokens']} tokens, "
        f"{stats['seconds']:.1f} s detecting, {stats['dropped']} answers or items dropped",
        err=True,
    )


def register_model_server(main: click.Group) -> None:
    """Attach ``marginalia detector ...`` from model_server when it is installed."""
    try:
        from model_server.cli import register
    except ImportError:
        return
    register(main)
