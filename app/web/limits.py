"""Rate limiting (flask-limiter); in-process memory unless RATELIMIT_STORAGE_URI is set.

The store comes from the app's config (``RATELIMIT_STORAGE_URI``, read from the environment
by :class:`app.config.Settings`): with several processes or machines a shared store (Redis)
makes the limits hold for the whole site, not per process (issue 31,
tests/multinode/test_shared_state.py). A store that cannot be reached does not fail the
request: the process counts in its own memory meanwhile (``in_memory_fallback_enabled``).
"""

from __future__ import annotations

import os

from flask import current_app, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

# No storage_uri here: one given to the constructor would override the app's config.
limiter = Limiter(
    key_func=get_remote_address,
    default_limits=[],
    in_memory_fallback_enabled=True,
)

# Arrivals (GET /s/<slug>, POST /api/assignments) per client address: a worker arrives once
# or twice; a page of <img> tags or a script arriving with made-up IDs is slowed down.
DEFAULT_ARRIVAL_LIMIT = "30 per minute; 300 per hour"
# Practice feedback per client address, whatever worker IDs it uses: an honest worker
# checks each segment of a few practice documents once; a client cycling throwaway IDs to
# collect answers is slowed (issue 26 row 3, app/annotation/practice.py).
DEFAULT_PRACTICE_LIMIT = "120 per hour; 400 per day"
PRACTICE_ENDPOINT = "api.practice_feedback"


def arrival_limit() -> str:
    """``ARRIVAL_RATE_LIMIT`` from the app's config or the environment, else the default."""
    return (
        current_app.config.get("ARRIVAL_RATE_LIMIT")
        or os.environ.get("ARRIVAL_RATE_LIMIT")
        or DEFAULT_ARRIVAL_LIMIT
    )


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
