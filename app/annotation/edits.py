"""A worker's edit of an annotation in place: a new category or comment for the same span.

Stored as history, never as an UPDATE: the old row is removed (``removed_at``, as a Remove
does) and the same span added with the new values under the edit's ``client_id``, through
:func:`app.annotation.assignments.add_annotation`'s checks (category, pair, comment, the
exact-duplicate guard). The web API's route (``POST …/annotations/<id>/edit``) first refuses
an edit in a checked practice segment, as for a remove. The caller commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation.assignments import (
    add_annotation,
    annotation_json,
    now,
    own_annotation,
    require_active,
)
from app.errors import Conflict, InvalidInput
from app.models import Annotation, Assignment

EDIT_FIELDS = frozenset(("category", "comment", "client_id"))


def edit_annotation(
    session: Session, assignment: Assignment, annotation_id: int, body: Any
) -> tuple[Annotation, bool]:
    """Change a live annotation's category and/or comment, keeping its span (and its earlier
    span: a paired category changes only to another paired one). Stored as history: the old
    row is removed (``removed_at``) and the same span added with the new values under the
    body's ``client_id``, through :func:`add_annotation`'s checks. A retry with the same
    ``client_id`` returns the annotation it stored. Returns ``(annotation, created)``."""
    require_active(assignment)
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    unknown = set(body) - EDIT_FIELDS
    if unknown:
        raise InvalidInput(
            f"unknown field {sorted(unknown)[0]!r} (an edit takes {', '.join(sorted(EDIT_FIELDS))})"
        )
    if not isinstance(body.get("client_id"), str):
        raise InvalidInput("client_id must be the new annotation's id (text)")
    old = own_annotation(session, assignment, annotation_id)
    new = annotation_json(old)
    new.update(
        category=body.get("category", old.category),
        comment=body.get("comment", old.comment),
        client_id=body["client_id"],
    )
    for key in ("id", "created_at"):
        new.pop(key)
    if new["paired"] is None:
        new.pop("paired")
    done = session.scalar(
        select(Annotation).where(
            Annotation.assignment_id == assignment.id, Annotation.client_id == body["client_id"]
        )
    )
    if done is not None:  # a retry: the edit was stored
        return add_annotation(session, assignment, new)
    if old.removed_at is not None:
        raise Conflict("this annotation was removed or edited meanwhile: reload the page")
    if new["category"] == old.category and new["comment"] == old.comment:
        raise InvalidInput("the edit changes nothing: give a new category or comment")
    old.removed_at = now()
    session.flush()
    return add_annotation(session, assignment, new)
