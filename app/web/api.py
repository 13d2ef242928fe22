"""The JSON API workers' browsers (and researchers' scripts) call; shapes per CONTRACT.md."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request
from sqlalchemy import func, select

from app.annotation import admission, fast, hint_events, practice
from app.annotation import assignments as service
from app.annotation.assigning import assign
from app.crowd.platforms import after_submit_redirect, hint_limits
from app.db import begin_write, get_session
from app.documents.studies import get_study
from app.documents.text import storable
from app.errors import InvalidInput, NotFound
from app.models import Entity, EntityMention, Segment, Suggestion, SuggestionEvent
from app.researchers import access, keys
from app.web.limits import arrival_limit, limiter

bp = Blueprint("api", __name__, url_prefix="/api")

SUGGESTION_EVENTS = hint_events.EVENTS


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


def _researcher_script() -> bool:
    """Calls with a researcher's key are not crowd arrivals (a bad key is 401 anyway)."""
    return request.headers.get("Authorization", "").startswith("Bearer ")


@bp.post("/assignments")
@limiter.shared_limit(arrival_limit, scope="arrivals", exempt_when=_researcher_script)
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
    if key_holder is not None:
        study = access.study_for(session, key_holder, study_slug)
        document = service.find_document(session, study, body.get("document"))
        assignment, created = admission.open_for_document(
            session, study, document, body.get("worker_id")
        )
    else:
        study = get_study(session, study_slug)
        worker_id = service.worker_id_from(body.get("worker_id"))
        named = body.get("document")
        document = None if named is None else service.find_document(session, study, named)
        assignment = assign(session, study, worker_id, platform="generic", document=document)
        created = True
    session.commit()
    answer = {
        "token": assignment.token,
        "segments": session.scalar(  # a count, not every segment loaded as an object
            select(func.count())
            .select_from(Segment)
            .where(Segment.document_id == assignment.document_id)
        ),
        "resume_segment": assignment.current_segment,
    }
    return jsonify(answer), 201 if created else 200


def _entities(session, document_id: int) -> tuple[list[dict], list[dict]]:
    entities = session.scalars(
        select(Entity)
        .where(Entity.document_id == document_id)
        .order_by(Entity.first_segment, Entity.id)
    )
    mentions = session.scalars(
        select(EntityMention)
        .where(EntityMention.document_id == document_id)
        .order_by(EntityMention.segment, EntityMention.start)
    )
    return (
        [
            {"id": e.id, "name": e.name, "label": e.label, "first_segment": e.first_segment}
            for e in entities
        ],
        [
            {"entity": m.entity_id, "segment": m.segment, "start": m.start, "end": m.end}
            for m in mentions
        ],
    )


def _suggestions(session, assignment) -> list[dict]:
    if assignment.study.suggestions != "shown" or assignment.condition == "unassisted":
        return []
    most, lowest = hint_limits(assignment.study)
    rows = session.scalars(
        select(Suggestion)
        .where(Suggestion.document_id == assignment.document_id, Suggestion.score >= lowest)
        .order_by(Suggestion.segment, Suggestion.score.desc(), Suggestion.start, Suggestion.id)
    )
    kept: list[Suggestion] = []
    per_segment: dict[int, int] = {}
    for s in rows:
        if per_segment.get(s.segment, 0) < most:
            per_segment[s.segment] = per_segment.get(s.segment, 0) + 1
            kept.append(s)
    kept.sort(key=lambda s: (s.segment, s.start, s.id))
    return [
        {
            "id": s.id,
            "segment": s.segment,
            "start": s.start,
            "end": s.end,
            "text": s.text,
            "category": s.category,
            "score": s.score,
            "reason": s.reason or "",
            "paired": None
            if s.paired_segment is None
            else {
                "segment": s.paired_segment,
                "start": s.paired_start,
                "end": s.paired_end,
                "text": s.paired_text,
            },
        }
        for s in kept
    ]


SOURCE_LABELS = (("context", "Context"), ("source", "Source"))


def source_texts(meta: dict[str, Any] | None) -> list[dict[str, str]]:
    """Texts the generated one was made from (Thresh's ``context`` and ``source``), for the
    annotate page's collapsible panel: ``[{"label", "text"}]`` (the payload's
    ``document.sources``, present only when there are some)."""
    kept = (meta or {}).get("thresh") or {}
    return [
        {"label": label, "text": kept[key]}
        for key, label in SOURCE_LABELS
        if isinstance(kept.get(key), str) and kept[key].strip()
    ]


def assignment_payload(session, assignment, *, read_only: bool = False) -> dict[str, Any]:
    """Everything the annotate page needs, in one answer."""
    study, document = assignment.study, assignment.document
    entities, mentions = _entities(session, document.id)
    return {
        "token": assignment.token,
        "status": assignment.status,
        "read_only": read_only or assignment.status != "active",
        "study": {"slug": study.slug, "title": study.title, "suggestions": study.suggestions},
        "document": {
            "id": document.external_id,
            "segments": [{"index": s.index, "text": s.text} for s in document.segments],
            **({"sources": sources} if (sources := source_texts(document.meta)) else {}),
        },
        "taxonomy": study.taxonomy,
        "current_segment": assignment.current_segment,
        "completion_code": assignment.completion_code,
        "entities": entities,
        "mentions": mentions,
        "suggestions": _suggestions(session, assignment),
        "annotations": [
            service.annotation_json(a) for a in service.live_annotations(session, assignment.id)
        ],
        **practice.payload(session, assignment),
    }


@bp.get("/assignments/<token>")
def read_assignment(token: str):
    session = get_session()
    assignment = service.get_assignment(session, token)
    return jsonify(assignment_payload(session, assignment))


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
    assignment = service.get_assignment(session, token, for_update=True)
    code = service.submit(session, assignment)
    session.commit()
    return jsonify(completion_code=code, redirect_url=after_submit_redirect(assignment))


@bp.post("/assignments/<token>/practice/<int:segment>")
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
    body = json_body()
    session = begin_write(get_session())
    assignment = service.get_assignment(session, token)
    if not 0 < suggestion_id <= service.MAX_ID:
        raise NotFound("this assignment's document has no such suggestion")
    event = body.get("event") if isinstance(body, dict) else None
    if event not in SUGGESTION_EVENTS:
        raise InvalidInput(f"event must be one of {', '.join(SUGGESTION_EVENTS)}")
    owner = session.scalar(select(Suggestion.document_id).where(Suggestion.id == suggestion_id))
    if owner != assignment.document_id:
        raise NotFound("this assignment's document has no such suggestion")
    exists = session.scalar(
        select(SuggestionEvent.id).where(
            SuggestionEvent.assignment_id == assignment.id,
            SuggestionEvent.suggestion_id == suggestion_id,
            SuggestionEvent.event == event,
        )
    )
    if exists is None:
        session.add(
            SuggestionEvent(assignment_id=assignment.id, suggestion_id=suggestion_id, event=event)
        )
        session.commit()
    return "", 204


@bp.post("/assignments/<token>/suggestions/events")
def suggestion_events(token: str):
    """One event for many suggestions at once: one request instead of one per hint. All or
    nothing: any unknown id refuses the whole batch. (The annotate page sends its segment
    views' "shown" hints in its position updates instead: ``app/annotation/hint_events.py``.)"""
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
