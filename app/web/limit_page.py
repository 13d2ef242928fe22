"""The worker page of an arrival over the arrival limit (``/s/<slug>`` and its consent post).

flask-limiter answers an exceeded limit with werkzeug's bare "Too Many Requests" page, in
English and unstyled; a worker who shares a network with many others (a university, an
office) can meet it on a real study. This page says the same in the worker's language, on
the study's worker-page frame rules (MTurk's origins may frame an MTurk study's page, nobody
else's), with the time the limit lets the worker in again, a ``Retry-After`` header and a
link back to the same arrival. The JSON API keeps its JSON 429 (``app/web/__init__.py``).
"""

from __future__ import annotations

import datetime
import math

from flask import render_template, request, url_for
from flask_babel import format_timedelta
from flask_limiter import RateLimitExceeded

from app.crowd import platforms
from app.db import get_session
from app.documents.studies import get_study
from app.errors import MarginaliaError
from app.models import Study
from app.web.i18n import use_study
from app.web.journey import worker_page
from app.web.limits import seconds_until_reset

UNITS = ((3600, "hour"), (60, "minute"), (1, "second"))


def waiting_time(seconds: int) -> str:
    """``seconds`` as the page says it ("in 2 minutes", "in 2 Minuten"), rounded *up* to its
    largest whole unit, so a worker who waits as long as it says is let in."""
    for size, unit in UNITS:
        if seconds >= size or size == 1:
            whole = math.ceil(seconds / size) * size
            return format_timedelta(
                datetime.timedelta(seconds=whole),
                granularity=unit,
                threshold=1,  # 59 seconds are 59 seconds, not "1 minute"
                add_direction=True,
            )
    raise AssertionError("unreachable")  # pragma: no cover


def _study(slug: str | None) -> Study | None:
    """The study the refused arrival was for (its language and framing), if it exists."""
    if not slug:
        return None
    try:
        return get_study(get_session(), slug)
    except MarginaliaError:
        return None


def _try_again_url(slug: str | None) -> str:
    """The same arrival again: the GET as it came; after a consent post, the arrival page
    with the post's own arrival parameters (the consent form is shown again)."""
    if request.method == "GET":
        return request.script_root + request.full_path.rstrip("?")
    try:
        arrival = platforms.read_arrival(request.form)
    except MarginaliaError:
        arrival = None
    params = arrival.start_params() if arrival is not None and not arrival.preview else {}
    return url_for("pages.start", slug=slug, **params) if slug else "/"


def too_many_arrivals(exc: RateLimitExceeded):
    """The blueprint's answer to an exceeded arrival limit: the page, 429, ``Retry-After``."""
    slug = (request.view_args or {}).get("slug")
    study = _study(slug)
    if study is not None:
        use_study(study)
    wait = seconds_until_reset(exc)
    body = render_template(
        "too_many.html",
        study=study,
        wait=waiting_time(wait),
        again=_try_again_url(slug),
    )
    response = worker_page(body, 429, study)
    response.headers["Retry-After"] = str(wait)
    return response
