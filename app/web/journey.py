"""Worker pages around the documents: consent, questionnaires, and the pages that send a
worker back to their platform (study paused or closed, no documents left, consent declined).

The forms here carry no cookie (worker pages never use cookies, see ARCHITECTURE.md
"Identity"). The consent form repeats the arrival's own parameters with a token signed for
them (study, consent text, parameters; valid ``CONSENT_TOKEN_HOURS``), so only a post of the
form an arrival was shown, from this site (a foreign ``Origin`` is refused), is answered: an
anonymous post from anywhere let a worker ID skip the consent. An agreement is not stored
against the worker ID (anyone can type one): the post answers with a consent proof for this
arrival (:mod:`app.annotation.consent`), carried in the arrival's URL to ``/s/<slug>``,
whose new work stores the agreement with its session. The questionnaire form is reached
only through the unguessable assignment token in its URL.
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
from app.annotation import sessions
from app.annotation.assigning import NoDocumentsLeft, ScreenedOut, WorkInProgress, is_demo
from app.annotation.connect import handle_of
from app.annotation.consent import ConsentNeeded, Proof, sign
from app.annotation.qualification import screen_out
from app.annotation.reviews import Blocked
from app.crowd import platforms
from app.crowd.returns import platform_return
from app.csp import content_security_policy
from app.db import begin_write, get_session
from app.documents import journey
from app.documents.language import N_
from app.documents.lifecycle import StudyUnavailable, accepts_new_work
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


PLATFORM_NAMES = {
    "prolific": "Prolific",
    "mturk": "Mechanical Turk",
    "generic": N_("the task page"),
}


def screened_out_page(study: Study, platform: str, assignment=None):
    """The training phase's end for a worker who did not reach the pass mark: the study's
    screen-out return (:func:`app.crowd.platforms.screen_out_url`), never real work. The
    page says failed, never the score: a score is an oracle a worker could question again
    and again with throwaway worker IDs to learn the reference's marks."""
    body = render_template(
        "screened_out.html",
        title=study.title or study.slug,
        url=platforms.screen_out_url(study),
        platform=platform,
        platform_name=gettext(PLATFORM_NAMES.get(platform, PLATFORM_NAMES["generic"])),
    )
    return worker_page(body, 200, study, assignment)


def refusal_page(session, study: Study, arrival: platforms.Arrival, exc, *, tried: bool = False):
    """The page for an arrival the policy refused (the session rolled back): consent first,
    work in progress elsewhere (``tried``: a kept token was presented), screened out, no
    documents left, blocked, the study not open, or the refusal's message."""
    if isinstance(exc, ConsentNeeded):
        return consent_page(study, arrival)
    if isinstance(exc, WorkInProgress):
        body = render_template(
            "resume.html",
            study=study,
            worker_id=arrival.worker_id,
            error=error_text(exc),
            tried=tried,
        )
        return worker_page(body, exc.status, study)
    if isinstance(exc, ScreenedOut):  # out of practice attempts: the platform's screen-out
        # (practice work submitted before screened_out existed gets the status now)
        screen_out(session, study, arrival.worker_id)
        answer = screened_out_page(study, arrival.platform)
        session.commit()
        return answer
    if isinstance(exc, NoDocumentsLeft) and is_demo(study):
        # the demo has places for everyone, not every document for one ID
        error = gettext(
            "you have done every document of the demo with this worker ID: start again "
            "with another ID, or make the demo anew with `marginalia demo --reset`"
        )
        body = render_template("start.html", study=study, error=error, demo=True)
        return worker_page(body, exc.status, study)
    if isinstance(exc, NoDocumentsLeft | Blocked):
        # (a worker a researcher blocked is told no document is left for them, as on Prolific)
        return return_page(study, arrival.platform, "no_places", exc.status)
    if isinstance(exc, StudyUnavailable):  # a proven return whose slot went to someone else
        return return_page(study, arrival.platform, "unavailable")
    body = render_template("start.html", study=study, error=str(exc))
    return worker_page(body, exc.status, study)


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


def before_new_work(study: Study, arrival: platforms.Arrival):
    """The page an arrival gets instead of new work when the study is not open, or None to go
    on to the arrival (:func:`app.annotation.arrive.arrive`, which asks for consent)."""
    if not accepts_new_work(study):
        return return_page(study, arrival.platform, "unavailable")
    return None


def consent_proof() -> Proof:
    """The consent proof an arrival's URL carries (``consent=``), with the key it was signed
    with."""
    return Proof(request.args.get("consent"), current_app.secret_key)


@bp.post("/s/<slug>/consent")
@limiter.shared_limit(arrival_limit, scope=ARRIVALS)
def consent(slug: str):
    """Agree: on to ``/s/<slug>`` as the arrival was, with the consent proof (the arrival
    stores the agreement with its new work). Decline: stored, and the page that sends the
    worker back to their platform. Only the post of a form this site showed to this arrival
    is answered (the module's docstring)."""
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
    text = journey.consent_text(study)
    if arrival is None or arrival.preview or not text:
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
    if decision == "decline":
        journey.record_decline(session, study, arrival.worker_id)
        session.commit()
        return return_page(study, arrival.platform, "declined")
    session.rollback()
    params = arrival.start_params()
    proof = sign(current_app.secret_key, study.id, consent_hash(text), params)
    return redirect(url_for("pages.start", slug=slug, **params, consent=proof))


def questionnaire_page(
    session,
    assignment: Assignment,
    *,
    ends_session: bool,
    error: str | None = None,
    form=None,
):
    """The questionnaire this submitted assignment's worker still has to answer, or None
    (``ends_session``: the assignment's session is finished, so the study's questions come
    too)."""
    pending = journey.pending_stage(session, assignment, ends_session=ends_session)
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
    """Store the answers of the pending stage (the code given out once no required one is
    left), then back to the done page."""
    session = begin_write(get_session())
    assignment = assignment_or_404(session, token)
    ends = _ends_session(session, assignment)
    pending = journey.pending_stage(session, assignment, ends_session=ends)
    if pending is None or request.form.get("stage") != pending[0]:
        session.rollback()  # answered already (a second tab, a retry): the done page goes on
        return redirect(url_for("pages.done", token=token))
    stage, questions = pending
    try:
        answers = check_answers(questions, request.form)
    except MarginaliaError as exc:
        session.rollback()
        use_study(assignment.study)
        return questionnaire_page(
            session, assignment, ends_session=ends, error=error_text(exc), form=request.form
        )
    journey.save_answers(session, assignment, stage, questions, answers)
    sessions.give_code_when_due(handle_of(session), assignment)
    session.commit()
    return redirect(url_for("pages.done", token=token))


def _ends_session(session, assignment: Assignment) -> bool:
    """Whether the assignment's session is finished (an assignment in none: it is its own)."""
    if assignment.session_id is None:
        return True
    found = sessions.facts(handle_of(session), assignment.study, assignment.session_id)
    return found is None or found.finished
