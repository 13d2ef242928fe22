"""Worker pages around the documents: consent, questionnaires, and the pages that send a
worker back to their platform (study paused or closed, no documents left, consent declined).

The forms here carry no cookie (worker pages never use cookies, see ARCHITECTURE.md
"Identity"). The consent form repeats the arrival's own parameters with a token signed for
them (study, consent text, parameters; valid ``CONSENT_TOKEN_HOURS``), so consent is
recorded only by a post of the form an arrival was shown, and only from this site (a
foreign ``Origin`` is refused): an anonymous post from anywhere let a worker ID skip the
consent. The questionnaire form is reached only through the unguessable
assignment token in its URL.
"""

from __future__ import annotations

from urllib.parse import urlsplit

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
from flask_babel import gettext
from itsdangerous import BadData, URLSafeTimedSerializer

from app.annotation import assignments as service
from app.crowd import platforms
from app.crowd.returns import platform_return
from app.csp import content_security_policy
from app.db import begin_write, get_session
from app.documents import journey
from app.documents.language import N_
from app.documents.lifecycle import accepts_new_work
from app.documents.questionnaires import check_answers, consent_hash
from app.documents.studies import get_study
from app.errors import MarginaliaError
from app.models import Assignment, Study
from app.web.i18n import error_text, use_study
from app.web.limits import ARRIVALS, arrival_limit, limiter
from app.web.markdown import render_markdown

bp = Blueprint("journey", __name__)
CONSENT_TOKEN_HOURS = 12

HEADINGS = {
    "no_places": N_("No documents left"),
    "unavailable": N_("This study is not taking workers right now"),
    "declined": N_("You chose not to take part"),
}
MESSAGES = {
    "no_places": N_(
        "Thank you for coming. Every document in this study already has all the annotators "
        "it needs (or you have done all the ones you may do), so there is no work for you "
        "here."
    ),
    "paused": N_(
        "The researchers have paused this study for a while, so no new work is handed out. "
        "Nothing was recorded for you."
    ),
    "closed": N_(
        "This study has finished, so no new work is handed out. Nothing was recorded for you."
    ),
    "declined": N_("Nothing was recorded apart from your choice. Thank you for your time."),
}


@bp.after_request
def no_store(response):
    """Worker pages carry tokens (in the URL, the Location, the page): never cache them
    (every worker page's blueprint registers this)."""
    response.headers["Cache-Control"] = "no-store"
    return response


def worker_page(body, status: int, study: Study | None, assignment: Assignment | None = None):
    """A worker page's response: framed by the MTurk origins only for MTurk work, by nobody
    otherwise (every worker page answers through this)."""
    response = make_response(body, status)
    ancestors = platforms.frame_ancestors(study, assignment)
    response.headers["Content-Security-Policy"] = content_security_policy(ancestors)
    if ancestors == "'none'":
        response.headers["X-Frame-Options"] = "DENY"
    return response


def assignment_or_404(session, token: str) -> Assignment:
    """The assignment of a worker page's token, or the 404 of a page that does not exist
    (an unknown token says nothing more)."""
    try:
        return service.get_assignment(session, token)
    except MarginaliaError:
        abort(404)


def return_page(study: Study, platform: str, reason: str, status: int = 200):
    """The page sending a worker back: ``no_places``, ``unavailable`` or ``declined``."""
    key = reason
    if reason == "unavailable":
        key = "paused" if study.status == "paused" else "closed"
    use_study(study)
    body = render_template(
        "returned.html",
        study=study,
        reason=reason,
        heading=gettext(HEADINGS[reason]),
        message=gettext(MESSAGES[key]),
        back=platform_return(study, platform, reason),
        platform=platform,
    )
    return worker_page(body, status, study)


def _signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt="marginalia-consent")


def _consent_claim(study: Study, arrival: platforms.Arrival) -> list:
    """What a consent token vouches for: this study, its consent text, this arrival."""
    return [study.id, consent_hash(journey.consent_text(study)), arrival.start_params()]


def consent_page(study: Study, arrival: platforms.Arrival, error: str | None = None):
    use_study(study)
    body = render_template(
        "consent.html",
        study=study,
        consent=render_markdown(journey.consent_text(study)),
        button=journey.definition(study).get("consent_button") or gettext("I agree"),
        params=arrival.start_params(),
        consent_token=_signer().dumps(_consent_claim(study, arrival)),
        error=error,
    )
    return worker_page(body, 400 if error else 200, study)


def _form_was_shown(study: Study, arrival: platforms.Arrival) -> bool:
    """Whether the post carries the token of the consent form shown to this arrival."""
    try:
        claim = _signer().loads(
            request.form.get("consent_token", ""), max_age=CONSENT_TOKEN_HOURS * 3600
        )
    except BadData:
        return False
    return claim == _consent_claim(study, arrival)


def _foreign_origin() -> bool:
    """A post whose ``Origin`` names another site (or ``null``); none sent is let through
    (the token still binds the post to a form this site showed)."""
    origin = request.headers.get("Origin")
    return origin is not None and urlsplit(origin).netloc != request.host


def before_new_work(session, study: Study, arrival: platforms.Arrival):
    """The page an arrival gets instead of new work (study not open, consent not yet
    given), or None to go on to :func:`app.annotation.assigning.assign`."""
    if not accepts_new_work(study):
        return return_page(study, arrival.platform, "unavailable")
    if journey.needs_consent(session, study, arrival.worker_id):
        return consent_page(study, arrival)
    return None


@bp.post("/s/<slug>/consent")
@limiter.shared_limit(arrival_limit, scope=ARRIVALS)
def consent(slug: str):
    """Agree: stored, then on to ``/s/<slug>`` as the arrival was. Decline: stored, and the
    page that sends the worker back to their platform. Only the post of a form this site
    showed to this arrival is recorded (the module's docstring)."""
    if _foreign_origin():
        abort(403)
    session = begin_write(get_session())
    try:
        study = get_study(session, slug)
    except MarginaliaError:
        abort(404)
    try:
        arrival = platforms.read_arrival(request.form)
    except MarginaliaError as exc:
        session.rollback()
        return worker_page(render_template("start.html", study=study, error=str(exc)), 400, study)
    if arrival is None or arrival.preview or not journey.consent_text(study):
        session.rollback()
        return redirect(url_for("pages.start", slug=slug))
    decision = request.form.get("decision")
    if decision not in ("agree", "decline"):
        session.rollback()
        use_study(study)
        return consent_page(study, arrival, error=gettext("choose whether you agree to take part"))
    if not _form_was_shown(study, arrival):
        session.rollback()
        use_study(study)
        out_of_date = gettext("this form is out of date: please read and answer it again")
        return consent_page(study, arrival, error=out_of_date)
    row = journey.record_consent(session, study, arrival.worker_id, agreed=decision == "agree")
    session.commit()
    if decision == "decline" and not row.agreed:
        return return_page(study, arrival.platform, "declined")
    return redirect(url_for("pages.start", slug=slug, **arrival.start_params()))


def questionnaire_page(session, assignment: Assignment, *, error: str | None = None, form=None):
    """The questionnaire this submitted assignment's worker still has to answer, or None."""
    pending = journey.pending_stage(session, assignment)
    if pending is None:
        return None
    stage, questions = pending
    use_study(assignment.study)
    body = render_template(
        "questionnaire.html",
        study=assignment.study,
        title=assignment.study.title,
        token=assignment.token,
        stage=stage,
        questions=questions,
        error=error,
        form=form or {},
    )
    return worker_page(body, 400 if error else 200, assignment.study, assignment)


@bp.post("/a/<token>/questionnaire")
def answer_questionnaire(token: str):
    """Store the answers of the pending stage, then back to the done page."""
    session = begin_write(get_session())
    assignment = assignment_or_404(session, token)
    pending = journey.pending_stage(session, assignment)
    if pending is None or request.form.get("stage") != pending[0]:
        session.rollback()  # answered already (a second tab, a retry): the done page goes on
        return redirect(url_for("pages.done", token=token))
    stage, questions = pending
    try:
        answers = check_answers(questions, request.form)
    except MarginaliaError as exc:
        session.rollback()
        use_study(assignment.study)
        return questionnaire_page(session, assignment, error=error_text(exc), form=request.form)
    journey.save_answers(session, assignment, stage, questions, answers)
    session.commit()
    return redirect(url_for("pages.done", token=token))
