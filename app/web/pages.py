"""Worker-facing HTML pages: arrive at a study, annotate, see the completion code.

Arrivals carry the platform's parameters (see :mod:`app.crowd.platforms`); workers are then
identified by the assignment token in the URL only. Worker pages of MTurk studies may be
framed by the MTurk origins; every other page refuses framing.
"""

from __future__ import annotations

from flask import (
    Blueprint,
    abort,
    current_app,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)

from app.annotation import assignments as service
from app.annotation.assigning import assign, preview_document, qualification, qualification_state
from app.crowd import platforms
from app.csp import content_security_policy
from app.db import begin_write, get_session
from app.documents.studies import get_study
from app.errors import MarginaliaError
from app.models import Assignment, Study

bp = Blueprint("pages", __name__)


@bp.after_request
def _no_store(response):
    """Worker pages carry tokens (in the URL, the Location, the page): never cache them."""
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/")
def home():
    return render_template("home.html")


def _worker_page(body, status: int, study: Study | None, assignment: Assignment | None = None):
    """A response whose CSP lets the MTurk origins frame it when the work is MTurk's."""
    response = make_response(body, status)
    ancestors = platforms.frame_ancestors(study, assignment)
    response.headers["Content-Security-Policy"] = content_security_policy(ancestors)
    if ancestors == "'none'":
        response.headers["X-Frame-Options"] = "DENY"
    return response


def _mturk_origins() -> tuple[str, ...]:
    extra = current_app.config.get("MTURK_SUBMIT_ORIGINS") or ()
    return (*platforms.MTURK_ORIGINS, *extra)


def _continues(assignment: Assignment) -> bool:
    """A submitted qualification document sends its worker on to the next document."""
    return qualification(assignment.study) is not None and assignment.document.is_gold


@bp.get("/s/<slug>")
def start(slug: str):
    """Give the arriving worker an assignment and send them to it."""
    session = begin_write(get_session())
    try:
        study = get_study(session, slug)
    except MarginaliaError:
        abort(404)
    try:
        arrival = platforms.read_arrival(request.args, mturk_origins=_mturk_origins())
    except MarginaliaError as exc:
        session.rollback()
        return _worker_page(
            render_template("start.html", study=study, error=str(exc)), exc.status, study
        )
    if arrival is None:
        session.rollback()
        return _worker_page(render_template("start.html", study=study, error=None), 200, study)
    if arrival.preview:
        document = preview_document(session, study)
        body = render_template(
            "preview.html",
            study=study,
            title=study.title,
            segments=[s.text for s in document.segments] if document else [],
        )
        session.rollback()
        return _worker_page(body, 200, study)
    try:
        requested = request.args.get("document")
        visit = platforms.find_visit(session, study, arrival)
        if requested:
            document = service.find_document(session, study, requested)
            assignment, _ = service.open_assignment(
                session,
                study,
                document,
                arrival.worker_id,
                platform=arrival.platform,
                platform_data=arrival.platform_data,
            )
        elif visit is not None and (
            visit.status == "active" or (visit.status == "submitted" and not _continues(visit))
        ):
            assignment = visit
            if visit.status == "active":
                visit.last_seen_at = service.now()
        else:
            assignment, _ = assign(
                session,
                study,
                arrival.worker_id,
                platform=arrival.platform,
                platform_data=arrival.platform_data,
            )
    except MarginaliaError as exc:
        session.rollback()
        return _worker_page(
            render_template("start.html", study=study, error=str(exc)), exc.status, study
        )
    session.commit()
    if assignment.status == "submitted":
        return redirect(url_for("pages.done", token=assignment.token))
    return redirect(url_for("pages.annotate", token=assignment.token))


@bp.get("/a/<token>")
def annotate(token: str):
    session = get_session()
    try:
        assignment = service.get_assignment(session, token)
    except MarginaliaError:
        abort(404)
    body = render_template("annotate.html", token=token, title=assignment.study.title)
    return _worker_page(body, 200, assignment.study, assignment)


@bp.get("/a/<token>/done")
def done(token: str):
    """Completion: continue (qualification), post back to MTurk, go to Prolific, or a code."""
    session = begin_write(get_session())
    try:
        assignment = service.get_assignment(session, token)
    except MarginaliaError:
        abort(404)
    if assignment.status != "submitted":
        session.rollback()
        return redirect(url_for("pages.annotate", token=token))
    study = assignment.study
    if _continues(assignment):
        state = qualification_state(session, study, assignment.worker_id)
        session.commit()
        if state.qualified or state.can_try_again:
            body = render_template(
                "qualification.html",
                title=study.title,
                state=state,
                rule=qualification(study),
                score=(assignment.scores or {}).get("gold", {}).get("overall", {}),
                next_url=platforms.continue_url(
                    assignment, url_for("pages.start", slug=study.slug)
                ),
            )
            return _worker_page(body, 200, study, assignment)
    else:
        session.commit()
    form = platforms.mturk_submit_form(assignment)
    if form is not None:
        action, fields = form
        body = render_template(
            "mturk_submit.html",
            title=study.title,
            action=action,
            fields=fields,
            code=assignment.completion_code,
        )
        return _worker_page(body, 200, study, assignment)
    url = platforms.completion_url(assignment)
    if url and assignment.platform == "prolific":
        return redirect(url)
    body = render_template("done.html", code=assignment.completion_code, title=study.title)
    return _worker_page(body, 200, study, assignment)
