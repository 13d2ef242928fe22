"""Review and adjudication pages: the study's review list, a document's review page and the
JSON it reads and writes (decide a candidate, add / change an error, set the status),
auto-accept by votes, promote to gold, workers' scores against the adjudicated layer.

Every route looks the study up through :func:`study_or_404` (the access check); every POST
carries the CSRF token (forms: the field; the page's JSON calls: ``X-CSRFToken``). The
document is named by ``?document=`` (ids are untrusted text, any characters).
"""

from __future__ import annotations

from flask import flash, jsonify, redirect, render_template, request, url_for

from app.db import begin_write, get_session
from app.documents.studies import find_document
from app.errors import MarginaliaError
from app.quality import adjudication
from app.quality.review_state import adjudicated_scores, review_json, review_progress
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, study_or_404


def _who() -> str:
    researcher = auth.current_researcher()
    return researcher.email if researcher else "unknown"


def _document(db, study):
    return find_document(db, study, request.args.get("document", ""))


@bp.get("/studies/<slug>/review")
@auth.login_required
def review_list(slug: str):
    db = get_session()
    study = study_or_404(db, slug)
    rows = review_progress(db, study)
    return render_template(
        "admin/review_list.html",
        study=study,
        rows=rows,
        researcher=auth.current_researcher(),
        counts={s: sum(1 for r in rows if r["status"] == s) for s in adjudication.STATUSES},
    )


@bp.get("/studies/<slug>/review/document")
@auth.login_required
def review_page(slug: str):
    db = get_session()
    study = study_or_404(db, slug)
    document = _document(db, study)
    categories = study.taxonomy.get("categories", [])
    return render_template(
        "admin/review.html",
        study=study,
        document=document,
        categories=categories,
        researcher=auth.current_researcher(),
    )


@bp.get("/studies/<slug>/review/state.json")
@auth.login_required
def review_state(slug: str):
    db = get_session()
    study = study_or_404(db, slug)
    return jsonify(review_json(db, _document(db, study)))


def _write(slug: str, change):
    """Run ``change(db, document, body, who)`` in one write transaction; JSON answer."""
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    try:
        document = _document(db, study)
        change(db, document, request.get_json(silent=True), _who())
        db.commit()
    except MarginaliaError:
        db.rollback()
        raise
    return jsonify(review_json(db, document))


@bp.post("/studies/<slug>/review/candidates/<key>")
@auth.login_required
def decide_candidate(slug: str, key: str):
    return _write(slug, lambda db, doc, body, who: adjudication.decide(db, doc, key, body, who))


@bp.post("/studies/<slug>/review/errors")
@auth.login_required
def add_error(slug: str):
    return _write(slug, adjudication.add_error)


@bp.post("/studies/<slug>/review/errors/<int:row_id>")
@auth.login_required
def change_error(slug: str, row_id: int):
    return _write(
        slug, lambda db, doc, body, who: adjudication.change_error(db, doc, row_id, body, who)
    )


@bp.post("/studies/<slug>/review/status")
@auth.login_required
def set_status(slug: str):
    return _write(slug, adjudication.set_status)


@bp.post("/studies/<slug>/review/auto-accept")
@auth.login_required
def auto_accept(slug: str):
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    try:
        min_workers = int(request.form.get("min_workers", ""))
    except ValueError:
        min_workers = 0
    try:
        documents = list(study.documents)
        accepted = adjudication.auto_accept(db, documents, min_workers, _who())
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        flash(str(exc), "error")
        return redirect(url_for("admin.review_list", slug=slug))
    flash(f"Accepted {accepted} candidates marked by at least {min_workers} workers.", "ok")
    return redirect(url_for("admin.review_list", slug=slug))


@bp.post("/studies/<slug>/review/promote")
@auth.login_required
def promote(slug: str):
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    try:
        document = _document(db, study)
        count = adjudication.promote(db, document)
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        flash(str(exc), "error")
        return redirect(url_for("admin.review_list", slug=slug))
    flash(f"{document.external_id} is a gold document now, with {count} errors.", "ok")
    return redirect(url_for("admin.review_list", slug=slug))


@bp.get("/studies/<slug>/review/scores.json")
@auth.login_required
def review_scores(slug: str):
    db = get_session()
    return jsonify(adjudicated_scores(db, study_or_404(db, slug)))
