"""Document uploads into a study: checked cheaply, stored as an import job, imported by the worker.

Parsing, spaCy and storing can take minutes for a large file; they run in ``marginalia
worker`` (:mod:`app.detection.importing`), never inside this request. The dashboard shows
the job's progress and its outcome.
"""

from __future__ import annotations

import io
import zipfile

from flask import flash, redirect, request, url_for
from werkzeug.utils import secure_filename

from app.db import begin_write
from app.detection import import_jobs
from app.errors import InvalidInput, MarginaliaError
from app.formats import IMPORT_FORMATS, checked_source
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, session_and_study
from app.web.admin.dashboard import render_dashboard


def _sentences_per_segment(raw: str) -> int | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"sentences per segment must be a whole number, not {raw!r}") from None
    if value < 1:
        raise InvalidInput("sentences per segment must be at least 1")
    return value


@bp.post("/studies/<slug>/documents")
@auth.login_required
def upload_documents(slug: str):
    """Queue an uploaded document file for import (the formats and messages of ``marginalia
    import``, shown on the dashboard when the worker has read the file)."""
    db, study = session_and_study(slug)
    upload = request.files.get("file")  # read before the write lock is taken
    try:
        if upload is None or not upload.filename:
            raise InvalidInput("choose a document file to upload")
        name = secure_filename(upload.filename) or "documents.json"
        fmt = request.form.get("format") or "auto"
        if fmt not in IMPORT_FORMATS:
            raise InvalidInput(f"unknown format {fmt!r} (use {', '.join(IMPORT_FORMATS)})")
        per_segment = _sentences_per_segment(request.form.get("sentences_per_segment") or "")
        kinds = {
            kind
            for field, kind in (
                ("gold", "gold"),
                ("practice", "gold"),  # practice documents are gold that teaches
                ("checks", "checks"),
                ("as_work", "as_work"),
            )
            if request.form.get(field) == "1"
        }
        if len(kinds) > 1:
            raise InvalidInput(
                "a file's annotations are gold (or practice) documents, attention checks or "
                "imported work: tick one, not both"
            )
        source = request.form.get("source") or ""
        payload = upload.read()
        if not payload.strip():
            raise InvalidInput(f"{name}: the file is empty")
        if (fmt == "brat" or name.endswith(".zip")) and not zipfile.is_zipfile(io.BytesIO(payload)):
            raise InvalidInput(f"{name}: is neither a folder nor a zip file")
        db.rollback()
        begin_write(db)
        if import_jobs.pending(db, study.id) >= import_jobs.MAX_PENDING:
            raise InvalidInput(
                f"{import_jobs.MAX_PENDING} imports are already waiting for this study: "
                "upload again when one has finished"
            )
        researcher = auth.current_researcher()
        job = import_jobs.enqueue(
            db,
            study.id,
            filename=name,
            fmt=fmt,
            payload=payload,
            options={
                "sentences_per_segment": per_segment,
                "gold": request.form.get("gold") == "1",
                # attention checks (only when ticked: older jobs' options stay as they were)
                **({"checks": True} if request.form.get("checks") == "1" else {}),
                **({"as_work": True} if request.form.get("as_work") == "1" else {}),
                # practice documents: gold that teaches, never graded (app/annotation/practice.py)
                **({"practice": True} if request.form.get("practice") == "1" else {}),
                "ner": request.form.get("ner") == "1",
                **({"source": checked_source(source)} if source.strip() else {}),
            },
            created_by=researcher.email if researcher else None,
        )
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        return render_dashboard(study, upload_error=str(exc), status=exc.status)
    flash(f"{name} is queued for import (job {job.id}): its progress shows below.", "ok")
    return redirect(url_for("admin.dashboard", slug=slug) + "#imports")
