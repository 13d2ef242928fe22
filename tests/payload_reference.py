"""The annotate page's payload built from ORM objects, every part read on every request (as
``GET /api/assignments/<token>`` first answered it): the reference the lean read
(:mod:`app.annotation.read`, spliced by :mod:`app.web.worker_api`) must match byte for byte."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from app.annotation import assignments as service
from app.annotation import practice
from app.annotation.cache import source_texts
from app.crowd.platforms import hint_limits
from app.models import Annotation, Entity, EntityMention, Suggestion


def _entities(session, document_id: int) -> tuple[list[dict], list[dict]]:
    entities = session.scalars(
        select(Entity)
        .where(Entity.document_id == document_id)
        .order_by(Entity.first_segment, Entity.id)
    )
    mentions = session.scalars(
        select(EntityMention)
        .where(EntityMention.document_id == document_id)
        .order_by(EntityMention.segment, EntityMention.start, EntityMention.id)
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
            service.annotation_json(a)
            for a in session.scalars(
                select(Annotation)
                .where(Annotation.assignment_id == assignment.id, Annotation.removed_at.is_(None))
                .order_by(Annotation.id)
            )
        ],
        **practice.payload(session, assignment),
    }
