"""FALTE's own app (its ``app.py``, from a checkout of its public repository), served by
granian's WSGI interface exactly as ``marginalia web`` serves ours, for bench/falte_real.py.

Run by the Python of FALTE's own environment (its ``requirements.txt`` and granian), never
ours, with the checkout and this folder on ``PYTHONPATH`` and the folder holding the
``stories.json`` to annotate as the working directory (FALTE opens ``./stories.json``):

    DATABASE_URL=postgresql://... PORT=8001 python bench/falte_wsgi.py

The one change to FALTE's app is the one the reviewer made: the database URL comes from
``DATABASE_URL`` (FALTE writes ``postgresql://localhost/annotation_db`` in its code). Its
table is created with its own model (``db.create_all()``); nothing else is touched.
"""

from __future__ import annotations

import os


def _falte():
    import app as falte  # FALTE's app.py (the checkout is first on PYTHONPATH)

    falte.app.config["SQLALCHEMY_DATABASE_URI"] = os.environ["DATABASE_URL"]
    return falte


app = _falte().app


def main() -> None:
    from granian.constants import Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server import Server

    falte = _falte()
    with falte.app.app_context():
        falte.db.create_all()
    Server(
        target="falte_wsgi:app",
        interface=Interfaces.WSGI,
        address="127.0.0.1",
        port=int(os.environ["PORT"]),
        workers=int(os.environ.get("WEB_CONCURRENCY", "2")),
        blocking_threads=int(os.environ.get("WEB_THREADS", "8")),
        runtime_threads=1,
        backlog=2048,
        http="1",
        websockets=False,
        http1_settings=HTTP1Settings(header_read_timeout=60_000, keep_alive=True),
        log_level=LogLevels.warning,
    ).serve()


if __name__ == "__main__":
    main()
