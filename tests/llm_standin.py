"""A local stand-in for an OpenAI-compatible chat-completions server (real HTTP on
127.0.0.1, a free port), scripted per request: answers, bad answers, errors, slowness.

A script is ``f(segment, number) -> Reply``: ``segment`` is the CURRENT SEGMENT the prompt
carries (the numbered SENTENCES of a BooookScore request), ``number`` counts requests from 1.
The server records every request body and the most requests it had in flight at once.

Like a real server, it refuses (400) a ``response_format`` it cannot follow: a
``json_schema`` without a name and a schema object, or any type but ``json_object`` and
``json_schema``. ``usage`` counts the words of the last message (prompt) and of the
answer (completion), so a test can add up the tokens it was charged.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SEGMENT = re.compile(r"(?:CURRENT SEGMENT|SENTENCES):\n<<<\n(.*)\n>>>", re.DOTALL)


@dataclass
class Reply:
    """What the stand-in answers: ``content`` as the message, or a raw ``status``/``body``."""

    content: str | None = None
    finish_reason: str = "stop"
    refusal: str | None = None
    status: int = 200
    body: str | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def errors(*items: dict[str, Any]) -> Reply:
    """A well-formed answer listing ``items``."""
    return Reply(content=json.dumps({"errors": list(items)}))


Script = Callable[[str, int], Reply]


def _format_problem(wanted: Any) -> str | None:
    """Why a real server would refuse this ``response_format`` (None: it is fine)."""
    if wanted is None:
        return None
    kind = wanted.get("type") if isinstance(wanted, dict) else None
    if kind == "json_object":
        return None
    if kind != "json_schema":
        return f"response_format type {kind!r} is not supported"
    spec = wanted.get("json_schema")
    if (
        not isinstance(spec, dict)
        or not spec.get("name")
        or not isinstance(spec.get("schema"), dict)
    ):
        return "json_schema needs a name and a schema"
    schema = spec["schema"]
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        return "the schema must describe an object"
    return None


@dataclass
class StandIn:
    url: str
    requests: list[dict[str, Any]]
    max_in_flight: int = 0
    usage: list[tuple[int, int]] = field(default_factory=list)  # (prompt, completion) sent
    headers: list[dict[str, str]] = field(default_factory=list)  # each request's headers


@contextmanager
def standin(script: Script) -> Iterator[StandIn]:
    """Serve ``script`` at ``StandIn.url`` (use it as OPENAI_BASE_URL) until the block ends."""
    lock = threading.Lock()
    state = {"count": 0, "in_flight": 0}
    record = StandIn("", [])

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 - the http.server spelling
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                state["count"] += 1
                state["in_flight"] += 1
                record.max_in_flight = max(record.max_in_flight, state["in_flight"])
                number = state["count"]
                record.requests.append(body)
                record.headers.append(dict(self.headers.items()))
            try:
                self._answer(body, number)
            finally:
                with lock:
                    state["in_flight"] -= 1

        def _answer(self, body: dict[str, Any], number: int) -> None:
            if not self.path.endswith("/chat/completions"):
                self._send(404, '{"error": "not found"}', {})
                return
            if problem := _format_problem(body.get("response_format")):
                self._send(400, json.dumps({"error": {"message": problem}}), {})
                return
            prompt = body["messages"][-1]["content"]
            match = SEGMENT.search(prompt)
            reply = script(match.group(1) if match else "", number)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.body is not None or reply.status != 200:
                self._send(reply.status, reply.body or '{"error": "scripted"}', reply.headers)
                return
            message = {"role": "assistant", "content": reply.content, "refusal": reply.refusal}
            usage = (len(prompt.split()), len((reply.content or "").split()))
            with lock:
                record.usage.append(usage)
            answer = {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
            }
            self._send(200, json.dumps(answer), reply.headers)

        def _send(self, status: int, text: str, headers: dict[str, str]) -> None:
            data = text.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout case)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    record.url = f"http://127.0.0.1:{server.server_port}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield record
    finally:
        server.shutdown()
        server.server_close()
