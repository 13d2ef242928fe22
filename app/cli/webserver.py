"""``marginalia web``: the Procfile's ``web`` process (Heroku, Docker, bare metal), granian
serving the app.

    marginalia web

granian serves the app through :mod:`app.web.front` (its RSGI interface): a request's
body is read in granian's Rust stack under the limits of :mod:`app.web.body_rules` (a size
per route, a deadline, a memory budget; ``WEB_BODY_*`` settings) before the app gets one of
its ``WEB_THREADS`` threads, so slow or large bodies cannot hold the threads or the memory;
the thread then sends its answer itself. ``WEB_FRONT=0`` serves the WSGI app directly, for a
deployment behind a proxy that buffers bodies. The access log masks tokens and its file is
``0600``.

granian (a WSGI server with a native HTTP stack) replaced gunicorn gthread here: with the
worker API's entry the app's own work per annotation is smaller than gunicorn's (its Python HTTP
parser, thread hand-off and response writing: ~0.7-0.9 ms of CPU per request against
granian's ~0.3 ms, docs/PERFORMANCE.md). gunicorn.conf.py still works and is still
supported (``gunicorn --config gunicorn.conf.py "app:create_app()"``) for a deployment that
wants gunicorn's hung-worker timeout (see below).

Every value can be overridden from the environment, with the names gunicorn.conf.py reads:
PORT, WEB_CONCURRENCY (processes, default: the cores, at least 2), WEB_THREADS (Python
threads per process; GUNICORN_THREADS is read too, default 8), WEB_BACKLOG (2048),
WEB_KEEPALIVE (seconds an idle keep-alive connection is kept, at most 60), WEB_LOG_LEVEL,
WEB_ACCESS_LOG (``1`` or ``-``: to stdout; a path: to that file; ``WEB_ACCESS_LOG_FORMAT``
in granian's atoms). WEB_APP names another app factory (the benches' baseline). ``BEHIND_PROXY`` is handled by the app itself (werkzeug's ProxyFix,
app/web/__init__.py), exactly as under gunicorn; granian itself trusts no forwarded header.

What gunicorn did and what stands in for it:

- a killed or crashed worker process is started again (``respawn_failed_workers``, after
  ``WEB_RESPAWN_SECONDS``, 1 s; and the whole server when granian gives up, see
  :func:`main`);
- SIGTERM stops gracefully: requests in flight finish; workers still busy after
  ``WEB_GRACEFUL_TIMEOUT`` (20 s, gunicorn's ``graceful_timeout``) are killed;
- ``max_requests`` (recycle now and then against a slow leak) becomes a lifetime:
  ``WEB_WORKER_LIFETIME`` (6 h; each worker is replaced gracefully after it) and a memory
  ceiling, ``WEB_WORKER_MAX_RSS`` (MiB, 1024; 0 turns it off);
- gunicorn's hung-worker timeout (a worker that stops answering its arbiter for 25 s is
  killed) has **no equivalent**: granian's workers run the app in a thread pool and nothing
  watches a thread stuck in Python. What is lost: a request stuck for ever (an infinite
  loop, a database lock never released) holds its thread until the worker is recycled (its
  lifetime, or ``WEB_WORKER_MAX_RSS``) or the process restarted; the client is answered by
  Heroku's router after 30 s, and the worker's other threads go on serving. Waiting for a
  pooled database connection stays bounded (SQLAlchemy's 30 s pool timeout, then a 503).
"""

from __future__ import annotations

import logging
import os
import re

import click


def _int(name: str, default: int, *fallbacks: str) -> int:
    for key in (name, *fallbacks):
        value = os.environ.get(key, "").strip()
        if value:
            try:
                return int(value)
            except ValueError:
                raise click.UsageError(f"{key} must be a whole number, not {value!r}") from None
    return default


ACCESS_FORMAT = '%(addr)s "%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).3f'


# An assignment token in a path (/a/<token>, /api/assignments/<token>/...) or a query
# (?resume=<token>) is a worker's only credential: the log keeps its first 4 characters.
_TOKENS = re.compile(r"(/a/|/api/assignments/|resume=)([A-Za-z0-9_-]{4})[A-Za-z0-9_%-]*")


class MaskedAccessFormatter(logging.Formatter):
    """granian's access line with every assignment token cut to 4 characters and ``…``."""

    def format(self, record: logging.LogRecord) -> str:
        return _TOKENS.sub(r"\1\2…", super().format(record))


def _access_log() -> dict:
    """The access log's settings: off unless WEB_ACCESS_LOG is set. Tokens are masked
    (:class:`MaskedAccessFormatter`); a log file is created (or narrowed to) ``0600``."""
    target = os.environ.get("WEB_ACCESS_LOG", "0").strip()
    if target in ("", "0"):
        return {"log_access": False}
    settings: dict = {
        "log_access": True,
        "log_access_format": os.environ.get("WEB_ACCESS_LOG_FORMAT", ACCESS_FORMAT),
    }
    from granian.log import LOGGING_CONFIG

    formatters = {
        **LOGGING_CONFIG["formatters"],
        "access": {"()": f"{__name__}.MaskedAccessFormatter", "fmt": "%(message)s"},
    }
    handler: dict = {**LOGGING_CONFIG["handlers"]["access"]}
    if target not in ("1", "-"):  # a file, private to the server's user
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
            os.chmod(target, 0o600)
        except OSError as exc:
            raise click.UsageError(f"WEB_ACCESS_LOG {target}: {exc.strerror}") from None
        handler = {"formatter": "access", "class": "logging.FileHandler", "filename": target}
    handlers = {**LOGGING_CONFIG["handlers"], "access": handler}
    settings["log_dictconfig"] = {"formatters": formatters, "handlers": handlers}
    return settings


def settings() -> dict:
    """granian's ``Server`` keyword arguments, from the environment."""
    from granian.constants import Interfaces, Loops, TaskImpl
    from granian.http import HTTP1Settings
    from granian.log import LogLevels

    max_rss = _int("WEB_WORKER_MAX_RSS", 1024)
    front = os.environ.get("WEB_FRONT", "1").strip() != "0"
    return {
        # A factory: each worker process builds its own app (and database pool) behind the
        # front, which reads request bodies in granian's Rust stack, bounded, before a thread
        # is taken (app/web/front.py, granian's RSGI; WEB_APP names the app factory it wraps).
        "target": "app.web.front:create" if front else os.environ.get("WEB_APP", "app:create_app"),
        "factory": True,
        "interface": Interfaces.RSGI if front else Interfaces.WSGI,
        # The front's deadlines cancel the request's asyncio task (app/web/front.py).
        "task_impl": TaskImpl.asyncio,
        # auto: uvloop when installed (the front's wakes cost less), else asyncio's.
        "loop": Loops(os.environ.get("WEB_LOOP", "auto")),
        "address": os.environ.get("WEB_HOST", "0.0.0.0"),  # noqa: S104 - a server's job
        "port": _int("PORT", 5000),
        "workers": _int("WEB_CONCURRENCY", max(2, os.cpu_count() or 1)),
        # The app's threads (WEB_THREADS, 8) are the front's: annotation requests spend most
        # of their time waiting on the database, so threads are cheap concurrency (gunicorn
        # gthread's ``threads``). One runtime thread does the I/O; one blocking thread runs
        # the event loop (granian's only choice for RSGI).
        "blocking_threads": 1 if front else _int("WEB_THREADS", 8, "GUNICORN_THREADS"),
        "runtime_threads": 1,
        "backlog": _int("WEB_BACKLOG", 2048),
        # Idle keep-alive connections cost no thread. hyper closes a connection that sends no
        # request headers for this long (granian's ceiling is 60 s; gunicorn's 75 s outlasted
        # a load balancer's 60 s idle timeout, this one equals it).
        "http1_settings": HTTP1Settings(
            header_read_timeout=1000 * min(60, _int("WEB_KEEPALIVE", 60)), keep_alive=True
        ),
        "http": "1",
        "websockets": False,
        "respawn_failed_workers": True,
        "respawn_interval": float(os.environ.get("WEB_RESPAWN_SECONDS", "1")),
        "workers_kill_timeout": _int("WEB_GRACEFUL_TIMEOUT", 20),
        "workers_lifetime": _int("WEB_WORKER_LIFETIME", 6 * 3600) or None,
        "workers_max_rss": max_rss or None,
        "log_level": LogLevels(os.environ.get("WEB_LOG_LEVEL", "info")),
        **_access_log(),
        "static_path_route": None,
    }


def main() -> None:
    """Serve until SIGTERM/SIGINT.

    granian gives up when a worker it respawned dies again within 5.5 s (its "crash loop"
    check: ``tests/test_faults.py`` kills one worker, then all of them, seconds apart); the
    whole server then exits. Here it is started again after 1 s, then 2, 4 … 30 s
    while such restarts keep coming within a minute of each other."""
    import logging
    import time

    from granian.server import Server

    pause = 0.0
    while True:
        server = Server(**settings())
        started = time.monotonic()
        try:
            server.serve()
            return
        except SystemExit:
            if server.interrupt_signal:  # stopped on purpose
                raise
        pause = 0.0 if time.monotonic() - started > 60 else min(30.0, max(1.0, 2 * pause))
        logging.getLogger("_granian").error("web server exited: starting again in %.0f s", pause)
        time.sleep(pause)


@click.command("web")
def web_command() -> None:
    """Production web server (granian; settings from the environment, docs/DEPLOY.md)."""
    main()
