"""A worker's edit of an annotation in place: new categories, attribute values or comment for
the same span.

Stored as history, never as an UPDATE: the old mark is removed (``removed_at``, as a Remove
does: every row of a multi-label mark) and the same span added with the new values under the
edit's ``client_id``, through :func:`app.annotation.assignments.add_annotation`'s checks
(categories, ``multi_label``, pair, attributes, comment, the exact-duplicate guard: the
add's :func:`app.annotation.values.annotation_values`), so a multi-label mark comes back as
one mark, a row per category grouped by ``mark``. The web API's route (``POST
…/annotations/<id>/edit``) first refuses an edit in a checked practice segment, as for a
remove. The caller commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation.assignments import (
    add_annotation,
    mark_json,
    mark_rows,
    now,
    own_annotation,
    require_active,
)
from app.errors import Conflict, InvalidInput
from app.models import Annotation, Assignment

EDIT_FIELDS = frozenset(("category", "categories", "attributes", "comment", "client_id"))


def edit_annotation(
    session: Session, assignment: Assignment, annotation_id: int, body: Any
) -> tuple[Annotation, bool]:
    """Change a live mark's categories, attribute values and/or comment, keeping its span (and
    its other span: a paired category changes only to another paired one). ``category`` (one)
    or ``categories`` (several, ``multi_label`` only) replace the mark's categories, and
    ``attributes`` its values, as an add takes them; what the body leaves out stays as it
    was. Stored as history: every row of the old mark removed (``removed_at``) and the same
    span added with the new values under the body's ``client_id``, through
    :func:`add_annotation`'s checks. A retry with the same ``client_id`` returns the mark it
    stored. Returns ``(annotation, created)``: the new mark's first row."""
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
    if old.mark is not None:  # a later row of a multi-label mark: the mark is edited
        old = own_annotation(session, assignment, old.mark)
    before = mark_json(session, old)
    new = _edited(before, body)
    done = session.scalar(
        select(Annotation).where(
            Annotation.assignment_id == assignment.id, Annotation.client_id == body["client_id"]
        )
    )
    if done is not None:  # a retry: the edit was stored
        return add_annotation(session, assignment, new)
    if old.removed_at is not None:
        raise Conflict("this annotation was removed or edited meanwhile: reload the page")
    if _same(before, new):
        raise InvalidInput(
            "the edit changes nothing: give new categories, attribute values or a comment"
        )
    moment = now()
    for row in [old, *mark_rows(session, old)]:
        if row.removed_at is None:
            row.removed_at = moment
    session.flush()
    return add_annotation(session, assignment, new)


def _edited(before: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The add's body for the edited mark: ``before`` (the old mark's JSON) with the body's
    categories, attributes, comment and client_id over it."""
    new = {k: v for k, v in before.items() if k not in ("id", "created_at", "categories")}
    if new["paired"] is None:
        new.pop("paired")
    if "categories" in body:
        new["categories"] = body["categories"]
        new.pop("category")
        if "category" in body:  # checked against categories' first by the add
            new["category"] = body["category"]
    elif "category" in body:
        new["category"] = body["category"]
    elif "categories" in before:
        new["categories"] = before["categories"]
    if "attributes" in body:
        new["attributes"] = body["attributes"]
    new["comment"] = body.get("comment", before["comment"])
    new["client_id"] = body["client_id"]
    return new


def _same(before: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether the edit would store the mark as it is (categories in any order)."""
    labels = new.get("categories") or [new.get("category")]
    return (
        sorted(labels, key=str) == sorted(before.get("categories") or [before["category"]])
        and (new.get("attributes") or {}) == (before.get("attributes") or {})
        and new["comment"] == before["comment"]
    )
