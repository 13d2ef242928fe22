"""Researcher pages: login, studies, the per-study dashboard, uploads, settings, exports.

Every page here needs a researcher login (anonymous visitors are sent to the login page,
JSON callers get 401); none may be framed by any site (CSP ``frame-ancestors 'none'``).
Forms carry flask-wtf CSRF tokens; logins are throttled.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    flash,
    jsonify,
    redirect,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from sqlalchemy import func, select
from werkzeug.utils import secure_filename

from app import auth, platforms
from app.config import PROJECT_ROOT
from app.db import begin_write, get_session
from app.errors import InvalidInput, MarginaliaError
from app.export import FORMATS, iter_export
from app.models import Annotation, Assignment, Document, Study
from app.studies import (
    SUGGESTION_MODES,
    analyse_entities,
    create_study,
    get_study,
    import_documents,
)
from app.web import charts
from app.web.limits import limiter

bp = Blueprint("admin", __name__, url_prefix="/admin")

EXPORT_TYPES = {
    "csv": ("text/csv; charset=utf-8", "csv"),
    "jsonl": ("application/x-ndjson; charset=utf-8", "jsonl"),
    "snac": ("application/json; charset=utf-8", "json"),
}
IMPORT_FORMATS = ("auto", "falte", "paragraphs", "snac", "jsonl")
TAXONOMY_DIR = PROJECT_ROOT / "taxonomies"
ADMIN_CSP = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
MAX_GRID_DOCUMENTS = 600


UPLOAD_ENDPOINTS = {"admin.new_study", "admin.upload_documents"}


@bp.url_value_preprocessor
def _upload_limit(endpoint: str | None, _values: dict[str, Any] | None) -> None:
    """Let researcher uploads be larger than API bodies.

    URL value preprocessors run before any before_request function, so the limit is in
    place before CSRFProtect parses the form.
    """
    if endpoint in UPLOAD_ENDPOINTS:
        request.max_content_length = current_app.config.get("MAX_UPLOAD_LENGTH")


@bp.after_request
def _never_framed(response):
    """Admin pages and downloads: never framed, never cached by shared caches."""
    response.headers["Content-Security-Policy"] = ADMIN_CSP
    response.headers["X-Frame-Options"] = "DENY"
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def _safe_next(target: str | None) -> str:
    if target and target.startswith("/admin") and not target.startswith("//"):
        return target
    return url_for("admin.studies")


def _study_or_404(db, slug: str) -> Study:
    try:
        return get_study(db, slug)
    except MarginaliaError:
        abort(404)


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


# --- progress --------------------------------------------------------------------------------


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


def live_progress(db, study: Study) -> dict[str, Any]:
    """Cheap counts for the dashboard's polling: assignments, documents, live annotations.

    ``fingerprint`` changes whenever anything a researcher sees on the dashboard changes.
    """
    docs = db.execute(
        select(Document.id, Document.external_id, Document.source, Document.is_gold)
        .where(Document.study_id == study.id)
        .order_by(Document.position, Document.id)
    ).all()
    per_doc: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    counts: dict[str, int] = defaultdict(int)
    for doc_id, status, n in db.execute(
        select(Assignment.document_id, Assignment.status, func.count())
        .where(Assignment.study_id == study.id)
        .group_by(Assignment.document_id, Assignment.status)
    ):
        per_doc[doc_id][status] += n
        counts[status] += n
    annotations = dict.fromkeys(("active", "submitted"), 0)
    for status, n in db.execute(
        select(Assignment.status, func.count())
        .join(Annotation, Annotation.assignment_id == Assignment.id)
        .where(Assignment.study_id == study.id, Annotation.removed_at.is_(None))
        .group_by(Assignment.status)
    ):
        if status in annotations:
            annotations[status] = n
    needed = study.annotators_per_doc
    documents = [
        {
            "document": ext,
            "source": source or "",
            "gold": bool(gold),
            "submitted": per_doc[doc_id]["submitted"],
            "active": per_doc[doc_id]["active"],
            "abandoned": per_doc[doc_id]["abandoned"],
            "needed": needed,
        }
        for doc_id, ext, source, gold in docs
    ]
    slots = needed * len(documents)
    submitted_slots = sum(min(d["submitted"], needed) for d in documents)
    assignments = {
        "total": sum(counts.values()),
        "active": counts["active"],
        "submitted": counts["submitted"],
        "abandoned": counts["abandoned"],
    }
    # What the server-rendered sections show (tables, charts): in-progress annotations
    # only move a counter, which the JSON updates without re-reading the page.
    fingerprint = "-".join(
        str(v) for v in (len(documents), *assignments.values(), annotations["submitted"])
    )
    return {
        "study": study.slug,
        "documents": len(documents),
        "complete_documents": sum(1 for d in documents if d["submitted"] >= needed),
        "slots": slots,
        "slots_submitted": submitted_slots,
        "percent": round(100 * submitted_slots / slots, 1) if slots else 0.0,
        "assignments": assignments,
        "annotations": {
            "in_progress": annotations["active"],
            "submitted": annotations["submitted"],
        },
        "per_document": documents,
        "fingerprint": fingerprint,
        "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# --- pages -------------------------------------------------------------------------------------


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


def shipped_taxonomies() -> list[str]:
    return sorted(p.name for p in TAXONOMY_DIR.glob("*.yaml"))


def _int_field(name: str, label: str, default: int) -> int:
    raw = (request.form.get(name) or "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput(f"{label} must be a whole number, not {raw!r}") from None


def _taxonomy_from_form() -> tuple[dict[str, Any] | None, Path | None]:
    """The uploaded YAML's snapshot, or the chosen shipped file (errors name file:line:field)."""
    from app.taxonomy import parse_taxonomy

    upload = request.files.get("taxonomy_file")
    if upload is not None and upload.filename:
        name = secure_filename(upload.filename) or "taxonomy.yaml"
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"{name}:1: (file): is not UTF-8 text") from None
        return parse_taxonomy(text, name), None
    choice = request.form.get("taxonomy") or ""
    if choice not in shipped_taxonomies():
        raise InvalidInput("choose one of the shipped taxonomies or upload a YAML file")
    return None, TAXONOMY_DIR / choice


@bp.route("/studies/new", methods=["GET", "POST"])
@auth.login_required
def new_study():
    error = None
    if request.method == "POST":
        db = begin_write(get_session())
        try:
            snapshot, path = _taxonomy_from_form()
            slug = (request.form.get("slug") or "").strip()
            if db.scalar(select(Study.id).where(Study.slug == slug)) is not None:
                raise InvalidInput(f"a study {slug!r} already exists; choose another slug")
            study, _ = create_study(
                db, slug, path, taxonomy=snapshot,
                annotators_per_doc=_int_field("annotators_per_doc", "Annotators per document", 3),
                suggestions=request.form.get("suggestions") or "hidden",
                title=(request.form.get("title") or "").strip() or None,
            )
            platforms.configure_study(
                study,
                platform=request.form.get("platform") or "generic",
                completion_url=request.form.get("completion_url") or None,
            )
            db.commit()
        except MarginaliaError as exc:
            db.rollback()
            error = str(exc)
        else:
            flash(f"Study {study.slug} created. Upload its documents next.", "ok")
            return redirect(url_for("admin.dashboard", slug=study.slug))
    return render_template(
        "admin/new_study.html", error=error, taxonomies=shipped_taxonomies(),
        modes=SUGGESTION_MODES, platforms=platforms.PLATFORMS, form=request.form,
        researcher=auth.current_researcher(),
    ), 400 if error else 200


def _segments_per_source(report: dict[str, Any]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for row in report["progress"]["per_document"]:
        totals[row["source"]] += row["segments"] * row["submitted"]
    return totals


def condition_summary(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Assisted vs unassisted: workers, documents, annotations per segment, suggestion recall."""
    rows: dict[str, dict[str, Any]] = {}
    for worker in workers:
        for condition in worker["conditions"]:
            row = rows.setdefault(condition, {
                "condition": condition, "workers": 0, "documents": 0, "annotations": 0,
                "segments": 0, "caught": 0, "suggestions": 0,
            })
            row["workers"] += 1
            row["documents"] += worker["documents_done"]
            row["annotations"] += worker["annotations"]
            row["segments"] += worker["segments"]
            row["caught"] += worker["suggestion_recall"]["caught"]
            row["suggestions"] += worker["suggestion_recall"]["total"]
    for row in rows.values():
        row["per_segment"] = row["annotations"] / row["segments"] if row["segments"] else None
        row["recall"] = row["caught"] / row["suggestions"] if row["suggestions"] else None
    return [rows[c] for c in sorted(rows)]


def worker_links(study: Study) -> list[tuple[str, str]]:
    base = url_for("pages.start", slug=study.slug, _external=True)
    if study.platform == "prolific":
        return [("Prolific study URL", base + "?PROLIFIC_PID={{%PROLIFIC_PID%}}"
                 "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")]
    if study.platform == "mturk":
        return [("ExternalQuestion URL (marginalia mturk create-hits)", base)]
    return [("Worker link", base + "?worker_id=WORKER-ID"), ("Ask for an ID", base)]


def _dashboard(study: Study, *, upload_error: str | None = None, settings_error: str | None = None,
               status: int = 200):
    from app.reporting import study_report

    db = get_session()
    report = study_report(db, study)
    live = live_progress(db, study)
    categories = study.taxonomy.get("categories", [])
    chart_svgs = {
        "categories": charts.category_bars(report["categories"]["overall"], categories),
        "sources": charts.source_distribution(
            report["categories"]["per_source"], _segments_per_source(report), categories
        ),
        "recall": charts.worker_recall(report["workers"]),
        "has_recall": charts.has_recall(report["workers"]),
        "legend": charts.legend(categories),
    }
    labels = {c["id"]: c["label"] for c in categories}
    body = render_template(
        "admin/dashboard.html",
        study=study, report=report, live=live, charts=chart_svgs, labels=labels,
        settings=platforms.describe(study), links=worker_links(study),
        conditions=condition_summary(report["workers"]),
        grid=live["per_document"][:MAX_GRID_DOCUMENTS],
        formats=IMPORT_FORMATS, upload_error=upload_error, settings_error=settings_error,
        researcher=auth.current_researcher(), export_types=EXPORT_TYPES,
    )
    return body, status


@bp.get("/studies/<slug>")
@auth.login_required
def dashboard(slug: str):
    return _dashboard(_study_or_404(get_session(), slug))


@bp.get("/studies/<slug>/progress.json")
@auth.login_required
def progress_json(slug: str):
    db = get_session()
    return jsonify(live_progress(db, _study_or_404(db, slug)))


@bp.get("/studies/<slug>/report.json")
@auth.login_required
def report_json(slug: str):
    from app.reporting import study_report

    db = get_session()
    return jsonify(study_report(db, _study_or_404(db, slug)))


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
    from app.importers import parse_documents

    db = get_session()
    study = _study_or_404(db, slug)
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
            raise InvalidInput(f"sentences per segment must be a whole number, not {raw!r}") from None
        if per_segment is not None and per_segment < 1:
            raise InvalidInput("sentences per segment must be at least 1")
        gold = request.form.get("gold") == "1"
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"{name}: is not UTF-8 text") from None
        documents = parse_documents(
            name, fmt, sentences_per_segment=per_segment, gold=gold, text=text
        )
        # spaCy runs before the write transaction starts: workers' saves are never held up.
        entities = analyse_entities(study, documents, _load_nlp(request.form.get("ner") == "1"))
        db.rollback()
        db = begin_write(db)
        study = _study_or_404(db, slug)
        result = import_documents(db, study, documents, gold=gold, entities=entities)
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        return _dashboard(study, upload_error=str(exc), status=exc.status)
    parts = [f"Imported {result.documents} documents ({result.segments} segments)"]
    if gold:
        parts.append(f"{result.gold_errors} gold errors")
    if result.entities:
        parts.append(f"{result.entities} entities")
    flash(", ".join(parts) + ".", "ok")
    return redirect(url_for("admin.dashboard", slug=slug))


@bp.post("/studies/<slug>/settings")
@auth.login_required
def update_settings(slug: str):
    db = begin_write(get_session())
    study = _study_or_404(db, slug)
    form = request.form
    try:
        minutes_raw = (form.get("abandon_after_minutes") or "").strip()
        f1_raw = (form.get("qualification_f1") or "").strip()
        attempts_raw = (form.get("qualification_attempts") or "").strip()
        try:
            minutes = float(minutes_raw) if minutes_raw else platforms.UNSET
            f1 = float(f1_raw) if f1_raw else None
            attempts = int(attempts_raw) if attempts_raw else platforms.UNSET
        except ValueError:
            raise InvalidInput("timeout, F1 and attempts must be numbers") from None
        platforms.configure_study(
            study,
            platform=form.get("platform") or study.platform,
            completion_url=form.get("completion_url") or None,
            abandon_after_minutes=minutes,
            randomise_conditions=form.get("randomise_conditions") == "1",
            qualification_f1=f1,
            qualification_attempts=attempts,
        )
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        return _dashboard(study, settings_error=str(exc), status=exc.status)
    flash("Settings saved.", "ok")
    return redirect(url_for("admin.dashboard", slug=slug) + "#settings")


@bp.get("/studies/<slug>/export.<fmt>")
@auth.login_required
def export(slug: str, fmt: str):
    if fmt not in FORMATS:
        abort(404)
    db = get_session()
    study = _study_or_404(db, slug)
    mimetype, extension = EXPORT_TYPES[fmt]
    # The request context (and with it the session) lives until the stream ends.
    response = Response(stream_with_context(iter_export(db, study, fmt)), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{slug}.{extension}"'
    return response
