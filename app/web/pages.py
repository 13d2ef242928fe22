"""Worker-facing HTML pages: arrive at a study, annotate, see the completion code."""

from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, request, url_for

from app import assignments as service
from app.assigning import next_assignment_document
from app.db import begin_write, get_session
from app.errors import MarginaliaError
from app.studies import get_study

bp = Blueprint("pages", __name__)


@bp.get("/")
def home():
    return render_template("home.html")


@bp.get("/s/<slug>")
def start(slug: str):
    """Give the arriving worker an assignment and send them to it."""
    session = begin_write(get_session())
    try:
        study = get_study(session, slug)
    except MarginaliaError:
        abort(404)
    worker_id = (request.args.get("worker_id") or "").strip()
    if not worker_id:
        return render_template("start.html", study=study, error=None)
    try:
        requested = request.args.get("document")
        document = (
            service.find_document(session, study, requested)
            if requested
            else next_assignment_document(session, study, worker_id)
        )
        assignment, _ = service.open_assignment(session, study, document, worker_id)
    except MarginaliaError as exc:
        session.rollback()
        return render_template("start.html", study=study, error=str(exc)), exc.status
    session.commit()
    return redirect(url_for("pages.annotate", token=assignment.token))


@bp.get("/a/<token>")
def annotate(token: str):
    session = get_session()
    try:
        assignment = service.get_assignment(session, token)
    except MarginaliaError:
        abort(404)
    return render_template("annotate.html", token=token, title=assignment.study.title)


@bp.get("/a/<token>/done")
def done(token: str):
    session = get_session()
    try:
        assignment = service.get_assignment(session, token)
    except MarginaliaError:
        abort(404)
    if assignment.status != "submitted":
        return redirect(url_for("pages.annotate", token=token))
    return render_template(
        "done.html", code=assignment.completion_code, title=assignment.study.title
    )
