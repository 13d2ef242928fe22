"""Edit: a worker's change of a mark in place (``POST …/annotations/<id>/edit``): new
categories, attribute values or comment for the same span.

Stored as history, never as an UPDATE: the old mark is removed (every row of a multi-label
mark) and the same span added with the new values under the edit's ``client_id``, by the one
remove and the one add (:func:`app.annotation.remove.remove`, then
:func:`app.annotation.add.add`), so an edit is refused wherever a remove or an add would be
(unknown token, a checked practice segment, an assignment no longer active; the add's checks
of categories, ``multi_label``, pair, attributes and comment, the duplicate guard), by the
same SQL, and a multi-label mark comes back as one mark. The edit opens its transaction with
the live row's lock (concurrent edits of one mark wait, so the second finds it removed; an
assignment no longer live is refused at once), and the remove and the add run in it: an edit
is stored whole or not at all.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select

from app.annotation import hot_sql, refusals
from app.annotation.add import add
from app.annotation.assignments import MARK_COLUMNS, MAX_ID, annotation_json
from app.annotation.claims import keys_for
from app.annotation.handle import Handle
from app.annotation.remove import remove
from app.errors import Conflict, InvalidInput, MarginaliaError, NotFound
from app.models import Annotation

EDIT_FIELDS = frozenset(("category", "categories", "attributes", "comment", "client_id"))
_columns = Annotation.__table__.c
ANNOTATION = select(*MARK_COLUMNS, _columns.removed_at).where(
    _columns.id == bindparam("annotation_id"),
    _columns.assignment_id == bindparam("assignment_id"),
)


def edit(db: Handle, token: str, annotation_id: int, body: Any) -> tuple[dict, bool]:
    """Change a live mark's categories, attribute values and/or comment, keeping its span (and
    its other span: a paired category changes only to another paired one). ``category`` (one)
    or ``categories`` (several, ``multi_label`` only) replace the mark's categories, and
    ``attributes`` its values, as an add takes them; what the body leaves out stays as it
    was. Returns the new mark's JSON and True (``201``); a retry with the same ``client_id``:
    the mark it stored and False (``200``). Refusals come in the API's order: the
    assignment's (404, 409) before the body's (400), the annotation's (404) and a stale
    edit's (409)."""
    keys = keys_for(db, token)
    known = annotation_id if 0 < annotation_id <= MAX_ID else None
    locked = {"assignment_id": keys.id, "token": token}
    if db.run(hot_sql.lock_statement(db.dialect), locked).first() is None:  # not live
        refusals.refuse_unless_live(db, keys, token, annotation_id=known)
        raise refusals.TryAgain()  # live again by the time it was read
    try:
        new, retry = _edit_body(db, keys, annotation_id, body)
    except MarginaliaError:
        refusals.refuse_unless_live(db, keys, token, annotation_id=known)
        raise
    if not retry:
        remove(db, token, annotation_id)  # every row of the mark
    return add(db, token, new, kept_suggestion=new.get("suggestion_id"))  # the mark's own


def _edit_body(db: Handle, keys: Any, annotation_id: int, body: Any) -> tuple[dict[str, Any], bool]:
    """The add's body of the edit (the old mark's span with the new values) and whether the
    edit was stored already (its ``client_id`` is taken: a retry)."""
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    unknown = set(body) - EDIT_FIELDS
    if unknown:
        raise InvalidInput(
            f"unknown field {sorted(unknown)[0]!r} (an edit takes {', '.join(sorted(EDIT_FIELDS))})"
        )
    if not isinstance(body.get("client_id"), str):
        raise InvalidInput("client_id must be the new annotation's id (text)")
    old = _annotation(db, keys.id, annotation_id)
    if old.mark is not None:  # a later row of a multi-label mark: the mark is edited
        old = _annotation(db, keys.id, old.mark)
    before = annotation_json(old)
    mark = {"assignment_id": keys.id, "mark": old.id}
    others = [category for (category,) in db.run(hot_sql.MARK_CATEGORIES, mark).all()]
    if others:
        before["categories"] = [old.category, *others]
    new = _edited(before, body)
    taken = {"assignment_id": keys.id, "client_id": body["client_id"]}
    if db.run(hot_sql.EARLIER, taken).first() is not None:
        return new, True
    if old.removed_at is not None:
        raise Conflict("this annotation was removed or edited meanwhile: reload the page")
    if _same(before, new):
        raise InvalidInput(
            "the edit changes nothing: give new categories, attribute values or a comment"
        )
    return new, False


def _annotation(db: Handle, assignment_id: int, annotation_id: int) -> Any:
    """The assignment's annotation ``annotation_id`` (live or removed); 404 for any other."""
    found = None
    if 0 < annotation_id <= MAX_ID:
        params = {"annotation_id": annotation_id, "assignment_id": assignment_id}
        found = db.run(ANNOTATION, params).first()
    if found is None:
        raise NotFound("this assignment has no such annotation")
    return found


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
