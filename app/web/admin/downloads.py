"""Exports of a study's annotations streamed as downloads, every format of
:data:`app.formats.DOWNLOADS` (the dashboard links each); formats of several files (brat,
Label Studio, the Hugging Face dataset) as one zip of the files ``marginalia export --out``
writes."""

from __future__ import annotations

from flask import (
    Response,
    abort,
    request,
    stream_with_context,
)

from app.errors import InvalidInput, MarginaliaError
from app.formats import (
    ASSIGNMENT_FORMATS,
    DOWNLOADS,
    EXPORT_FORMATS,
    FILE_SET_FORMATS,
    check_writer,
    iter_export,
    iter_export_files,
)
from app.formats.bundles import zip_stream
from app.formats.rows import check_columns
from app.researchers import accounts as auth
from app.rules.work import EVERYONE, HUMANS, MIN_POSTERIOR, WORKERS, Work
from app.web.admin.blueprint import bp, session_and_study


def _flag(name: str) -> bool:
    return request.args.get(name, "") in ("1", "true", "yes", "on")


def work_from_args() -> Work:
    """The counted work a download asks for: ``?layer=workers|adjudicated|consensus|llm:NAME``,
    ``?include_practice=1``, ``?review_status=done|any`` (adjudicated layer),
    ``?include_in_progress=1`` and ``?include_llm=1`` (workers' layer), ``?min_posterior=P``
    (consensus layer); InvalidInput for anything else."""
    posterior = request.args.get("min_posterior")
    try:
        min_posterior = MIN_POSTERIOR if posterior is None else float(posterior)
    except ValueError:
        raise InvalidInput("min_posterior must be a number from 0 to 1") from None
    return Work(
        layer=request.args.get("layer", WORKERS),
        include_practice=_flag("include_practice"),
        review_status=request.args.get("review_status", "done"),
        in_progress=_flag("include_in_progress"),
        min_posterior=min_posterior,
        workers=EVERYONE if _flag("include_llm") else HUMANS,
    )


def file_name(slug: str, work: Work) -> str:
    """The download's name: the slug, then the layer and whose work when not the humans'
    (``demo.adjudicated``, ``demo.llm-gpt``, ``demo.with-llm``)."""
    name = slug if work.layer == WORKERS else f"{slug}.{work.layer}"
    if work.workers == EVERYONE:
        return f"{name}.with-llm"
    if work.workers != HUMANS:  # llm:NAME, a name of letters, digits, '_', '.', '-'
        return f"{name}.{work.workers.replace(':', '-')}"
    return name


@bp.get("/studies/<slug>/export.<fmt>")
@auth.login_required
def export(slug: str, fmt: str):
    if fmt not in EXPORT_FORMATS:
        abort(404)
    db, study = session_and_study(slug)
    mimetype, extension, _ = DOWNLOADS[fmt]
    try:
        work = work_from_args()
    except MarginaliaError as exc:
        return Response(f"{exc}\n", status=exc.status, mimetype="text/plain")
    if work != Work() and fmt in ASSIGNMENT_FORMATS:
        return Response(
            f"{fmt} has one row per assignment: no layer or filters\n", 400, mimetype="text/plain"
        )
    name = file_name(slug, work)
    if fmt in FILE_SET_FORMATS:
        # A true stream: the zip is written as the work is read, a chunk at a
        # time, after the answer has begun (server-side cursors opened in the view would not
        # outlive its session's end on the web front), so what would refuse is asked first.
        try:
            check_writer(fmt)
        except MarginaliaError as exc:  # e.g. pyarrow not installed for parquet
            return Response(f"{exc}\n", status=exc.status, mimetype="text/plain")
        zipped = zip_stream(iter_export_files(db, study, fmt, work, streamed=True))
        response = Response(stream_with_context(zipped), mimetype=mimetype)
        response.headers["Content-Disposition"] = f'attachment; filename="{name}.{extension}"'
        return response
    # ?columns=category_label,segment_text: the optional annotation columns (csv, jsonl)
    names = tuple(n for n in (request.args.get("columns") or "").split(",") if n)
    try:
        extra = check_columns(names) if fmt in ("csv", "jsonl") else ()
    except MarginaliaError as exc:
        return Response(f"{exc}\n", status=exc.status, mimetype="text/plain")
    # The request context (and with it the session) lives until the stream ends.
    chunks = iter_export(db, study, fmt, work, extra)
    response = Response(stream_with_context(chunks), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{name}.{extension}"'
    return response
