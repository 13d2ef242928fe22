"""Rate limiting (flask-limiter); in-process memory unless RATELIMIT_STORAGE_URI is set.

The store comes from the app's config (``RATELIMIT_STORAGE_URI``, read from the environment
by :class:`app.config.Settings`): with several processes or machines a shared store (Redis)
makes the limits hold for the whole site, not per process
(tests/multinode/test_shared_state.py). A store that cannot be reached does not fail the
request: the process counts in its own memory meanwhile (``in_memory_fallback_enabled``).
The worker API's entry counts its limits (the arrival's, the practice check's) outside Flask,
in the same buckets (:func:`count`).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping
from typing import Any

from flask import current_app, request
from flask_limiter import Limiter, RateLimitExceeded
from limits import parse_many

log = logging.getLogger(__name__)


def address_of(environ: Mapping[str, Any]) -> str:
    """The client's address the limits count by (flask-limiter's ``get_remote_address``: the
    WSGI ``REMOTE_ADDR``, which a ``BEHIND_PROXY`` proxy fix has set from the proxy's header)."""
    return environ.get("REMOTE_ADDR") or "127.0.0.1"


def client_address() -> str:
    """The limiter's key: the current request's :func:`address_of`."""
    return address_of(request.environ)


# No storage_uri here: one given to the constructor would override the app's config.
limiter = Limiter(
    key_func=client_address,
    default_limits=[],
    in_memory_fallback_enabled=True,
)

# Arrivals (GET /s/<slug>, POST /api/assignments) per client address: a worker arrives once
# or twice; a page of <img> tags or a script arriving with made-up IDs is slowed down.
DEFAULT_ARRIVAL_LIMIT = "30 per minute; 300 per hour"
# The shared limit's scope (its bucket in the store): every arrival route counts in it.
ARRIVALS = "arrivals"
# Practice feedback per client address, whatever worker IDs it uses: an honest worker
# checks each segment of a few practice documents once; a client cycling throwaway IDs to
# collect answers is slowed (app/annotation/practice.py).
DEFAULT_PRACTICE_LIMIT = "120 per hour; 400 per day"
# The practice-check limit's bucket in the store (the name of the Flask endpoint that once
# answered the checks, which flask-limiter used as its scope: a store shared with a node of
# that time keeps one count).
PRACTICE = "api.practice_feedback"
STORE_CHECK_EVERY_S = 5.0  # how often a store found unreachable is tried again


def arrival_limit() -> str:
    """The current app's :func:`arrival_limit_of`."""
    return arrival_limit_of(current_app.config)


def arrival_limit_of(config: Mapping[str, Any]) -> str:
    """``ARRIVAL_RATE_LIMIT`` from ``config`` or the environment, else the default."""
    return (
        config.get("ARRIVAL_RATE_LIMIT")
        or os.environ.get("ARRIVAL_RATE_LIMIT")
        or DEFAULT_ARRIVAL_LIMIT
    )


def count(environ: Mapping[str, Any], limits: str, scope: str) -> str | None:
    """Count one request from ``environ``'s client in the limit ``scope`` (:data:`ARRIVALS`,
    :data:`PRACTICE`) outside a Flask request (the worker API's entry), as flask-limiter counts
    a route's limit: its strategy and store (Redis when configured, shared by every node), its
    key prefix, the same key (:func:`address_of`) and scope, the limits in its order, stopping
    at the first exceeded. Returns the exceeded limit's description (flask-limiter's 429
    message), else None. A store that fails is left for the process's memory, as
    flask-limiter's ``in_memory_fallback_enabled`` does, and tried again every
    :data:`STORE_CHECK_EVERY_S` seconds; a request is never refused for a failed store."""
    if not (limiter.enabled and limiter.initialized):
        return None  # nothing is counted anywhere
    prefix = getattr(limiter, "_key_prefix", "")
    key = [prefix, address_of(environ), scope] if prefix else [address_of(environ), scope]
    for _attempt in range(2):
        _retry_store()
        try:
            for item in sorted(parse_many(limits)):
                if not limiter.limiter.hit(item, *key):
                    return str(item)
            return None
        except Exception:  # noqa: BLE001 - counted in memory from now on (or not at all)
            if getattr(limiter, "_storage_dead", True):
                log.warning("rate limit: the store failed, nothing counted", exc_info=True)
                return None
            log.warning("rate limit: the store failed, counting in memory", exc_info=True)
            limiter._storage_dead = True  # noqa: SLF001 - flask-limiter's own fallback switch
            _last_store_check[0] = time.monotonic()
    return None


def seconds_until_reset(exc: RateLimitExceeded) -> int:
    """Whole seconds until the limit this request exceeded lets its client in again (at
    least 1): the store's reset time of the breached window, else, when the store cannot say
    (it failed meanwhile), the limit's whole window, which is never too early."""
    breached = limiter.current_limit
    try:
        if breached is not None and breached.breached:
            return max(1, math.ceil(breached.reset_at - time.time()))
    except Exception:  # noqa: BLE001 - the store failed: the whole window below
        log.warning("arrival limit: the store cannot say when it resets", exc_info=True)
    return max(1, int(exc.limit.limit.get_expiry()))


_last_store_check = [0.0]


def _retry_store() -> None:
    """A store marked unreachable is checked again every :data:`STORE_CHECK_EVERY_S`."""
    if not getattr(limiter, "_storage_dead", False):
        return
    moment = time.monotonic()
    if moment - _last_store_check[0] < STORE_CHECK_EVERY_S:
        return
    _last_store_check[0] = moment
    storage = getattr(limiter, "_storage", None)
    try:
        if storage is not None and storage.check():
            limiter._storage_dead = False  # noqa: SLF001
            log.info("rate limit: the store is back")
    except Exception:  # noqa: BLE001 - still unreachable: memory goes on counting
        log.debug("rate limit: the store is still unreachable", exc_info=True)


def practice_limit_of(config: Mapping[str, Any]) -> str:
    """``PRACTICE_RATE_LIMIT`` from ``config`` or the environment, else the default."""
    return (
        config.get("PRACTICE_RATE_LIMIT")
        or os.environ.get("PRACTICE_RATE_LIMIT")
        or DEFAULT_PRACTICE_LIMIT
    )


@limiter.request_filter
def _token_request() -> bool:
    """A page on an assignment's token (``/a/<token>``, its done page) has no rate limit: the
    limiter's per-request work is skipped for it."""
    return bool(request.view_args and "token" in request.view_args)
