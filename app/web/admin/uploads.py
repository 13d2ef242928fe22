"""Document uploads into a study (parsed, checked and stored; entity cues optional)."""

from __future__ import annotations

from typing import Any

from flask import (
    current_app,
    flash,
    redirect,
    request,
    url_for,
)
from werkzeug.utils import secure_filename

from app.db import begin_write, get_session
from app.documents.studies import (
    analyse_entities,
    import_documents,
)
from app.errors import InvalidInput, MarginaliaError
from app.formats import IMPORT_FORMATS
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, study_or_404
from app.web.admin.dashboard import render_dashboard


def _load_nlp(enabled: bool) -> Any:
    if not enabled:
        return None
    cache = current_app.extensions.setdefault("marginalia_nlp", {})
    if "pipeline" not in cache:
        from app.entities import load_pipeline

        cache["pipeline"] = load_pipeline(current_app.config.get("SPACY_MODEL"))
    return cache["pipeline"]


@bp.post("/studies/<slug>/documents")
@auth.login_required
def upload_documents(slug: str):
    """Import an uploaded document file: the formats and messages of ``marginalia import``."""
    from app.formats import parse_documents

    db = get_session()
    study = study_or_404(db, slug)
    upload = request.files.get("file")
    try:
        if upload is None or not upload.filename:
            raise InvalidInput("choose a document file to upload")
        name = secure_filename(upload.filename) or "documents.json"
        fmt = request.form.get("format") or "auto"
        if fmt not in IMPORT_FORMATS:
            raise InvalidInput(f"unknown format {fmt!r} (use {', '.join(IMPORT_FORMATS)})")
        raw = (request.form.get("sentences_per_segment") or "").strip()
        try:
            per_segment = int(raw) if raw else None
        except ValueError:
            raise InvalidInput(
                f"sentences per segment must be a whole number, not {raw!r}"
            ) from None
        if per_segment is not None and per_segment < 1:
            raise InvalidInput("sentences per segment must be at least 1")
        gold = request.form.get("gold") == "1"
        raw_bytes = upload.read()
        if fmt == "brat" or name.endswith(".zip"):
            documents = parse_documents(
                name, fmt, sentences_per_segment=per_segment, gold=gold, archive=raw_bytes
            )
        else:
            try:
                text = raw_bytes.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInput(f"{name}: is not UTF-8 text") from None
            documents = parse_documents(
                name, fmt, sentences_per_segment=per_segment, gold=gold, text=text
            )
        # spaCy runs before the write transaction starts: workers' saves are never held up.
        entities = analyse_entities(study, documents, _load_nlp(request.form.get("ner") == "1"))
        db.rollback()
        db = begin_write(db)
        study = study_or_404(db, slug)
        result = import_documents(db, study, documents, gold=gold, entities=entities)
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        return render_dashboard(study, upload_error=str(exc), status=exc.status)
    parts = [f"Imported {result.documents} documents ({result.segments} segments)"]
    kept = sum(len(d.work) for d in documents)
    if kept:
        parts.append(f"{kept} annotations kept as imported workers' submitted work")
    if gold:
        parts.append(f"{result.gold_errors} gold errors")
    if result.entities:
        parts.append(f"{result.entities} entities")
    flash(", ".join(parts) + ".", "ok")
    return redirect(url_for("admin.dashboard", slug=slug))
