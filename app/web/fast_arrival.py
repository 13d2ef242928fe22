"""The common arrival answered in the fast lane, before Flask (issue 31).

``POST /api/assignments`` with no ``Authorization`` header and a JSON object naming its
``study`` and ``document`` is the arrival :mod:`app.annotation.named_arrival` serves in a few
statements; Flask's request machinery, session and flask-limiter's per-request work cost more
app CPU than those. The lane (:class:`app.web.fast_lane.FastLane`) hands such a request here:

1. the arrival limit is counted as the route's ``shared_limit`` counts it
   (:func:`app.web.limits.count_arrival`: flask-limiter's own strategy and store, so a Redis
   store shared by several nodes keeps counting every node's arrivals); an exceeded limit is
   answered 429 with the route's body;
2. :func:`app.annotation.named_arrival.open_named` runs: on Postgres on the hot path's
   driver in two round trips, the target's read, then the locks and the conditional insert
   that Postgres commits as one transaction as they run (a failure in it rolls all of it
   back: nothing written, the route answers; after it nothing is left to fail); elsewhere in
   one transaction on a session of the app's own factory, as the route runs it. The answer is
   the route's :func:`app.web.api.arrival_body`, with the segment count the target's read
   brought.

Everything else goes to the Flask route unchanged, body included: a body the route would
refuse, a declined arrival (the route then runs the whole policy at once,
:data:`app.web.api.NAMED_DECLINED`), a database error, a limits store that failed. An arrival
counted here carries :data:`app.web.limits.COUNTED`, so the route does not count it twice.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask

from app.annotation import hot_sql
from app.annotation.named_arrival import Opened, open_named
from app.db import begin_write
from app.models import Study
from app.web.api import arrival_body

log = logging.getLogger(__name__)

PATH = "/api/assignments"
Arrival = tuple[dict[str, Any], Study | None]  # the answer, the study whose holds to release


def takes(environ: dict[str, Any], body: Any) -> bool:
    """Whether the request is the common arrival this lane tries (else the route answers)."""
    return (
        "HTTP_AUTHORIZATION" not in environ
        and isinstance(body, dict)
        and isinstance(body.get("study"), str)
        and body.get("document") is not None
    )


def open_on_driver(driver: hot_sql.Driver, body: dict[str, Any]) -> Arrival | None:
    """On Postgres, through the hot path's driver (:class:`app.annotation.hot_driver.Driver`,
    the lane's ``_run``): two round trips, the second committed by the server as it runs. The
    new assignment's answer (201) and the study whose stale holds are due for release once it
    is out (:attr:`app.annotation.named_arrival.Opened.release`), or None, nothing written
    (declined by :func:`open_named`: the route answers)."""
    return _answer(open_named(driver, body["study"], body.get("worker_id"), body["document"]))


def open_in_session(app: Flask, body: dict[str, Any]) -> Arrival | None:
    """:func:`open_on_driver`'s answer elsewhere (SQLite): one transaction on a session of the
    app's own factory, as the route runs it; None, nothing written, when declined or on any
    error (the route answers)."""
    session = app.extensions["db_sessionmaker"]()
    try:
        begin_write(session)
        opened = open_named(session, body["study"], body.get("worker_id"), body["document"])
        if opened is None:
            return None  # nothing written (rolled back below)
        session.commit()
    except Exception:  # noqa: BLE001 - rolled back below; the route answers (503, ...)
        log.warning("fast lane: handing the arrival to the route", exc_info=True)
        return None
    finally:
        session.close()  # rolls back whatever was not committed
    return _answer(opened)


def _answer(opened: Opened | None) -> Arrival | None:
    if opened is None:
        return None
    return arrival_body(opened.token, opened.segments, 0), opened.release
