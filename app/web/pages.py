"""Worker-facing HTML pages: arrive at a study, annotate, see the completion code.

Arrivals carry the platform's parameters (see :mod:`app.crowd.platforms`); workers are then
identified by the assignment token in the URL only. A worker ID never brings an existing
token back: only a proven return does (:mod:`app.annotation.admission`); a second arrival
with an ID that has work in progress gets a page saying so, whose script looks for the
token this browser kept and, if it has one, presents it (``?resume=<token>``). Only the demo
study's start page makes up an ID, for a browser that has none (``static/js/demo-start.js``).
Worker pages of MTurk studies may be framed by the MTurk origins; every other page refuses
framing. An arrival over the arrival limit gets :mod:`app.web.limit_page`'s page.
"""

from __future__ import annotations

from flask import (
    Blueprint,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_babel import gettext
from flask_limiter import RateLimitExceeded

from app.annotation import admission
from app.annotation.arrive import Arrived, arrive, release_stale
from app.annotation.assigning import (
    NoDocumentsLeft,
    ScreenedOut,
    WorkInProgress,
    is_demo,
    preview_document,
)
from app.annotation.connect import handle_of
from app.annotation.qualification import qualification, qualification_state, screen_out
from app.annotation.reviews import Blocked
from app.crowd import platforms
from app.db import begin_write, get_session
from app.documents.language import N_, text_language
from app.documents.lifecycle import StudyUnavailable, accepts_new_work
from app.documents.studies import find_document, get_study
from app.errors import MarginaliaError
from app.models import Assignment, Study
from app.researchers import access
from app.researchers.accounts import current_researcher
from app.web import journey
from app.web.i18n import error_text, script_messages, use_study
from app.web.limit_page import too_many_arrivals
from app.web.limits import ARRIVALS, arrival_limit, limiter
from app.web.markdown import render_markdown

bp = Blueprint("pages", __name__)


bp.after_request(journey.no_store)
# An arrival over the limit (here and at the consent post) gets a worker page, not werkzeug's.
for blueprint in (bp, journey.bp):
    blueprint.register_error_handler(RateLimitExceeded, too_many_arrivals)


@bp.get("/")
def home():
    return render_template("home.html")


def _mturk_origins() -> tuple[str, ...]:
    extra = current_app.config.get("MTURK_SUBMIT_ORIGINS") or ()
    return (*platforms.MTURK_ORIGINS, *extra)


def _continues(assignment: Assignment) -> bool:
    """A submitted qualification document sends its worker on to the next document."""
    return qualification(assignment.study) is not None and assignment.document.is_gold


def _preview(study: Study, document, **researcher_preview):
    text_dir, text_lang = text_language(study, document.meta if document else None)
    body = render_template(
        "preview.html",
        study=study,
        title=study.title,
        segments=[s.text for s in document.segments] if document else [],
        text_dir=text_dir,
        text_lang=text_lang,
        **researcher_preview,
    )
    return journey.worker_page(body, 200, study)


def _researcher_preview(session, study: Study, external_id: str):
    """``?document=D``: a researcher's read-only look at one document; nothing is stored."""
    researcher = current_researcher()
    if researcher is None or not access.can_see(session, researcher, study):
        error = "?document= shows a document to the study's researchers: log in first"
        if researcher is not None:
            error = "?document= shows a document to the study's researchers only"
        body = render_template("start.html", study=study, error=error)
        return journey.worker_page(body, 403, study)
    try:
        document = find_document(session, study, external_id)
    except MarginaliaError as exc:
        body = render_template("start.html", study=study, error=str(exc))
        return journey.worker_page(body, exc.status, study)
    return _preview(study, document, researcher=True, document_id=document.external_id)


PLATFORM_NAMES = {
    "prolific": "Prolific",
    "mturk": "Mechanical Turk",
    "generic": N_("the task page"),
}


def _screened_out(session, study: Study, worker_id: str, platform: str, assignment=None):
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
    return journey.worker_page(body, 200, study, assignment)


def _work_in_progress(study: Study, worker_id: str, exc: WorkInProgress, tried: bool):
    body = render_template(
        "resume.html", study=study, worker_id=worker_id, error=error_text(exc), tried=tried
    )
    return journey.worker_page(body, exc.status, study)


@bp.get("/s/<slug>")
@limiter.shared_limit(arrival_limit, scope=ARRIVALS)
def start(slug: str):
    """Resume a proven return, else start new work under the study's policy."""
    session = begin_write(get_session())
    try:
        study = get_study(session, slug)
    except MarginaliaError:
        abort(404)
    use_study(study)
    if request.args.get("document"):
        answer = _researcher_preview(session, study, request.args["document"])
        session.rollback()
        return answer
    try:
        arrival = platforms.read_arrival(request.args, mturk_origins=_mturk_origins())
    except MarginaliaError as exc:
        session.rollback()
        return journey.worker_page(
            render_template("start.html", study=study, error=str(exc)), exc.status, study
        )
    if arrival is None:
        session.rollback()
        if not accepts_new_work(study):
            return journey.return_page(study, "generic", "unavailable")
        # the demo's page gives a browser with no ID its own (static/js/demo-start.js)
        body = render_template("start.html", study=study, error=None, demo=is_demo(study))
        return journey.worker_page(body, 200, study)
    if arrival.preview:
        if not accepts_new_work(study):
            session.rollback()
            return journey.return_page(study, arrival.platform, "unavailable")
        document = preview_document(session, study)
        session.rollback()
        return _preview(study, document)
    resume_token = request.args.get("resume", "")
    try:
        visit = platforms.find_visit(session, study, arrival)
        if visit is None and resume_token:
            visit = admission.visit_by_token(session, study, arrival.worker_id, resume_token)
        if visit is not None and (visit.status != "submitted" or not _continues(visit)):
            assignment = admission.resume(
                session, study, visit, platform_data=arrival.platform_data
            )
        else:
            stop = journey.before_new_work(session, study, arrival)
            if stop is not None:
                session.rollback()
                return stop
            assignment = arrive(
                handle_of(session),
                study,
                arrival.worker_id,
                platform=arrival.platform,
                platform_data=arrival.platform_data,
            )
    except WorkInProgress as exc:
        session.rollback()
        return _work_in_progress(study, arrival.worker_id, exc, tried=bool(resume_token))
    except ScreenedOut:  # out of practice attempts: the platform's screen-out return
        session.rollback()
        # (practice work submitted before screened_out existed gets the status now)
        screen_out(session, study, arrival.worker_id)
        answer = _screened_out(session, study, arrival.worker_id, arrival.platform)
        session.commit()
        return answer
    except NoDocumentsLeft as exc:
        session.rollback()
        if is_demo(study):  # the demo has places for everyone, not every document for one ID
            error = gettext(
                "you have done every document of the demo with this worker ID: start again "
                "with another ID, or make the demo anew with `marginalia demo --reset`"
            )
            body = render_template("start.html", study=study, error=error, demo=True)
            return journey.worker_page(body, exc.status, study)
        return journey.return_page(study, arrival.platform, "no_places", exc.status)
    except Blocked as exc:  # 409, a page with the platform's return
        # (a worker a researcher blocked is told no document is left for them, as on Prolific)
        session.rollback()
        return journey.return_page(study, arrival.platform, "no_places", exc.status)
    except StudyUnavailable:  # a proven return whose abandoned slot went to someone else
        session.rollback()
        return journey.return_page(study, arrival.platform, "unavailable")
    except MarginaliaError as exc:
        session.rollback()
        return journey.worker_page(
            render_template("start.html", study=study, error=str(exc)), exc.status, study
        )
    if assignment.status == "rejected":  # a researcher rejected this work: nothing to resume
        session.rollback()
        return journey.return_page(study, arrival.platform, "no_places", Blocked.status)
    session.commit()
    if assignment.status in ("submitted", "screened_out"):
        return redirect(url_for("pages.done", token=assignment.token))
    answer = redirect(url_for("pages.annotate", token=assignment.token))
    if isinstance(assignment, Arrived) and assignment.release is not None:
        # new work, and this process is due to release the study's stale holds
        engine, due = current_app.extensions["db_engine"], assignment.release
        answer.call_on_close(lambda: release_stale(engine, due))
    return answer


@bp.get("/a/<token>")
def annotate(token: str):
    session = get_session()
    assignment = journey.assignment_or_404(session, token)
    study = assignment.study
    text_dir, text_lang = text_language(study, assignment.document.meta)
    use_study(study)  # the message table below is in the study's language
    body = render_template(
        "annotate.html",
        study=study,
        token=token,
        title=study.title,
        study_slug=study.slug,
        worker_id=assignment.worker_id,
        instructions=render_markdown((study.settings or {}).get("instructions")),
        text_dir=text_dir,
        text_lang=text_lang,
        messages=script_messages(),
    )
    return journey.worker_page(body, 200, assignment.study, assignment)


@bp.get("/a/<token>/done")
def done(token: str):
    """Completion: continue (qualification), post back to MTurk, go to Prolific, or a code."""
    session = begin_write(get_session())
    assignment = journey.assignment_or_404(session, token)
    study = assignment.study
    use_study(study)
    if assignment.status == "screened_out":  # the screen-out return, never a code
        answer = _screened_out(
            session, study, assignment.worker_id, assignment.platform, assignment
        )
        session.commit()
        return answer
    if assignment.status != "submitted":
        session.rollback()
        return redirect(url_for("pages.annotate", token=token))
    if _continues(assignment):
        state = qualification_state(session, study, assignment.worker_id)
        session.commit()
        if state.qualified or state.can_try_again:
            body = render_template(
                "qualification.html",
                study=study,
                title=study.title,
                state=state,
                rule=qualification(study),
                practice=assignment.document.is_practice,
                score=(assignment.scores or {}).get("gold", {}).get("overall", {}),
                next_url=platforms.continue_url(
                    assignment, url_for("pages.start", slug=study.slug)
                ),
            )
            return journey.worker_page(body, 200, study, assignment)
        answer = _screened_out(
            session, study, assignment.worker_id, assignment.platform, assignment
        )
        session.commit()
        return answer
    session.commit()
    questions = journey.questionnaire_page(session, assignment)
    if questions is not None:
        return questions
    form = platforms.mturk_submit_form(assignment)
    if form is not None:
        action, fields = form
        body = render_template(
            "mturk_submit.html",
            study=study,
            title=study.title,
            action=action,
            fields=fields,
            code=assignment.completion_code,
        )
        return journey.worker_page(body, 200, study, assignment)
    url = platforms.completion_url(assignment)
    if url and assignment.platform == "prolific":
        return redirect(url)
    body = render_template(
        "done.html", study=study, code=assignment.completion_code, title=study.title
    )
    return journey.worker_page(body, 200, study, assignment)
