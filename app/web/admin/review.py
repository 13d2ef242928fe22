"""Review and adjudication pages: the study's review list, a document's review page and the
JSON it reads and writes (decide a candidate, add / change an error, set the status),
auto-accept by votes or by the consensus's posterior, promote to gold, workers' scores against the adjudicated layer.

Every route looks the study up through :func:`study_or_404` (the access check); every POST
carries the CSRF token (forms: the field; the page's JSON calls: ``X-CSRFToken``). The
document is named by ``?document=`` (ids are untrusted text, any characters).
"""

from __future__ import annotations

from typing import Any

from flask import flash, jsonify, redirect, request, url_for

from app.db import begin_write, get_session
from app.documents.numbers import MAX_ID, finite_number, whole_number
from app.documents.studies import MAX_ANNOTATORS, find_document
from app.errors import Conflict, InvalidInput, MarginaliaError
from app.models import Document
from app.quality import adjudication
from app.quality.review_state import adjudicated_scores, review_json, review_progress
from app.researchers import accounts as auth
from app.rules.work import Work, select_documents
from app.web.admin.blueprint import bp, change_study, render_page, session_and_study, study_or_404


def _who() -> str:
    researcher = auth.current_researcher()
    return researcher.email if researcher else "unknown"


def _document(db, study):
    return find_document(db, study, request.args.get("document", ""))


def _review_list(db, study, plan=None, min_workers: int = 2, status: int = 200, min_posterior=None):
    rows = review_progress(db, study)
    return render_page(
        "admin/review_list.html",
        study=study,
        rows=rows,
        counts={s: sum(1 for r in rows if r["status"] == s) for s in adjudication.STATUSES},
        plan=plan,
        min_workers=min_workers,
        practice=len(study.documents) - len(_counted_documents(db, study)),
        min_posterior=min_posterior,
    ), status


@bp.get("/studies/<slug>/review")
@auth.login_required
def review_list(slug: str):
    db = get_session()
    return _review_list(db, study_or_404(db, slug))


@bp.get("/studies/<slug>/review/document")
@auth.login_required
def review_page(slug: str):
    db, study = session_and_study(slug)
    document = _document(db, study)
    categories = study.taxonomy.get("categories", [])
    return render_page(
        "admin/review.html",
        study=study,
        document=document,
        categories=categories,
    )


@bp.get("/studies/<slug>/review/state.json")
@auth.login_required
def review_state(slug: str):
    db, study = session_and_study(slug)
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


@bp.post(f"/studies/<slug>/review/errors/<int(max={MAX_ID}):row_id>")  # a larger id: 404
@auth.login_required
def change_error(slug: str, row_id: int):
    return _write(
        slug, lambda db, doc, body, who: adjudication.change_error(db, doc, row_id, body, who)
    )


@bp.post("/studies/<slug>/review/status")
@auth.login_required
def set_status(slug: str):
    return _write(slug, adjudication.set_status)


def _counted_documents(db, study) -> list:
    """The study's documents that count (:mod:`app.rules.work`: practice left out)."""
    return list(db.scalars(select_documents(study, Work(), Document)))


def _min_workers(value) -> int:
    return whole_number(value, "the number of workers", 1, MAX_ANNOTATORS)


def _min_posterior(value) -> float | None:
    """The consensus's minimum posterior of an auto-accept by posterior (None: by votes)."""
    if value in (None, ""):
        return None
    return finite_number(value, "the minimum posterior", 0, 1)


@bp.post("/studies/<slug>/review/auto-accept")
@auth.login_required
def auto_accept(slug: str):
    """The study's auto-accept, in two steps: without ``confirm`` the review list shows what
    it would accept (candidates per document; practice documents left out) and asks; with
    ``confirm=yes`` and the ``expected`` count it writes, unless the count changed meanwhile."""
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    try:
        min_workers = _min_workers(request.form.get("min_workers"))
        min_posterior = _min_posterior(request.form.get("min_posterior"))
        documents = _counted_documents(db, study)
        plan = adjudication.auto_accept_plan(db, documents, min_workers, min_posterior)
        total = sum(n for _, n in plan)
        if request.form.get("confirm") != "yes":
            db.rollback()
            return _review_list(db, study, plan, min_workers, min_posterior=min_posterior)
        if str(total) != request.form.get("expected"):
            raise Conflict(
                f"the count changed meanwhile: {total} candidates now qualify; look again"
            )
        accepted = adjudication.auto_accept(
            db, [d for d, _ in plan], min_workers, _who(), min_posterior
        )
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        flash(str(exc), "error")
        return redirect(url_for("admin.review_list", slug=slug))
    rule = f"marked by at least {min_workers} workers"
    if min_posterior is not None:
        rule += f" that the consensus holds (MACE posterior at least {min_posterior:g})"
    flash(f"Accepted {accepted} candidates {rule}, in {len(plan)} documents (now in review).", "ok")
    return redirect(url_for("admin.review_list", slug=slug))


@bp.post("/studies/<slug>/review/auto-accept-document")
@auth.login_required
def auto_accept_document(slug: str):
    """One document's auto-accept from its review page: ``{"min_workers", "expected"}``
    (the count the page showed and the researcher confirmed), optionally ``"min_posterior"``
    (by the consensus too); 409 when it changed."""

    def change(db, document, body, who):
        if not isinstance(body, dict):
            raise InvalidInput("the body must be a JSON object")
        min_workers = _min_workers(body.get("min_workers"))
        min_posterior = _min_posterior(body.get("min_posterior"))
        plan = adjudication.auto_accept_plan(db, [document], min_workers, min_posterior)
        found = sum(n for _, n in plan)
        if body.get("expected") != found:
            raise Conflict(
                f"{found} candidates qualify now, not {body.get('expected')}: look again"
            )
        adjudication.auto_accept(db, [document], min_workers, who, min_posterior)

    return _write(slug, change)


@bp.post("/studies/<slug>/review/promote")
@auth.login_required
def promote(slug: str):
    def apply(db, study) -> tuple[str, int]:
        document = _document(db, study)
        return document.external_id, adjudication.promote(db, document)

    def refused(_study, exc: MarginaliaError) -> Any:
        flash(str(exc), "error")
        return redirect(url_for("admin.review_list", slug=slug))

    def promoted(_db, _study, done: tuple[str, int]) -> Any:
        flash(f"{done[0]} is a gold document now, with {done[1]} errors.", "ok")
        return redirect(url_for("admin.review_list", slug=slug))

    return change_study(slug, apply, refused, promoted)


@bp.get("/studies/<slug>/review/scores.json")
@auth.login_required
def review_scores(slug: str):
    db = get_session()
    return jsonify(adjudicated_scores(db, study_or_404(db, slug)))
