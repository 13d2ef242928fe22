"""Researcher pages: login, the study list, study dashboards and export downloads.

Every page here needs a researcher login; none may be framed by another site.
"""

from __future__ import annotations

from flask import (
    Blueprint,
    Response,
    abort,
    redirect,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from sqlalchemy import func, select

from app import auth
from app.db import get_session
from app.errors import MarginaliaError
from app.export import FORMATS, iter_export
from app.models import Assignment, Document, Study
from app.studies import get_study
from app.web.limits import limiter

bp = Blueprint("admin", __name__, url_prefix="/admin")

EXPORT_TYPES = {
    "csv": ("text/csv; charset=utf-8", "csv"),
    "jsonl": ("application/x-ndjson; charset=utf-8", "jsonl"),
    "snac": ("application/json; charset=utf-8", "json"),
}


def _safe_next(target: str | None) -> str:
    if target and target.startswith("/admin") and not target.startswith("//"):
        return target
    return url_for("admin.studies")


@bp.route("/login", methods=["GET", "POST"])
@limiter.limit("10 per minute; 50 per hour", methods=["POST"])
def login():
    error = None
    if request.method == "POST":
        db = get_session()
        researcher = auth.authenticate(
            db, request.form.get("email", ""), request.form.get("password", "")
        )
        if researcher is not None:
            db.commit()
            auth.log_in(researcher)
            return redirect(_safe_next(request.args.get("next")))
        error = "Wrong e-mail or password."
    return render_template("admin/login.html", error=error), 401 if error else 200


@bp.post("/logout")
def logout():
    auth.log_out()
    return redirect(url_for("admin.login"))


def study_progress(db, study_ids: list[int]) -> dict[int, dict[str, int]]:
    """Documents and assignments (active, submitted) per study."""
    progress = {sid: {"documents": 0, "active": 0, "submitted": 0} for sid in study_ids}
    for sid, count in db.execute(
        select(Document.study_id, func.count()).group_by(Document.study_id)
    ):
        if sid in progress:
            progress[sid]["documents"] = count
    for sid, status, count in db.execute(
        select(Assignment.study_id, Assignment.status, func.count()).group_by(
            Assignment.study_id, Assignment.status
        )
    ):
        if sid in progress and status in ("active", "submitted"):
            progress[sid][status] = count
    return progress


@bp.get("/")
@auth.login_required
def studies():
    db = get_session()
    rows = db.scalars(select(Study).order_by(Study.created_at.desc())).all()
    progress = study_progress(db, [s.id for s in rows])
    return render_template(
        "admin/studies.html", studies=rows, progress=progress,
        researcher=auth.current_researcher(),
    )


@bp.get("/studies/<slug>/export.<fmt>")
@auth.login_required
def export(slug: str, fmt: str):
    if fmt not in FORMATS:
        abort(404)
    db = get_session()
    try:
        study = get_study(db, slug)
    except MarginaliaError:
        abort(404)
    mimetype, extension = EXPORT_TYPES[fmt]
    # The request context (and with it the session) lives until the stream ends.
    response = Response(stream_with_context(iter_export(db, study, fmt)), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{slug}.{extension}"'
    return response
