"""Rate limiting (flask-limiter); in-process memory unless RATELIMIT_STORAGE_URI is set.

The store comes from the app's config (``RATELIMIT_STORAGE_URI``, read from the environment
by :class:`app.config.Settings`): with several processes or machines a shared store (Redis)
makes the limits hold for the whole site, not per process
(tests/multinode/test_shared_state.py). A store that cannot be reached does not fail the
request: the process counts in its own memory meanwhile (``in_memory_fallback_enabled``).
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
# Set in the WSGI environ by the fast lane on an arrival it counted, then handed to the route
# (app/web/fast_arrival.py): the route does not count it again. A client cannot set it (only
# the server puts names without the HTTP_ prefix in the environ).
COUNTED = "marginalia.arrival_counted"
# Practice feedback per client address, whatever worker IDs it uses: an honest worker
# checks each segment of a few practice documents once; a client cycling throwaway IDs to
# collect answers is slowed (app/annotation/practice.py).
DEFAULT_PRACTICE_LIMIT = "120 per hour; 400 per day"
PRACTICE_ENDPOINT = "api.practice_feedback"


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


def counted_before() -> bool:
    """Whether the fast lane counted this arrival already (:data:`COUNTED`)."""
    return bool(request.environ.get(COUNTED))


def count_arrival(config: Mapping[str, Any], environ: Mapping[str, Any]) -> tuple[bool, str | None]:
    """Count one arrival from ``environ``'s client in the shared ``arrivals`` limit outside a
    Flask request (the fast lane), as flask-limiter's check of a route decorated with
    ``shared_limit(arrival_limit, scope=ARRIVALS)`` counts it: the limiter's own strategy
    and store (Redis when configured), its key prefix, the same key and scope, the limits in
    its order, stopping at the first exceeded.

    Answers (counted, refusal): counted False when this must be left to the route (the store
    unreachable now or lately, so the limiter's in-memory fallback and recovery apply;
    rate-limit headers or other limits configured, which the lane does not write or check);
    refusal, when one limit is exceeded, is its description (flask-limiter's 429 message).
    """
    if not (limiter.enabled and limiter.initialized):
        return True, None  # nothing is counted anywhere
    # flask-limiter has no public view of these; tests/test_fast_arrival.py pins the outcome.
    # A release that renames them leaves the counting to the route (never a 500).
    try:
        if (
            limiter._storage_dead  # noqa: SLF001
            or limiter._headers_enabled  # noqa: SLF001
            or not limiter._fail_on_first_breach  # noqa: SLF001
            or limiter.limit_manager._default_limits  # noqa: SLF001
            or limiter.limit_manager._application_limits  # noqa: SLF001
            or limiter._meta_limits  # noqa: SLF001
        ):
            return False, None
        prefix = limiter._key_prefix  # noqa: SLF001
    except AttributeError:
        log.warning("arrival limit: this flask-limiter has other internals, the route counts")
        return False, None
    key = [prefix, address_of(environ), ARRIVALS] if prefix else [address_of(environ), ARRIVALS]
    strategy = limiter.limiter
    try:
        for item in sorted(parse_many(arrival_limit_of(config))):
            if not strategy.hit(item, *key):
                return True, str(item)
    except Exception:  # noqa: BLE001 - the route counts (and falls back to memory)
        log.warning("arrival limit: the store failed, the route counts", exc_info=True)
        return False, None
    return True, None


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


def practice_limit() -> str:
    """``PRACTICE_RATE_LIMIT`` from the app's config or the environment, else the default."""
    return (
        current_app.config.get("PRACTICE_RATE_LIMIT")
        or os.environ.get("PRACTICE_RATE_LIMIT")
        or DEFAULT_PRACTICE_LIMIT
    )


@limiter.request_filter
def _token_request() -> bool:
    """A request on an assignment's token (add, remove, position, ...) has no rate limit: the
    limiter's per-request work is skipped for it (arrivals and practice checks keep theirs)."""
    return bool(request.view_args and "token" in request.view_args) and (
        request.endpoint != PRACTICE_ENDPOINT
    )
