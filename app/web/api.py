"""The JSON API workers' browsers (and researchers' scripts) call; shapes per CONTRACT.md."""

from __future__ import annotations

from functools import partial
from typing import Any

from flask import Blueprint, current_app, jsonify, request
from sqlalchemy.orm import Session

from app.annotation import admission, edits, fast, fast_submit, hint_events, named_arrival, practice
from app.annotation import assignments as service
from app.annotation.assigning import assign
from app.db import begin_write, get_session
from app.documents.studies import find_document, get_study
from app.documents.text import storable
from app.errors import InvalidInput, NotFound
from app.researchers import access, keys
from app.web.assignment_read import payload_response
from app.web.limits import ARRIVALS, arrival_limit, counted_before, limiter, practice_limit
from app.web.page_cache import cache_of

bp = Blueprint("api", __name__, url_prefix="/api")

SUGGESTION_EVENTS = hint_events.EVENTS
# Set in the WSGI environ by the fast lane (app/web/fast_arrival.py) on an arrival that
# named_arrival declined there: the route goes straight to the whole policy.
NAMED_DECLINED = "marginalia.named_arrival_declined"


@bp.after_request
def _no_store(response):
    """Every API answer is about a token (or hands one out): never cache it."""
    response.headers["Cache-Control"] = "no-store"
    return response


def json_body() -> Any:
    """The request's JSON body, or a 400 naming what is wrong with it."""
    if not request.is_json:
        raise InvalidInput("send a JSON body with Content-Type: application/json")
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        raise InvalidInput("the JSON body is nested too deeply") from None
    if body is None:
        raise InvalidInput("the body is not valid JSON")
    check_strings(body)
    return body


def check_strings(body: Any) -> None:
    """Refuse text no database can store: NUL characters and unpaired surrogates."""
    pending = [body]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str) and not storable(value):
            raise InvalidInput("text must not contain NUL characters or unpaired surrogates")


def _not_counted_here() -> bool:
    """Calls with a researcher's key are not crowd arrivals (a bad key is 401 anyway); an
    arrival the fast lane counted is not counted twice."""
    return request.headers.get("Authorization", "").startswith("Bearer ") or counted_before()


@bp.post("/assignments")
@limiter.shared_limit(arrival_limit, scope=ARRIVALS, exempt_when=_not_counted_here)
def open_assignment():
    """Start new work under the study's policy; never an existing token (CONTRACT.md).

    ``document`` is optional: when given, the policy must allow it for this worker. The
    researcher-key path (any document, the same token again) goes through
    :func:`app.annotation.admission.open_for_document`.
    """
    body = json_body()
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    session = begin_write(get_session())
    # A researcher's script (Authorization: Bearer <key>): 401 for a bad key, 404 for a
    # study the key's researcher may not see.
    key_holder = keys.bearer_researcher(session, request.headers.get("Authorization"))
    study_slug = body.get("study")
    if not isinstance(study_slug, str):
        raise InvalidInput("study must be the study's slug")
    named = body.get("document")
    opened = None
    if key_holder is None and named is not None and not request.environ.get(NAMED_DECLINED):
        # the common arrival, when it applies (the fast lane tries it first)
        opened = named_arrival.open_named(session, study_slug, body.get("worker_id"), named)
        if opened is None:  # declined, nothing written: the policy starts afresh
            session.rollback()
            begin_write(session)
    if opened is not None:
        session.commit()
        answer = jsonify(arrival_body(opened.token, opened.segments, 0)), 201
        if opened.release is not None:  # stale holds due: released once the answer is out
            factory = current_app.extensions["db_sessionmaker"]
            answer[0].call_on_close(partial(named_arrival.release_stale, factory, opened.release))
        return answer
    if key_holder is not None:
        study = access.study_for(session, key_holder, study_slug)
        document = find_document(session, study, body.get("document"))
        assignment, created = admission.open_for_document(
            session, study, document, body.get("worker_id")
        )
    else:
        study = get_study(session, study_slug)
        worker_id = service.worker_id_from(body.get("worker_id"))
        document = None if named is None else find_document(session, study, named)
        assignment = assign(session, study, worker_id, platform="generic", document=document)
        created = True
    document = assignment.document  # in the session already: no query (before the commit)
    answer = (assignment.token, document.id, document.created_at, assignment.current_segment)
    session.commit()
    return _opened_answer(*answer, 201 if created else 200)


def _opened_answer(
    token: str, document_id: int, created_at: Any, resume_segment: int, status: int
) -> tuple[Any, int]:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    connection = get_session().connection()
    body = opened_body(app, connection, token, document_id, created_at, resume_segment)
    return jsonify(body), status


def opened_body(
    app: Any, connection: Any, token: str, document_id: int, created_at: Any, resume_segment: int
) -> dict[str, Any]:
    """The answer of an arrival the whole policy served: the document's segment count from
    its cached part (app/web/page_cache.py), else one count; the part itself is read by the
    page's GET that follows, in whichever process answers it."""
    segments = cache_of(app).segment_count(connection, document_id, created_at)
    return arrival_body(token, segments, resume_segment)


def arrival_body(token: str, segments: int, resume_segment: int) -> dict[str, Any]:
    """An arrival's answer (the route's and the fast lane's, CONTRACT.md)."""
    return {"token": token, "segments": segments, "resume_segment": resume_segment}


@bp.get("/assignments/<token>")
def read_assignment(token: str):
    """Everything the annotate page needs, in one answer (:mod:`app.web.assignment_read`)."""
    return payload_response(current_app._get_current_object(), get_session().connection(), token)  # type: ignore[attr-defined]


@bp.post("/assignments/<token>/annotations")
def add_annotation(token: str):
    body = json_body()
    session = begin_write(get_session())
    annotation, created = fast.add(session, token, body)
    session.commit()
    return jsonify(annotation), 201 if created else 200


@bp.delete("/assignments/<token>/annotations/<int:annotation_id>")
def remove_annotation(token: str, annotation_id: int):
    session = begin_write(get_session())
    fast.remove(session, token, annotation_id)
    session.commit()
    return "", 204


@bp.post("/assignments/<token>/annotations/<int:annotation_id>/edit")
def edit_annotation(token: str, annotation_id: int):
    """Change a mark's categories, attribute values or comment in place (``{"category"?,
    "categories"?, "attributes"?, "comment"?, "client_id"}``): the old mark removed, the
    same span added (CONTRACT.md)."""
    body = json_body()
    session = begin_write(get_session())
    annotation, created = edits.edit(session, token, annotation_id, body)
    session.commit()
    return jsonify(annotation), 201 if created else 200


@bp.post("/assignments/<token>/position")
def set_position(token: str):
    body = json_body()
    session = begin_write(get_session())
    fast.set_position(session, token, body)
    session.commit()
    return "", 204


@bp.post("/assignments/<token>/heartbeat")
def heartbeat(token: str):
    """The annotate page says its worker is there (a JSON body: no cross-site form can send
    one), which keeps the assignment's slot."""
    json_body()
    session = begin_write(get_session())
    fast.heartbeat(session, token)
    session.commit()
    return "", 204


@bp.post("/assignments/<token>/submit")
def submit(token: str):
    session = begin_write(get_session())
    answer = submitted(session, token)
    session.commit()
    return jsonify(answer)


def submitted(session: Session, token: str) -> dict[str, Any]:
    """Submit the token's assignment (:func:`app.annotation.assignments.submit`) and give the
    answer, before the caller commits: the route's and the fast lane's."""
    assignment = service.get_assignment(session, token, for_update=True)
    return fast_submit.answer(assignment, service.submit(session, assignment))


@bp.post("/assignments/<token>/practice/<int:segment>")
@limiter.limit(practice_limit)
def practice_feedback(token: str, segment: int):
    """Check one segment of a practice document: its marks freeze, the feedback comes back
    (:mod:`app.annotation.practice`). A JSON body (no cross-site form can send one)."""
    json_body()
    session = begin_write(get_session())
    assignment = service.get_assignment(session, token, for_update=True)
    feedback = practice.check_segment(session, assignment, segment)
    session.commit()
    return jsonify(feedback)


@bp.post("/assignments/<token>/suggestions/<int:suggestion_id>/events")
def suggestion_event(token: str, suggestion_id: int):
    """One event for one suggestion: stored when the worker is shown it, else ignored with
    the same answer (:func:`app.annotation.hint_events.record`)."""
    if not 0 < suggestion_id <= hint_events.MAX_ID:  # a path naming no possible suggestion
        raise NotFound("no such suggestion")
    body = json_body()
    event = hint_events.parse_event(body.get("event") if isinstance(body, dict) else None)
    ids = hint_events.parse_ids([suggestion_id])
    session = begin_write(get_session())
    assignment = service.get_assignment(session, token)
    hint_events.record(session, assignment.id, assignment.document_id, {event: ids})
    session.commit()
    return "", 204


@bp.post("/assignments/<token>/suggestions/events")
def suggestion_events(token: str):
    """One event for many suggestions at once: one request instead of one per hint; ids the
    worker is not shown are ignored. (The annotate page sends its segment views' "shown"
    hints in its position updates instead: ``app/annotation/hint_events.py``.)"""
    body = json_body()
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    event = hint_events.parse_event(body.get("event"))
    ids = hint_events.parse_ids(body.get("suggestions"))
    session = begin_write(get_session())
    assignment = service.get_assignment(session, token)
    hint_events.record(session, assignment.id, assignment.document_id, {event: sorted(set(ids))})
    session.commit()
    return "", 204
