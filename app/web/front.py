"""The web process's front (``marginalia web``): a request's body is read on the event loop,
with a deadline and a size cap, before the WSGI app gets a thread (issue 26 row 1).

granian's WSGI interface hands a request to one of the process's threads as soon as its
headers arrive, and the thread then waits for the body: 20 clients sending a 60 KB body one
byte a second held all 16 threads of the default server (2 processes x 8), and every other
request, the annotate page's included, waited. Here granian serves this ASGI callable
instead. For each request it

1. reads the body on the loop (no thread taken): at most ``Content-Length`` bytes, under a
   deadline of ``WEB_BODY_TIMEOUT`` seconds (10) that each ``WEB_BODY_MIN_RATE`` bytes
   received extend by one second (500; Apache mod_reqtimeout's rule, so a slow but real
   upload goes through while a body trickling a byte a second is cut after ~10 s with a
   ``408``). A ``Content-Length`` over the app's largest limit (``MAX_UPLOAD_LENGTH``) is not
   read: the app answers its own ``413``, naming the limit. Bodies over 1 MiB are spooled
   to a temporary file;
2. then runs the WSGI app (Flask behind the fast lane, unchanged) in a pool of
   ``WEB_THREADS`` threads, with the environ granian's WSGI interface built (PEP 3333:
   ``PATH_INFO`` the percent-decoded path as latin-1, headers as ``HTTP_*``, ``REMOTE_ADDR``);
3. and sends the answer: at once when it is a few chunks, else streamed chunk by chunk, each
   chunk produced in the pool and sent with ASGI's flow control (granian's channel of 4), so
   an export still streams in constant memory and no thread waits on a slow reader. Every
   step of one answer runs in one ``contextvars`` context, whichever thread takes it.

A body sent without ``Content-Length`` (chunked) is not given to the app, as under granian's
WSGI interface (werkzeug reads no body without a length).
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import io
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote_to_bytes

log = logging.getLogger("marginalia.front")

SPOOL_BYTES = 1024 * 1024
INLINE_BYTES = 256 * 1024  # answers up to this size go in one message
STREAM_CHUNK_LIMIT = 64  # chunks gathered before an answer is streamed instead
DEFAULT_BODY_TIMEOUT = 10.0
DEFAULT_BODY_MIN_RATE = 500
_DONE = object()


def _setting(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    return float(value) if value else default


class BodyTimeout(Exception):
    """The body did not arrive in time."""


class Front:
    """ASGI in front of a WSGI app (see the module's docstring)."""

    def __init__(
        self,
        wsgi_app: Callable,
        *,
        threads: int = 8,
        max_body: int = 32 * 1024 * 1024,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        body_min_rate: float = DEFAULT_BODY_MIN_RATE,
    ) -> None:
        self.wsgi_app = wsgi_app
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="wsgi")
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.body_min_rate = body_min_rate

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = scope["headers"]
        length = _content_length(headers)
        body: io.BufferedIOBase | io.BytesIO = io.BytesIO()
        if length and length <= self.max_body:
            try:
                body = await self._read_body(receive, length)
            except BodyTimeout:
                await _answer(send, 408, b'{"error": "the request body did not arrive in time"}')
                return
            except ConnectionError:
                return  # the client went away
        environ = _environ(scope, headers, body)
        loop = asyncio.get_running_loop()
        # Every step of one answer runs in the same context, whichever thread takes it: a
        # streamed Flask answer pushes its app and request context in one step and pops it
        # in the last (it was a LookupError, and a download cut short, issue 34).
        context = contextvars.copy_context()
        try:
            status, response_headers, chunks, rest = await loop.run_in_executor(
                self.pool, context.run, _call, self.wsgi_app, environ
            )
        except Exception:
            log.exception("the app failed on %s %s", scope.get("method"), scope.get("path"))
            await _answer(send, 500, b'{"error": "internal server error"}')
            return
        finally:
            body.close()
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        if rest is None:
            await send({"type": "http.response.body", "body": b"".join(chunks)})
            return
        try:
            for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            while (
                chunk := await loop.run_in_executor(self.pool, context.run, next, rest, _DONE)
            ) is not _DONE:
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            close = getattr(rest, "close", None)
            if close is not None:
                await loop.run_in_executor(self.pool, context.run, close)

    async def _read_body(self, receive: Callable, length: int) -> Any:
        """The body (``length`` bytes at most) as a file at its start; a deadline that
        received bytes extend (module docstring)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        received = 0
        buffer: Any = (
            io.BytesIO()
            if length <= SPOOL_BYTES
            else tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
        )
        try:
            while True:
                deadline = started + self.body_timeout + received / self.body_min_rate
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise BodyTimeout
                try:
                    message = await asyncio.wait_for(receive(), remaining)
                except TimeoutError:
                    raise BodyTimeout from None
                if message["type"] == "http.disconnect":
                    raise ConnectionError("client disconnected")
                chunk = message.get("body", b"")
                if chunk:
                    room = length - received
                    buffer.write(chunk[:room])
                    received += min(len(chunk), room)
                if not message.get("more_body") or received >= length:
                    break
        except BaseException:
            buffer.close()
            raise
        buffer.seek(0)
        return buffer


async def _answer(send: Callable, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Callable, send: Callable) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _content_length(headers: list[tuple[bytes, bytes]]) -> int:
    for name, value in headers:
        if name == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return 0
    return 0


def _environ(scope: dict, headers: list[tuple[bytes, bytes]], body: Any) -> dict[str, Any]:
    """The WSGI environ granian's WSGI interface builds for this request."""
    server_host, server_port = scope.get("server") or ("", "")
    client = scope.get("client") or ("", "")
    raw_path = scope.get("raw_path") or scope["path"].encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(raw_path).decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server_host),
        "SERVER_PORT": str(server_port),
        "SERVER_PROTOCOL": "HTTP/" + scope.get("http_version", "1.1"),
        "REMOTE_ADDR": str(client[0]),
        "GATEWAY_INTERFACE": "CGI/1.1",
        "SERVER_SOFTWARE": "Granian",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": _stderr(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        if name == "CONTENT_TYPE" or name == "CONTENT_LENGTH":
            environ[name] = value
            continue
        key = "HTTP_" + name
        if key in environ:
            environ[key] += (";" if key == "HTTP_COOKIE" else ",") + value
        else:
            environ[key] = value
    return environ


def _stderr() -> Any:
    import sys

    return sys.stderr


def _call(
    wsgi_app: Callable, environ: dict[str, Any]
) -> tuple[int, list[tuple[bytes, bytes]], list[bytes], Iterator[bytes] | None]:
    """Run the app in a pool thread: its status, headers, the first chunks, and the rest of
    its iterable when it is long (None when every chunk is in the first ones)."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None):
        started[:] = [status, headers]
        return lambda data: None

    result: Iterable[bytes] = wsgi_app(environ, start_response)
    iterator = iter(result)
    chunks: list[bytes] = []
    size = 0
    rest: Iterator[bytes] | None = iterator
    try:
        while size <= INLINE_BYTES and len(chunks) < STREAM_CHUNK_LIMIT:
            chunk = next(iterator, _DONE)
            if chunk is _DONE:
                rest = None
                break
            chunks.append(chunk)  # type: ignore[arg-type]
            size += len(chunk)  # type: ignore[arg-type]
    finally:
        if rest is None and hasattr(result, "close"):
            result.close()  # type: ignore[attr-defined]
    if rest is not None and hasattr(result, "close"):
        rest = _Closing(iterator, result)
    status, headers = started
    return (
        int(status.split(" ", 1)[0]),
        [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
        chunks,
        rest,
    )


class _Closing:
    """The rest of a WSGI iterable, closed with the iterable (PEP 3333)."""

    def __init__(self, iterator: Iterator[bytes], result: Any) -> None:
        self.iterator, self.result = iterator, result

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        return next(self.iterator)

    def close(self) -> None:
        self.result.close()


def create() -> Front:
    """granian's factory (``marginalia web``): the WSGI app named by ``WEB_APP`` (default
    ``app:create_app``) built in this worker process, behind the front."""
    module, _, name = os.environ.get("WEB_APP", "app:create_app").partition(":")
    wsgi_app = getattr(importlib.import_module(module), name or "create_app")()
    config = getattr(wsgi_app, "config", {})
    limits = [config.get("MAX_CONTENT_LENGTH") or 0, config.get("MAX_UPLOAD_LENGTH") or 0]
    threads = int(os.environ.get("WEB_THREADS") or os.environ.get("GUNICORN_THREADS") or 8)
    return Front(
        wsgi_app,
        threads=threads,
        max_body=max(limits) or 32 * 1024 * 1024,
        body_timeout=_setting("WEB_BODY_TIMEOUT", DEFAULT_BODY_TIMEOUT),
        body_min_rate=_setting("WEB_BODY_MIN_RATE", DEFAULT_BODY_MIN_RATE),
    )
