"""The common arrival answered in the fast lane, before Flask (issue 31).

``POST /api/assignments`` with no ``Authorization`` header and a JSON object naming its
``study`` and ``document`` is the arrival :mod:`app.annotation.named_arrival` serves in a few
statements; Flask's request machinery, session and flask-limiter's per-request work cost more
app CPU than those. The lane (:class:`app.web.fast_lane.FastLane`) hands such a request here:

1. the arrival limit is counted as the route's ``shared_limit`` counts it
   (:func:`app.web.limits.count_arrival`: flask-limiter's own strategy and store, so a Redis
   store shared by several nodes keeps counting every node's arrivals); an exceeded limit is
   answered 429 with the route's body;
2. :func:`app.annotation.named_arrival.open_named` runs in one transaction on a session of
   the app's own session factory, as the route runs it, and the answer is the route's
   :func:`app.web.api.opened_body`. Its segment count is read before the commit (the route
   reads it after): a failure then rolls back with nothing written and the route answers;
   after the commit nothing is left to fail.

Everything else goes to the Flask route unchanged, body included: a body the route would
refuse, a declined arrival (the route then runs the whole policy at once,
:data:`app.web.api.NAMED_DECLINED`), a database error, a limits store that failed. An arrival
counted here carries :data:`app.web.limits.COUNTED`, so the route does not count it twice.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask

from app.annotation.named_arrival import open_named
from app.db import begin_write
from app.models import Study
from app.web.api import opened_body

log = logging.getLogger(__name__)

PATH = "/api/assignments"


def takes(environ: dict[str, Any], body: Any) -> bool:
    """Whether the request is the common arrival this lane tries (else the route answers)."""
    return (
        "HTTP_AUTHORIZATION" not in environ
        and isinstance(body, dict)
        and isinstance(body.get("study"), str)
        and body.get("document") is not None
    )


def open_arrival(app: Flask, body: dict[str, Any]) -> tuple[dict[str, Any], Study | None] | None:
    """The new assignment's answer (201) and the study whose stale holds are due for release
    once it is out (:attr:`app.annotation.named_arrival.Opened.release`), or None with
    nothing written: declined by :func:`open_named`, or any error (the route answers)."""
    session = app.extensions["db_sessionmaker"]()
    try:
        begin_write(session)
        opened = open_named(session, body["study"], body.get("worker_id"), body["document"])
        if opened is None:
            return None
        answer = opened_body(
            app, session.connection(), opened.token, opened.document_id,
            opened.document_created_at, 0,
        )  # fmt: skip
        session.commit()
        return answer, opened.release
    except Exception:  # noqa: BLE001 - rolled back below; the route answers (503, ...)
        log.warning("fast lane: handing the arrival to the route", exc_info=True)
        return None
    finally:
        session.close()  # rolls back whatever was not committed
