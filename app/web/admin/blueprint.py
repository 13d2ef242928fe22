"""The researcher blueprint and what every admin page shares: never framed, never cached
by shared caches, larger upload bodies, the study lookup."""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    abort,
    current_app,
    request,
    url_for,
)

from app.config import PROJECT_ROOT
from app.csp import ADMIN_CSP
from app.errors import MarginaliaError
from app.models import Study
from app.researchers import access
from app.researchers.accounts import current_researcher

bp = Blueprint("admin", __name__, url_prefix="/admin")

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
