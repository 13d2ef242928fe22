"""Gunicorn settings for the Procfile's ``web`` process (Heroku, Docker, bare metal).

Every value can be overridden from the environment: PORT, WEB_CONCURRENCY (processes),
GUNICORN_THREADS, GUNICORN_TIMEOUT. Timeouts stay under Heroku's 30 s router limit; nothing
a web request does (exports stream, detection runs in ``marginalia worker``) takes longer.
"""

from __future__ import annotations

import multiprocessing
import os


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


bind = f"0.0.0.0:{_int('PORT', 5000)}"
# gthread: each process serves GUNICORN_THREADS requests at once; annotation requests spend
# most of their time waiting on the database, so threads are cheap concurrency.
worker_class = "gthread"
workers = _int("WEB_CONCURRENCY", max(2, multiprocessing.cpu_count()))
threads = _int("GUNICORN_THREADS", 8)
# A worker process that stops answering the arbiter's heartbeat for 25 s is killed and replaced
# (under Heroku's 30 s router limit). With gthread the heartbeat runs beside the request
# threads, so a long streamed export download is not cut by it.
timeout = _int("GUNICORN_TIMEOUT", 25)
graceful_timeout = 20
# Idle keep-alive connections wait in gthread's poller, not in a thread, so browsers may keep
# theirs between annotations (a new connection per request costs ~0.3 ms of CPU and, measured
# in bench/load.py, a quarter of the p99); 75 s also outlasts the idle timeouts of common load
# balancers (60 s), which must close first.
keepalive = _int("GUNICORN_KEEPALIVE", 75)
# Recycle processes now and then so a slow leak can never take the dyno down.
max_requests = _int("GUNICORN_MAX_REQUESTS", 5000)
max_requests_jitter = 500
# The heartbeat file is touched on every event loop turn: keep it in memory, not on a
# container's overlay filesystem (gunicorn's advice for Docker; a slow disk there stalls
# workers and costs CPU on every request).
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
# Each process opens its own database pool after the fork (create_app runs per worker).
preload_app = False
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def post_worker_init(worker) -> None:
    """Tune the worker once the app is loaded.

    Both optional, off by default (their effect on bench/load.py could not be told apart from
    the shared machine's noise): GUNICORN_GC_FREEZE=1 freezes the app's long-lived objects out
    of the garbage collector's view (shorter full collections); GUNICORN_SWITCH_INTERVAL
    (seconds) shortens the GIL switch interval, so a thread back from the database waits less
    behind one that is computing.
    """
    import gc
    import sys

    if os.environ.get("GUNICORN_GC_FREEZE", "0") == "1":
        gc.collect()
        gc.freeze()
    interval = os.environ.get("GUNICORN_SWITCH_INTERVAL", "").strip()
    if interval:
        sys.setswitchinterval(float(interval))
