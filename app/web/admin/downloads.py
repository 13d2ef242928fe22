"""Exports of a study's annotations streamed as downloads; formats of several files (brat,
Label Studio, the Hugging Face dataset) as one zip."""

from __future__ import annotations

from flask import (
    Response,
    abort,
    request,
    stream_with_context,
)

from app.db import get_session
from app.errors import MarginaliaError
from app.formats import (
    ASSIGNMENT_FORMATS,
    EXPORT_FORMATS,
    FILE_SET_FORMATS,
    iter_export,
    iter_export_files,
)
from app.formats.bundles import zip_stream
from app.formats.rows import LAYERS, check_columns
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
    layer = request.args.get("layer", "workers")  # ?layer=adjudicated: the reviewed layer
    if layer not in LAYERS:
        return Response(f"unknown layer (use {' or '.join(LAYERS)})\n", 400, mimetype="text/plain")
    if layer != "workers" and fmt in ASSIGNMENT_FORMATS:
        return Response(f"{fmt} has one row per assignment: no layer\n", 400, mimetype="text/plain")
    name = slug if layer == "workers" else f"{slug}.{layer}"
    if fmt in FILE_SET_FORMATS:
        try:
            files = list(iter_export_files(db, study, fmt, layer))
        except MarginaliaError as exc:  # e.g. pyarrow not installed for parquet
            return Response(f"{exc}\n", status=exc.status, mimetype="text/plain")
        response = Response(zip_stream(files), mimetype=mimetype)
        response.headers["Content-Disposition"] = f'attachment; filename="{name}.{extension}"'
        return response
    # ?columns=category_label,segment_text: the optional annotation columns (csv, jsonl)
    names = tuple(n for n in (request.args.get("columns") or "").split(",") if n)
    try:
        extra = check_columns(names) if fmt in ("csv", "jsonl") else ()
    except MarginaliaError as exc:
        return Response(f"{exc}\n", status=exc.status, mimetype="text/plain")
    # The request context (and with it the session) lives until the stream ends.
    chunks = iter_export(db, study, fmt, layer, extra)
    response = Response(stream_with_context(chunks), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{name}.{extension}"'
    return response
