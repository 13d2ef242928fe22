"""Why a write of the hot path stored nothing, and the answer the API gives for it
(:mod:`app.annotation.fast`).

Whether an add, a remove or a position lands is decided by the claim's and the write's
``WHERE`` (:mod:`app.annotation.hot_sql`), once. These functions run on a refusal only: they
read the same conditions back (``STATE*``: the assignment's row, its status and the practice
freeze; ``EARLIER``: the annotation stored under a ``client_id``; ``duplicate_of``: the live
mark an add repeats) to word the answer: 404 for an unknown token, 409 for a frozen practice
segment or an assignment no longer active, the first annotation for a retry, 409 with
``existing_id`` for a duplicate. A condition that held again by the time it was read (an
abandoned assignment reopened in between) is a 503 "try again", which the annotate page's
outbox retries.
"""

from __future__ import annotations

from typing import Any

from app.annotation import hot_sql
from app.annotation.assignments import NO_SUCH_TOKEN, require_active
from app.annotation.practice import FROZEN
from app.errors import Conflict, MarginaliaError, NotFound

# An annotation's content: what a retry under the same client_id must repeat.
CONTENT = tuple(name for name, _column, _type in hot_sql.ANNOTATION_COLUMNS if name != "client_id")


class TryAgain(MarginaliaError):
    """The refusal's reason was gone when read: nothing was stored, the client retries."""

    status = 503

    def __init__(self) -> None:
        super().__init__("the assignment changed while this was being stored; try again")


def status(
    db: Any, keys: Any, token: str, *, segment: int | None = None, annotation_id: int | None = None
) -> str:
    """The assignment's status; 404 when it is gone, 409 when ``segment`` (an add's) or the
    segment of ``annotation_id`` (a remove's) is a checked practice segment."""
    params: dict[str, Any] = {"assignment_id": keys.id, "token": token}
    if annotation_id is not None:
        name, statement = "state_for_remove", hot_sql.STATE_FOR_REMOVE
        params["annotation_id"] = annotation_id
    elif segment is not None:
        name, statement = "state_for_add", hot_sql.STATE_FOR_ADD
        params["segment"] = segment
    else:
        name, statement = "state", hot_sql.STATE
    row = hot_sql.execute(db, name, statement, params).first()
    if row is None:
        raise NotFound(NO_SUCH_TOKEN)
    if row.frozen:
        raise Conflict(FROZEN)
    return row.status


def refuse_unless_live(db: Any, keys: Any, token: str, **frozen: int | None) -> None:
    """Raise the refusal when the claim's conditions do not hold (see :func:`status`)."""
    require_active(status(db, keys, token, **frozen))


def retry_or_duplicate(
    db: Any, dialect: str, keys: Any, client_id: str, row: dict[str, Any]
) -> Any:
    """After an add whose claim held stored nothing: the annotation first stored under
    ``client_id`` when ``row`` repeats it (a retry); else the refusal (409)."""
    params = {"assignment_id": keys.id, "client_id": client_id}
    earlier = hot_sql.execute(db, "earlier", hot_sql.EARLIER, params).first()
    if earlier is not None:
        if any(getattr(earlier, name) != row[name] for name in CONTENT):
            raise Conflict("client_id was already used for a different annotation")
        return earlier
    duplicate = hot_sql.execute(
        db, "duplicate_of", hot_sql.duplicate_of(dialect), {**row, **params}
    ).scalar()
    if duplicate is not None:
        raise Conflict(
            "you have already marked this span with this category", existing_id=duplicate
        )
    raise TryAgain()
