"""The web process's front (``marginalia web``): a request body is read in granian's Rust
HTTP stack, bounded, before the WSGI app gets one of the process's threads.

Why a front at all: granian's WSGI interface hands a request to a thread as soon as its
headers arrive, and that thread then blocks in Rust on the body with no deadline: 20
clients sending a body a byte a second held all 16 threads of the default server. So
granian serves this object through its RSGI interface instead, and for each request

1. the body is checked and read without a thread (:meth:`Front._body`):

   - a declared ``Content-Length`` over the route's limit is refused with ``413`` before a
     byte is read (:func:`app.web.body_rules.body_limit`: ``MAX_CONTENT_LENGTH``, 64 KB, for
     every route but the researchers' uploads, which take ``MAX_UPLOAD_LENGTH`` and only from
     a signed-in researcher's session; ``403`` without one);
   - every body held in memory counts against one budget per process
     (``WEB_BODY_BUFFER_MB``, 64): the declared length is reserved before reading, and a
     reservation past the budget gets ``503`` at once, so bodies held open by slow clients
     cannot take the process's memory. Nothing is spooled to disk;
   - the body must keep arriving: by ``WEB_BODY_TIMEOUT`` seconds (10) after the headers
     plus one second per ``WEB_BODY_MIN_RATE`` bytes received (500), and whatever it sends
     never after ``WEB_BODY_MAX_SECONDS`` (300): a trickle is cut with ``408`` and the
     connection closed (the old deadline grew with the declared length, to ~18 h);
   - a body is read in one await when it is small (a worker's JSON), chunk by chunk, with
     the rate checked on every chunk, when it is large;

2. the WSGI app (Flask behind the worker API's entry) then runs on one of ``WEB_THREADS`` threads
   (:class:`_Threads`: a queue and plain threads, no executor futures), with the environ
   granian's WSGI interface builds (PEP 3333), and **the thread sends the answer itself**
   through granian's protocol object: the event loop is only woken again to close the
   request's coroutine, off the answer's path. A long answer (an export) is streamed from
   the same thread with the transport's flow control, in constant memory.

What it costs, measured with ``bench/server_cpu.py`` (web CPU per add, 2 cores shared with
other work, load ~7): 0.89-1.01 ms here, 1.15 ms with the ASGI front it replaced (asyncio's
executor round trip, ASGI's message dicts), 0.71 ms with no front at all (``WEB_FRONT=0``,
safe only behind a proxy that buffers and bounds bodies). What is left is the event loop's
wakes: one to start the request's coroutine, one when its body has come.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import io
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from app.web.body_rules import BodyRules, Refusal

log = logging.getLogger("marginalia.front")

INLINE_BYTES = 256 * 1024  # answers whose first chunks reach this are streamed
STREAM_CHUNK_LIMIT = 64  # chunks gathered before an answer is streamed instead
SMALL_BODY = 64 * 1024  # read in one await; larger bodies chunk by chunk
_DONE = object()
_CLOSE = ("connection", "close")


class Budget:
    """Bytes of request bodies held in memory by this process, reserved before reading.

    Only the event loop's thread touches it (no lock needed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held -= size


class _Threads:
    """The app's threads: each takes a request from one queue and answers it whole."""

    def __init__(self, count: int) -> None:
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [
            threading.Thread(target=self._work, name=f"wsgi-{n}", daemon=True) for n in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self.queue.put(job)

    def _work(self) -> None:
        while True:
            job = self.queue.get()
            if job is None:
                return
            # A fresh context per request: nothing a request sets leaks into the next.
            contextvars.Context().run(job)

    def stop(self) -> None:
        for _ in self.threads:
            self.queue.put(None)


class Front:
    """granian's RSGI application in front of a WSGI app (see the module's docstring)."""

    def __init__(
        self,
        wsgi_app: Callable,
        *,
        threads: int = 8,
        rules: BodyRules | None = None,
        budget: int = 64 * 1024 * 1024,
    ) -> None:
        self.wsgi_app = wsgi_app
        self.rules = rules or BodyRules()
        self.budget = Budget(budget)
        self.thread_count = threads
        self.threads: _Threads | None = None
        self.finisher = _Finisher()
        self.loop: asyncio.AbstractEventLoop | None = None

    # granian calls these when its worker starts and stops (RSGI).
    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.threads = _Threads(self.thread_count)

    def __rsgi_del__(self, _loop: Any) -> None:
        if self.threads is not None:
            self.threads.stop()

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.proto != "http":
            return
        if self.threads is None:  # called without granian's init (tests)
            self.__rsgi_init__(asyncio.get_running_loop())
        headers = scope.headers
        declared = headers.get("content-length")
        body = b""
        reserved = 0
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                return _refuse(protocol, Refusal(400, "Content-Length is not a number"))
            if length > 0:
                refusal = self.rules.check(scope.method, scope.path, length, headers)
                if refusal is not None:
                    return _refuse(protocol, refusal)
                if not self.budget.take(length):
                    return _refuse(protocol, BUSY)
                reserved = length
        try:
            if reserved:
                try:
                    body = await self._body(protocol, reserved)
                except BodyTimeout:
                    return _refuse(protocol, TOO_SLOW)
                except Exception:  # noqa: BLE001 - the client went away mid-body
                    return None
            environ = _environ(scope, headers, body)
        finally:
            self.budget.give(reserved)
        loop = self.loop or asyncio.get_running_loop()
        finished = loop.create_future()
        self.threads.submit(
            lambda: _answer(self.wsgi_app, environ, protocol, loop, finished, self.finisher)
        )
        await finished
        return None

    async def _body(self, protocol: Any, length: int) -> bytes:
        """``length`` bytes of body, under the deadline of :meth:`BodyRules.deadline`.

        The deadline cancels this request's asyncio task: dropping the pending read is what
        lets granian close the connection. (granian's Rust-driven coroutines cost the loop
        a little less, but cannot be cancelled; answering 408 while the read is pending was
        tried with them: the answer went out and the connection stayed open, read on.)"""
        loop = self.loop or asyncio.get_running_loop()
        started = loop.time()
        task = asyncio.current_task()
        timer = loop.call_at(self.rules.deadline(started, 0), _expire, task)
        try:
            if length <= SMALL_BODY:
                body = await protocol()
            else:
                parts: list[bytes] = []
                received = 0
                async for chunk in protocol:
                    parts.append(chunk)
                    received += len(chunk)
                    if received >= length:
                        break
                    timer.cancel()
                    deadline = self.rules.deadline(started, received)
                    if deadline <= loop.time():
                        raise BodyTimeout
                    timer = loop.call_at(deadline, _expire, task)
                body = b"".join(parts)
        except asyncio.CancelledError:
            if _expired(task):
                raise BodyTimeout from None
            raise
        finally:
            timer.cancel()
        if len(body) < length:
            raise ConnectionError("the client closed the body early")
        return body[:length]


class BodyTimeout(Exception):
    """The body did not arrive in time."""


BUSY = Refusal(503, "the server is busy receiving other uploads; try again in a minute", 60)
TOO_SLOW = Refusal(408, "the request body did not arrive in time")


def _expire(task: asyncio.Task | None) -> None:
    if task is not None and not task.done():
        task.marginalia_expired = True  # type: ignore[attr-defined]
        task.cancel()


def _expired(task: asyncio.Task | None) -> bool:
    return bool(getattr(task, "marginalia_expired", False))


def _refuse(protocol: Any, refusal: Refusal) -> None:
    """Answer in the loop, close the connection (the body, if any, is left unread)."""
    body = refusal.json()
    headers = [
        ("content-type", "application/json"),
        ("cache-control", "no-store"),
        _CLOSE,
    ]
    if refusal.retry_after:
        headers.append(("retry-after", str(refusal.retry_after)))
    protocol.response_bytes(refusal.status, headers, body)


def _environ(scope: Any, headers: Any, body: bytes) -> dict[str, Any]:
    """The WSGI environ granian's WSGI interface builds for this request (PEP 3333:
    ``PATH_INFO`` the percent-decoded path as latin-1, headers as ``HTTP_*``)."""
    server_host, _, server_port = scope.server.rpartition(":")
    client_host = scope.client.rpartition(":")[0]
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(scope.path).decode("latin-1"),
        "QUERY_STRING": scope.query_string,
        "SERVER_NAME": server_host.strip("[]"),
        "SERVER_PORT": server_port,
        "SERVER_PROTOCOL": "HTTP/" + scope.http_version,
        "REMOTE_ADDR": client_host.strip("[]"),
        "GATEWAY_INTERFACE": "CGI/1.1",
        "SERVER_SOFTWARE": "Granian",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for raw_name, value in headers.items():
        name = raw_name.upper().replace("-", "_")
        if name == "CONTENT_TYPE" or name == "CONTENT_LENGTH":
            environ[name] = value
            continue
        key = "HTTP_" + name
        if key in environ:
            environ[key] += (";" if key == "HTTP_COOKIE" else ",") + value
        else:
            environ[key] = value
    if "HTTP_HOST" not in environ and scope.authority:
        environ["HTTP_HOST"] = scope.authority
    return environ


def _answer(
    wsgi_app: Callable,
    environ: dict[str, Any],
    protocol: Any,
    loop: asyncio.AbstractEventLoop,
    finished: asyncio.Future,
    finisher: _Finisher,
) -> None:
    """In one of the app's threads: run the app and send its answer through ``protocol``;
    then let the request's coroutine end (a wake of the loop the answer does not wait for)."""
    try:
        _run(wsgi_app, environ, protocol, loop)
    except Exception:  # noqa: BLE001 - logged; the client gets a 500 if nothing was sent
        log.exception("the app failed on %s %s", environ["REQUEST_METHOD"], environ["PATH_INFO"])
        with contextlib.suppress(Exception):  # unless an answer had already started
            protocol.response_bytes(
                500, [("content-type", "application/json")], b'{"error": "internal server error"}'
            )
    finally:
        finisher.add(loop, finished)


class _Finisher:
    """Ends the coroutines of answered requests in batches: a thread that has sent its
    answer adds the request's future here, and the loop is woken once for all the futures
    added until it runs (under load, one wake for many requests; the answers never wait)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: list[asyncio.Future] = []

    def add(self, loop: asyncio.AbstractEventLoop, finished: asyncio.Future) -> None:
        with self.lock:
            self.pending.append(finished)
            first = len(self.pending) == 1
        if first:
            loop.call_soon_threadsafe(self.run)

    def run(self) -> None:
        with self.lock:
            batch, self.pending = self.pending, []
        for finished in batch:
            if not finished.done():
                finished.set_result(None)


def _run(wsgi_app: Callable, environ: dict[str, Any], protocol: Any, loop: Any) -> None:
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None):
        started[:] = [int(status.split(" ", 1)[0]), headers]
        return _no_write

    result: Iterable[bytes] = wsgi_app(environ, start_response)
    try:
        if isinstance(result, list | tuple):  # werkzeug's usual answer: one body
            status, headers = started
            protocol.response_bytes(status, headers, b"".join(result))
            return
        iterator = iter(result)
        chunks: list[bytes] = []
        size = 0
        for chunk in iterator:
            chunks.append(chunk)
            size += len(chunk)
            if size > INLINE_BYTES or len(chunks) >= STREAM_CHUNK_LIMIT:
                break
        else:
            status, headers = started
            protocol.response_bytes(status, headers, b"".join(chunks))
            return
        status, headers = started
        transport = protocol.response_stream(status, headers)
        for chunk in _chain(chunks, iterator):
            if chunk:
                try:
                    asyncio.run_coroutine_threadsafe(_send(transport, chunk), loop).result()
                except Exception:  # noqa: BLE001 - the client went away: stop producing
                    return
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()


def _chain(first: list[bytes], rest: Any) -> Iterable[bytes]:
    yield from first
    yield from rest


async def _send(transport: Any, chunk: bytes) -> None:
    await transport.send_bytes(chunk)


def _no_write(_data: bytes) -> None:
    raise RuntimeError("the WSGI write() callable is not supported")


def _setting(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    return float(value) if value else default


def create() -> Front:
    """granian's factory (``marginalia web``): the WSGI app named by ``WEB_APP`` (default
    ``app:create_app``) built in this worker process, behind the front."""
    module, _, name = os.environ.get("WEB_APP", "app:create_app").partition(":")
    wsgi_app = getattr(importlib.import_module(module), name or "create_app")()
    threads = int(os.environ.get("WEB_THREADS") or os.environ.get("GUNICORN_THREADS") or 8)
    return Front(
        wsgi_app,
        threads=threads,
        rules=BodyRules.of(wsgi_app),
        budget=int(_setting("WEB_BODY_BUFFER_MB", 64) * 1024 * 1024),
    )
