"""``marginalia detect`` and ``marginalia worker``: the detector over a study, the queue worker."""

from __future__ import annotations

import json

import click

from app.cli.base import OneLineCommand, counted, with_app


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
    click.echo(f"{counted(count, 'suggestion')} stored ({detector.name} {detector.version})")


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
@click.option(
    "--queue",
    type=click.Choice(["all", "imports", "detection", "figures", "llm"]),
    default="all",
    show_default=True,
    help="Which jobs to run: uploaded imports, detection, a study's slow figures, LLM "
    "annotators (marginalia llm annotate), or all.",
)
@with_app
def worker_command(
    once: bool, health: bool, detector_name: str | None, poll: float, queue: str
) -> None:
    """The long-running worker: uploaded imports, detection and a study's slow figures (γ,
    MACE) (Procfile ``worker:``)."""
    import logging
    import signal

    from flask import current_app

    from app.detection import import_jobs, jobs
    from app.detection.importing import nlp_loader
    from app.detection.worker import work
    from app.models import LlmJob
    from app.queue import status_counts as queue_counts

    factory = current_app.extensions["db_sessionmaker"]
    if health:
        with factory() as session:
            state = jobs.health(session)
            state["imports"] = import_jobs.health(session)
            state["llm"] = queue_counts(session, LlmJob)  # LLM annotators' documents
            click.echo(json.dumps(state, indent=2))
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s worker %(message)s")
    detector = None
    if queue in ("all", "detection"):
        from model_server.detector import load_detector

        detector = load_detector(detector_name)
    load_nlp = (
        nlp_loader(current_app.config.get("SPACY_MODEL")) if queue in ("all", "imports") else None
    )
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    running = queue if detector is None else f"detector {detector.name} {detector.version}"
    click.echo(f"worker started ({queue}): {running}", err=True)
    try:
        stats = work(
            factory,
            detector,
            once=once,
            poll_seconds=poll,
            should_stop=lambda: bool(stopping),
            load_nlp=load_nlp,
            figures=queue in ("all", "figures"),
            trainings=queue in ("all", "detection"),
            llm=queue in ("all", "llm"),
        )
    except KeyboardInterrupt:
        return
    click.echo(
        f"worker stopped: {counted(stats['done'], 'document')}, "
        f"{counted(stats['failed'], 'failure')}, {counted(stats['suggestions'], 'suggestion')}, "
        f"{counted(int(stats['tokens']), 'token')}, {stats['seconds']:.1f} s detecting, "
        f"{stats['dropped']:g} answers or items dropped; "
        f"{counted(stats.get('imports', 0), 'import')}, {stats.get('imports_failed', 0):g} failed",
        err=True,
    )


def register_model_server(main: click.Group) -> None:
    """Attach ``marginalia detector ...`` from model_server when it is installed."""
    try:
        from model_server.cli import register
    except ImportError:
        return
    from app.detection.clusters import find_clusters
    from model_server.study_data import set_study_reader

    register(main, cluster_finder=find_clusters)
    set_study_reader(study_reader)


def study_reader(slug: str, layer: str, min_workers: int):
    """What ``marginalia detector train --study`` reads (registered with
    :func:`model_server.study_data.set_study_reader`): an app context of its own, and bad input
    (no such study, an unknown layer) as one line and exit status 1."""
    from app import create_app
    from app.cli.base import one_line_errors
    from app.db import session_scope
    from app.detection.study_data import read_study
    from app.documents.studies import get_study

    with one_line_errors():
        app = create_app()
        with app.app_context(), session_scope() as session:
            return read_study(session, get_study(session, slug), layer, min_workers)
    raise AssertionError("unreachable")  # pragma: no cover - one_line_errors exits
