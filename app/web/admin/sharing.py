"""Sharing a study with other researchers (collaborators): only its owner or an admin."""

from __future__ import annotations

from flask import abort, flash, redirect, request, url_for

from app.db import begin_write, get_session
from app.errors import MarginaliaError
from app.researchers import access
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, study_or_404
from app.web.admin.dashboard import render_dashboard


def _change_sharing(slug: str, change, done: str):
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    if not access.can_share(auth.current_researcher(), study):
        abort(403)
    email = (request.form.get("email") or "").strip()
    try:
        researcher = change(db, study, email)
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        study = study_or_404(db, slug)
        return render_dashboard(study, sharing_error=str(exc), status=exc.status)
    flash(done.format(email=researcher.email, slug=slug), "ok")
    return redirect(url_for("admin.dashboard", slug=slug) + "#sharing")


@bp.post("/studies/<slug>/collaborators")
@auth.login_required
def share_study(slug: str):
    return _change_sharing(slug, access.share, "Study {slug} shared with {email}.")


@bp.post("/studies/<slug>/collaborators/remove")
@auth.login_required
def unshare_study(slug: str):
    return _change_sharing(slug, access.unshare, "{email} no longer sees study {slug}.")
