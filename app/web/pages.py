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
from flask_limiter import RateLimitExceeded
from sqlalchemy import select

from app.annotation import admission, sessions
from app.annotation.arrive import Arrived, arrive, release_stale
from app.annotation.assigning import (
    NoDocumentsLeft,
    is_demo,
    preview_document,
)
from app.annotation.connect import handle_of
from app.annotation.qualification import qualification, qualification_state
from app.annotation.reviews import Blocked
from app.annotation.session_settings import session_rule
from app.annotation.sessions import Continue, Open
from app.crowd import platforms
from app.db import begin_write, get_session
from app.documents.journey import pending_stage
from app.documents.language import text_language
from app.documents.lifecycle import accepts_new_work
from app.documents.studies import find_document, get_study
from app.errors import MarginaliaError
from app.models import Assignment, Study
from app.researchers import access
from app.researchers.accounts import current_researcher
from app.web import journey
from app.web.i18n import script_messages, use_study
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


@bp.get("/s/<slug>")
@limiter.shared_limit(arrival_limit, scope=ARRIVALS)
def start(slug: str):
    """Resume a proven return, else start new work under the study's policy: a new session
    (with the consent proof the URL carries), or the next training document of the visit's."""
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
            stop = journey.before_new_work(study, arrival)
            if stop is not None:
                session.rollback()
                return stop
            assignment = arrive(
                handle_of(session),
                study,
                arrival.worker_id,
                platform=arrival.platform,
                platform_data=arrival.platform_data,
                session=_session_of(visit),
            )
    except MarginaliaError as exc:
        session.rollback()
        return journey.refusal_page(session, study, arrival, exc, tried=bool(resume_token))
    return _opened(session, study, arrival, assignment)


def _session_of(visit: Assignment | None) -> Open | Continue:
    """The session an arrival opens (with the consent proof its URL carries), or the one of
    the proven visit it goes on from (a training document done)."""
    if visit is not None and visit.session_id is not None:
        return Continue(visit.session_id)
    return Open(journey.consent_proof())


def _opened(session, study: Study, arrival, assignment: Assignment | Arrived):
    """An arrival's answer once it has its assignment: its page (or its done page)."""
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
        session_position=sessions.position(handle_of(session), assignment),
    )
    return journey.worker_page(body, 200, assignment.study, assignment)


@bp.get("/a/<token>/done")
def done(token: str):
    """After a submit: continue (training), the questions pending, the session's next
    document, then the code (MTurk's post back, Prolific's completion URL, or shown)."""
    session = begin_write(get_session())
    assignment = journey.assignment_or_404(session, token)
    study = assignment.study
    use_study(study)
    if assignment.status == "screened_out":  # the screen-out return, never a code
        answer = journey.screened_out_page(study, assignment.platform, assignment)
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
                next_url=url_for("pages.next_document", token=token),
            )
            return journey.worker_page(body, 200, study, assignment)
        answer = journey.screened_out_page(study, assignment.platform, assignment)
        session.commit()
        return answer
    found = sessions.give_code_when_due(handle_of(session), assignment)
    session.commit()
    finished = found is None or found.finished
    questions = journey.questionnaire_page(session, assignment, ends_session=finished)
    if questions is not None:
        return questions
    if not finished:  # the session's next document
        body = render_template(
            "session_next.html",
            study=study,
            title=study.title,
            done=found.submitted,
            of=found.documents,
            next_url=url_for("pages.next_document", token=token),
        )
        return journey.worker_page(body, 200, study, assignment)
    session.refresh(assignment)  # the code given out above
    return _code_page(study, assignment, found)


def _code_page(study: Study, assignment: Assignment, found: sessions.Facts | None):
    """The end of a session: MTurk's post back, Prolific's completion URL, or the code; a
    session that ended early says so first."""
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
    early = found is not None and found.ended_early
    if url and assignment.platform == "prolific" and not early:
        return redirect(url)
    body = render_template(
        "done.html",
        study=study,
        code=assignment.completion_code,
        title=study.title,
        ended_early=early,
        done=found.submitted if found else None,
        of=found.documents if found else None,
        url=url if assignment.platform == "prolific" else None,
    )
    return journey.worker_page(body, 200, study, assignment)


@bp.post("/a/<token>/next")
def next_document(token: str):
    """The next document of the token's session (its token is the proof: no cookie), once
    its questions are answered: after a training document, or a real one while the session
    has room. No document left: a session with work done ends early where the study allows
    a shorter one (its code on the done page), else the platform's return."""
    session = begin_write(get_session())
    assignment = journey.assignment_or_404(session, token)
    study = assignment.study
    use_study(study)
    db = handle_of(session)
    found = sessions.facts(db, study, assignment.session_id) if assignment.session_id else None
    training = _continues(assignment)
    waiting = pending_stage(session, assignment, ends_session=False)
    if assignment.status != "submitted" or (
        not training and (found is None or found.finished or waiting is not None)
    ):
        session.rollback()
        return redirect(url_for("pages.done", token=token))
    going = _active_in(session, found)
    if going is not None:  # opened already (a second click, a retry): that document
        session.rollback()
        return redirect(url_for("pages.annotate", token=going))
    arrival = platforms.arrival_of(assignment)
    visit = Continue(found.id) if found else Open(journey.consent_proof())
    try:
        arrived = arrive(
            db,
            study,
            assignment.worker_id,
            platform=assignment.platform,
            platform_data=dict(assignment.platform_data or {}),
            session=visit,
        )
    except sessions.SessionComplete:
        session.rollback()
        return redirect(url_for("pages.done", token=token))
    except NoDocumentsLeft as exc:
        session.rollback()
        if found is not None and found.submitted and session_rule(study).shorter:
            sessions.end_early(handle_of(begin_write(session)), found.id)
            session.commit()
            return redirect(url_for("pages.done", token=token))
        return journey.refusal_page(session, study, arrival, exc)
    except MarginaliaError as exc:
        session.rollback()
        return journey.refusal_page(session, study, arrival, exc)
    return _opened(session, study, arrival, arrived)


def _active_in(session, found: sessions.Facts | None) -> str | None:
    """The token of the session's active document, if it has one."""
    if found is None:
        return None
    return session.scalar(
        select(Assignment.token).where(
            Assignment.session_id == found.id, Assignment.status == "active"
        )
    )
