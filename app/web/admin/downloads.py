"""Exports of a study's annotations (CSV, JSONL, SNaC) streamed as downloads."""

from __future__ import annotations

from flask import (
    Response,
    abort,
    stream_with_context,
)

from app.db import get_session
from app.formats import EXPORT_FORMATS, iter_export
from app.researchers import accounts as auth
from app.web.admin.blueprint import EXPORT_TYPES, bp, study_or_404


@bp.get("/studies/<slug>/export.<fmt>")
@auth.login_required
def export(slug: str, fmt: str):
    if fmt not in EXPORT_FORMATS:
        abort(404)
    db = get_session()
    study = study_or_404(db, slug)
    mimetype, extension = EXPORT_TYPES[fmt]
    # The request context (and with it the session) lives until the stream ends.
    response = Response(stream_with_context(iter_export(db, study, fmt)), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{slug}.{extension}"'
    return response
