"""Downloads that stream through the deployed web server (``marginalia web``, its front and
threads): a long streamed answer reaches every client whole, with its request context alive
to its last chunk, while other downloads share the threads."""

from __future__ import annotations

import os
import signal
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from tests.test_slow_clients import start_web

STREAMING_APP = """
from flask import Flask, Response, request, stream_with_context


def create():
    app = Flask(__name__)

    @app.get("/healthz")
    def healthz():  # what start_web waits for
        return "ok"

    @app.get("/export")
    def export():
        def chunks():
            for n in range(400):
                yield f"{request.path} {n}\\n".encode() + b"x" * 2048

        return Response(stream_with_context(chunks()), mimetype="text/plain")

    return app
"""


def test_a_streamed_answer_keeps_its_request_context_to_the_end(tmp_path):
    """A streamed answer's chunks read the request (``stream_with_context``) to the last one:
    an answer whose chunks ran in other threads than its context lost its end (seen once on
    the SNaC export over HTTP, behind an earlier front)."""
    (tmp_path / "streaming_app.py").write_text(STREAMING_APP, "utf-8")
    process, base, _port = start_web(
        tmp_path,
        {"WEB_APP": "streaming_app:create", "PYTHONPATH": str(tmp_path)},
    )
    try:

        def download(_n: int) -> bytes:
            with urllib.request.urlopen(base + "/export", timeout=60) as answer:
                return answer.read()

        with ThreadPoolExecutor(6) as pool:
            bodies = list(pool.map(download, range(6)))
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    for body in bodies:
        assert body.count(b"\n") == 400
        assert body.endswith(b"/export 399\n" + b"x" * 2048)
