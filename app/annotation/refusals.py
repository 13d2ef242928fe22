"""Why an action's write stored nothing, and the answer the API gives for it
(:mod:`app.annotation.add`, ``remove``, ``position``, ``edit``).

Whether an add, a remove or a position lands is decided by the claim's and the write's
``WHERE`` (:mod:`app.annotation.hot_sql`), once. These functions run on a refusal only: they
read the same conditions back (``STATE*``: the assignment's row, its status and the practice
freeze; ``EARLIER``: the annotation stored under a ``client_id``, with ``MARK_CATEGORIES``
its mark's other categories; ``duplicate_of``: the live mark an add repeats) to word the
answer: 404 for an unknown token, 409 for a frozen practice segment or an assignment no
longer active, the first annotation for a retry, 409 with ``existing_id`` for a duplicate.
A condition that held again by the time it was read (an abandoned assignment reopened in
between) is a 503 "try again", which the annotate page's outbox retries.
"""

from __future__ import annotations

import json
from typing import Any

from app.annotation import hot_sql
from app.annotation.assignments import NO_SUCH_TOKEN, require_active
from app.annotation.handle import Handle
from app.annotation.practice import FROZEN
from app.errors import Conflict, MarginaliaError, NotFound

# An annotation's content: what a retry under the same client_id must repeat (with its
# attributes, compared as values, and its mark's categories).
CONTENT = tuple(
    name
    for name, _column, _type in hot_sql.ANNOTATION_COLUMNS
    if name not in ("client_id", "attributes_json")
)


class TryAgain(MarginaliaError):
    """The refusal's reason was gone when read: nothing was stored, the client retries."""

    status = 503

    def __init__(self) -> None:
        super().__init__("the assignment changed while this was being stored; try again")


def status(
    db: Handle,
    keys: Any,
    token: str,
    *,
    segment: int | None = None,
    annotation_id: int | None = None,
) -> str:
    """The assignment's status; 404 when it is gone, 409 when ``segment`` (an add's) or the
    segment of ``annotation_id`` (a remove's) is a checked practice segment."""
    params: dict[str, Any] = {"assignment_id": keys.id, "token": token}
    if annotation_id is not None:
        statement = hot_sql.STATE_FOR_REMOVE
        params["annotation_id"] = annotation_id
    elif segment is not None:
        statement = hot_sql.STATE_FOR_ADD
        params["segment"] = segment
    else:
        statement = hot_sql.STATE
    row = db.run(statement, params, alone=True).first()
    if row is None:
        raise NotFound(NO_SUCH_TOKEN)
    if row.frozen:
        raise Conflict(FROZEN)
    return row.status


def refuse_unless_live(db: Handle, keys: Any, token: str, **frozen: int | None) -> None:
    """Raise the refusal when the claim's conditions do not hold (see :func:`status`)."""
    require_active(status(db, keys, token, **frozen))


def retry_or_duplicate(
    db: Handle, keys: Any, client_id: str, row: dict[str, Any], labels: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """After an add whose claim held stored nothing: the annotation first stored under
    ``client_id`` (its fields, ``attributes`` decoded) and its mark's categories when ``row``
    and ``labels`` repeat them (a retry); else the refusal (409)."""
    params = {"assignment_id": keys.id, "client_id": client_id}
    earlier = db.run(hot_sql.EARLIER, params, alone=True).first()
    if earlier is None:
        refuse_duplicate(db, {**row, **params})
    fields = earlier._asdict()
    stored = fields.pop("attributes_json")  # JSON text on SQLite, decoded by Postgres's driver
    fields["attributes"] = json.loads(stored) if isinstance(stored, str) else stored
    mark = {"assignment_id": keys.id, "mark": earlier.id}
    read = db.run(hot_sql.MARK_CATEGORIES, mark, alone=True)
    others = [category for (category,) in read.all()]
    if (
        any(fields[name] != row[name] for name in CONTENT)
        or fields["attributes"] != row["attributes"]
        or [earlier.category, *others] != labels
    ):
        raise Conflict("client_id was already used for a different annotation")
    return fields, labels


def refuse_duplicate(db: Handle, params: dict[str, Any]) -> None:
    """An add's insert stored nothing though its claim held and its ``client_id`` is new:
    409 naming the live mark it duplicates (its first row's id), else "try again"."""
    duplicate = db.run(hot_sql.duplicate_of(db.dialect), params, alone=True).scalar()
    if duplicate is not None:
        raise Conflict(
            "you have already marked this span with this category", existing_id=duplicate
        )
    raise TryAgain()
