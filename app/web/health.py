"""``/healthz``: the web process can reach its database; the detector queue's state.

Anonymous callers (load balancers, the public) learn only ``ok``; the database's error and
the detector queue, whose errors name hosts and paths, are shown to logged-in researchers.
"""

from __future__ import annotations

import logging

from flask import Blueprint, jsonify
from sqlalchemy import text

from app.db import get_session
from app.detection import jobs
from app.researchers import accounts

bp = Blueprint("health", __name__)
log = logging.getLogger(__name__)


@bp.get("/healthz")
def healthz():
    session = get_session()
    try:
        session.execute(text("SELECT 1"))
    except Exception:  # noqa: BLE001 - report, don't crash, when the DB is away
        log.warning("healthz: the database is unreachable", exc_info=True)
        session.rollback()
        return jsonify(ok=False), 503
    if accounts.current_researcher() is None:
        return jsonify(ok=True)
    return jsonify(ok=True, database="ok", detector_queue=jobs.health(session))
