"""``/healthz``: the web process can reach its database; the detector queue's state."""

from __future__ import annotations

from flask import Blueprint, jsonify
from sqlalchemy import text

from app.db import get_session
from app.detection import jobs

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    session = get_session()
    try:
        session.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - report, don't crash, when the DB is away
        return jsonify(ok=False, database=str(exc).splitlines()[0]), 503
    return jsonify(ok=True, database="ok", detector_queue=jobs.health(session))
