"""The ``marginalia`` command line (CONTRACT.md): one module per command group, attached here.

Every command runs in one transaction and turns bad input into one line on stderr and exit
status 1 (``app/cli/base.py``).
"""

from __future__ import annotations

import click

from app.cli import (
    compare,
    crowd,
    data,
    detector,
    journey,
    llm,
    researcher,
    review,
    server,
    study,
    webserver,
    worker_ops,
)
from app.cli.base import OneLineGroup


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Marginalia: fine-grained span annotation of long generated text."""


main.add_command(server.db)
main.add_command(server.serve_command)
main.add_command(webserver.web_command)
main.add_command(study.taxonomy)
main.add_command(study.study)
main.add_command(study.report_command)
main.add_command(compare.compare_command)
main.add_command(study.demo_command)
main.add_command(data.import_command)
main.add_command(data.export_command)
main.add_command(detector.detect_command)
main.add_command(detector.worker_command)
main.add_command(researcher.researcher)
main.add_command(review.review)
main.add_command(llm.llm)
crowd.register(main, study.study)
journey.register(study.study)
detector.register_model_server(main)
worker_ops.register(main, study.study)
