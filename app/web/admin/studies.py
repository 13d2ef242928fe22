"""The studies list and the new-study form (shipped or uploaded taxonomy)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import (
    flash,
    redirect,
    request,
    url_for,
)
from sqlalchemy import select
from werkzeug.utils import secure_filename

from app.annotation import timing
from app.crowd import platforms
from app.db import begin_write, get_session
from app.documents.studies import (
    SLUG_PATTERN,
    SUGGESTION_MODES,
    create_study,
    suggestions_warning,
)
from app.errors import InvalidInput, MarginaliaError
from app.models import Study
from app.researchers import access
from app.researchers import accounts as auth
from app.web.admin.blueprint import TAXONOMY_DIR, bp, render_page
from app.web.admin.progress import study_progress


@bp.get("/")
@auth.login_required
def studies():
    db = get_session()
    archived = request.args.get("archived") == "1"
    rows = [
        s
        for s in db.scalars(access.visible_studies(auth.current_researcher())).all()
        if (s.status == "archived") == archived
    ]
    progress = study_progress(db, rows)
    return render_page(
        "admin/studies.html",
        archived=archived,
        studies=rows,
        progress=progress,
    )


def shipped_taxonomies() -> list[str]:
    return sorted(p.name for p in TAXONOMY_DIR.glob("*.yaml"))


def _form_number(name: str, default: Any, parse: Any, wrong: Callable[[str], str]) -> Any:
    """The form's field ``name`` read by ``parse`` (``int``, ``float``), ``default`` when
    empty; text ``parse`` refuses is bad input worded by ``wrong(text)``."""
    raw = (request.form.get(name) or "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError:
        raise InvalidInput(wrong(raw)) from None


def _int_field(name: str, label: str, default: int) -> int:
    return _form_number(
        name, default, int, lambda raw: f"{label} must be a whole number, not {raw!r}"
    )


def _taxonomy_from_form() -> tuple[dict[str, Any] | None, Path | None]:
    """The uploaded YAML's snapshot, or the chosen shipped file (errors name file:line:field)."""
    from app.documents.taxonomy import parse_taxonomy

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


def _number(name: str, label: str) -> float | None:
    return _form_number(
        name, None, float, lambda raw: f"{label} must be a number, not {raw[:40]!r}"
    )


def _common_settings() -> dict[str, Any]:
    """The New study form's common settings (the rest are on the study's Settings page):
    the practice pass mark and attempts, the screen-out URL, the attention checks' flag."""
    changes: dict[str, Any] = {}
    f1 = _number("qualification_f1", "The pass mark")
    if f1 is not None:
        changes["qualification_f1"] = f1
        attempts = _int_field("qualification_attempts", "Practice attempts", 2)
        changes["qualification_attempts"] = attempts
    if (request.form.get("screen_out_url") or "").strip():
        changes["screen_out_url"] = request.form["screen_out_url"]
    rate = _number("min_catch_rate", "The attention checks' catch rate")
    if rate is not None:
        changes["min_catch_rate"] = rate
    return changes


@bp.route("/studies/new", methods=["GET", "POST"])
@auth.login_required
def new_study():
    error = None
    if request.method == "POST":
        db = begin_write(get_session())
        try:
            snapshot, path = _taxonomy_from_form()
            slug = (request.form.get("slug") or "").strip()
            if not SLUG_PATTERN.match(slug):  # before any query (NUL breaks Postgres)
                raise InvalidInput(
                    f"study slug {slug[:100]!r} must be lower-case letters, digits and dashes"
                )
            if db.scalar(select(Study.id).where(Study.slug == slug)) is not None:
                raise InvalidInput(f"a study {slug!r} already exists; choose another slug")
            study, _ = create_study(
                db,
                slug,
                path,
                taxonomy=snapshot,
                annotators_per_doc=_int_field("annotators_per_doc", "Annotators per document", 3),
                suggestions=request.form.get("suggestions") or "hidden",
                title=(request.form.get("title") or "").strip() or None,
            )
            platforms.configure_study(
                study,
                platform=request.form.get("platform") or "generic",
                completion_url=request.form.get("completion_url") or None,
                **_common_settings(),
            )
            study.owner_id = auth.current_researcher().id
            # a new study refuses a submit before every segment was opened
            timing.apply_settings(
                study,
                min_seconds=_number("min_seconds_per_segment", "The speeder threshold"),
                require_seen=not request.form.get("allow_unseen_submit"),
            )
            db.commit()
        except MarginaliaError as exc:
            db.rollback()
            error = str(exc)
        else:
            flash(f"Study {study.slug} created. Upload its documents next.", "ok")
            warning = suggestions_warning(study.taxonomy, study.suggestions)
            if warning:
                flash(f"Warning: {warning}.", "warn")
            return redirect(url_for("admin.dashboard", slug=study.slug))
    return render_page(
        "admin/new_study.html",
        error=error,
        taxonomies=shipped_taxonomies(),
        modes=SUGGESTION_MODES,
        platforms=platforms.PLATFORMS,
        form=request.form,
    ), 400 if error else 200
