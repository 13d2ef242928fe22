"""The researcher blueprint and what every admin page shares: never framed, never cached
by shared caches, larger upload bodies, the study lookup."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import (
    Blueprint,
    abort,
    current_app,
    render_template,
    request,
    url_for,
)
from sqlalchemy.orm import Session

from app.config import PROJECT_ROOT
from app.csp import ADMIN_CSP
from app.db import begin_write, get_session
from app.errors import MarginaliaError
from app.models import Study
from app.researchers import access
from app.researchers.accounts import current_researcher

bp = Blueprint("admin", __name__, url_prefix="/admin")
T = TypeVar("T")

TAXONOMY_DIR = PROJECT_ROOT / "taxonomies"
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


def safe_next(target: str | None) -> str:
    if target and target.startswith("/admin") and not target.startswith("//"):
        return target
    return url_for("admin.studies")


def study_or_404(db, slug: str) -> Study:
    """The study if the logged-in researcher may see it; 404 otherwise, as if it were missing."""
    researcher = current_researcher()
    if researcher is None:
        abort(404)
    try:
        return access.study_for(db, researcher, slug)
    except MarginaliaError:
        abort(404)


def session_and_study(slug: str) -> tuple[Session, Study]:
    """This request's session and the study ``slug`` names (404 as :func:`study_or_404`):
    how every page of one study begins."""
    db = get_session()
    return db, study_or_404(db, slug)


def render_page(template: str, **context: Any) -> str:
    """``render_template`` with the logged-in researcher, whom the admin layout's header
    names on every page."""
    return render_template(template, researcher=current_researcher(), **context)


def change_study(
    slug: str,
    apply: Callable[[Session, Study], T],
    refused: Callable[[Study, MarginaliaError], Any],
    done: Callable[[Session, Study, T], Any],
) -> Any:
    """``apply(db, study)`` on the study ``slug`` names (404 as :func:`study_or_404`) in one
    write transaction: committed, then ``done(db, study, result)`` answers; our error rolls it
    back and ``refused(study, error)`` answers (a page with the message, never a 500). Every
    form that changes a study goes through here, so none forgets the rollback."""
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    try:
        result = apply(db, study)
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        return refused(study, exc)
    return done(db, study, result)
