"""The JSON API workers' browsers (and researchers' scripts) call; shapes per CONTRACT.md."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request
from sqlalchemy import select

from app.annotation import assignments as service
from app.crowd.platforms import after_submit_redirect
from app.db import begin_write, get_session
from app.documents.studies import get_study
from app.documents.text import storable
from app.errors import InvalidInput, NotFound
from app.models import Entity, EntityMention, Suggestion, SuggestionEvent

bp = Blueprint("api", __name__, url_prefix="/api")

SUGGESTION_EVENTS = ("shown", "accepted", "dismissed")


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
    _check_strings(body)
    return body


def _check_strings(body: Any) -> None:
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


@bp.post("/assignments")
def open_assignment():
    body = json_body()
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    session = begin_write(get_session())
    study_slug = body.get("study")
    if not isinstance(study_slug, str):
        raise InvalidInput("study must be the study's slug")
    study = get_study(session, study_slug)
    document = service.find_document(session, study, body.get("document"))
    assignment, created = service.open_assignment(session, study, document, body.get("worker_id"))
    session.commit()
    answer = {
        "token": assignment.token,
        "segments": len(document.segments),
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
    rows = session.scalars(
        select(Suggestion)
        .where(Suggestion.document_id == assignment.document_id)
        .order_by(Suggestion.segment, Suggestion.start)
    )
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
        for s in rows
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
    assignment = service.get_assignment(session, token, for_update=True)
    annotation, created = service.add_annotation(session, assignment, body)
    session.commit()
    return jsonify(service.annotation_json(annotation)), 201 if created else 200


@bp.delete("/assignments/<token>/annotations/<int:annotation_id>")
def remove_annotation(token: str, annotation_id: int):
    session = begin_write(get_session())
    assignment = service.get_assignment(session, token, for_update=True, related=False)
    service.remove_annotation(session, assignment, annotation_id)
    session.commit()
    return "", 204


@bp.post("/assignments/<token>/position")
def set_position(token: str):
    body = json_body()
    session = begin_write(get_session())
    assignment = service.get_assignment(session, token, for_update=True, related=False)
    service.set_position(session, assignment, body)
    session.commit()
    return "", 204


@bp.post("/assignments/<token>/submit")
def submit(token: str):
    session = begin_write(get_session())
    assignment = service.get_assignment(session, token, for_update=True)
    code = service.submit(session, assignment)
    session.commit()
    return jsonify(completion_code=code, redirect_url=after_submit_redirect(assignment))


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
