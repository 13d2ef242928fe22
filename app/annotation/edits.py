"""A worker's edit of an annotation in place: a new category or comment for the same span.

Stored as history, never as an UPDATE: the old row is removed and the same span added with
the new values under the edit's ``client_id``, by the hot path's own actions
(:func:`app.annotation.fast.remove`, then :func:`app.annotation.fast.add`), so an edit is
refused wherever a remove or an add would be (unknown token, a checked practice segment, an
assignment no longer active; the add's checks of category, pair and comment, the duplicate
guard), by the same SQL. Both run in the caller's transaction, which commits what this
returns and rolls back on a refusal: an edit is stored whole or not at all.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation import fast, refusals
from app.annotation.assignments import MAX_ID, annotation_json, get_assignment, own_annotation
from app.errors import Conflict, InvalidInput, MarginaliaError
from app.models import Annotation, Assignment

EDIT_FIELDS = frozenset(("category", "comment", "client_id"))


def edit(session: Session, token: str, annotation_id: int, body: Any) -> tuple[dict, bool]:
    """Change a live annotation's category and/or comment, keeping its span (and its earlier
    span: a paired category changes only to another paired one). Returns the new
    annotation's JSON and True (``201``); a retry with the same ``client_id``: the
    annotation it stored and False (``200``). Refusals come in the API's order: the
    assignment's (404, 409) before the body's (400), the annotation's (404) and a stale
    edit's (409)."""
    # Concurrent edits of one annotation wait here, so the second finds it removed.
    assignment = get_assignment(session, token, for_update=True, related=False)
    try:
        new, retry = _edited(session, assignment, annotation_id, body)
    except MarginaliaError:
        known = annotation_id if 0 < annotation_id <= MAX_ID else None
        refusals.refuse_unless_live(
            session, fast.keys_of(session, token), token, annotation_id=known
        )
        raise
    if not retry:
        fast.remove(session, token, annotation_id)
    return fast.add(session, token, new)


def _edited(
    session: Session, assignment: Assignment, annotation_id: int, body: Any
) -> tuple[dict[str, Any], bool]:
    """The add's body of the edit (the old annotation's span with the new values) and whether
    the edit was stored already (its ``client_id`` is taken: a retry)."""
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
    taken = session.scalar(
        select(Annotation.id).where(
            Annotation.assignment_id == assignment.id, Annotation.client_id == body["client_id"]
        )
    )
    if taken is not None:
        return new, True
    if old.removed_at is not None:
        raise Conflict("this annotation was removed or edited meanwhile: reload the page")
    if new["category"] == old.category and new["comment"] == old.comment:
        raise InvalidInput("the edit changes nothing: give a new category or comment")
    return new, False
