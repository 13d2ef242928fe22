"""Downloads that stream over the web front: the context of a streamed Flask
answer survives the pool's threads, so a long export is never cut off at its end."""

from __future__ import annotations

import asyncio

from flask import Flask, Response, request, stream_with_context

from app.web.front import Front
from tests.helpers import run_in_own_loop


def _get(wsgi_app, path: str) -> list[dict]:
    sent: list[dict] = []
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"x")],
        "server": ("127.0.0.1", "80"),
        "client": ("127.0.0.1", "9"),
    }

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    async def run():
        front = Front(wsgi_app, threads=8)
        # other requests keep the pool's threads turning, as on a busy server
        await asyncio.gather(*(front(scope, receive, send) for _ in range(4)))

    run_in_own_loop(run())
    return sent


def test_a_streamed_answer_keeps_its_request_context_to_the_end():
    """Before: each chunk of a ``stream_with_context`` answer ran in whichever pool thread was
    free, and the context pushed in one thread was popped in another (LookupError): the
    download ended without its last chunk (seen on the SNaC export over HTTP)."""
    app = Flask(__name__)

    @app.get("/export")
    def export():
        def chunks():
            for n in range(400):
                yield f"{request.path} {n}\n".encode() + b"x" * 2048

        return Response(stream_with_context(chunks()), mimetype="text/plain")

    sent = _get(app, "/export")
    ends = [m for m in sent if m["type"] == "http.response.body" and not m.get("more_body")]
    assert len(ends) == 4  # every answer ended properly
    body = b"".join(m["body"] for m in sent if m["type"] == "http.response.body")
    assert body.count(b"/export 399\n") == 4
