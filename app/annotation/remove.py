"""Remove: a worker takes a mark back (``DELETE /api/assignments/<token>/annotations/<id>``).

One pair of statements (:func:`app.annotation.hot_sql.remove_statements`), run ``alone`` (on
Postgres one round trip the server commits): the claim (the assignment live, the mark's
segment not a checked practice segment) and the write, which stamps ``removed_at`` on every
row of the mark (a multi-label mark's rows name its first in ``mark``; any of them takes them
all) and is idempotent (a removed mark stays removed, its first time kept). Rows are never
deleted. When it removes nothing, :mod:`app.annotation.refusals` words why (404 for a token
or an annotation the assignment does not have, 409 for a frozen segment or an assignment no
longer active).
"""

from __future__ import annotations

from app.annotation import assignments, hot_sql, refusals
from app.annotation.assignments import MAX_ID
from app.annotation.claims import keys_for
from app.annotation.handle import Handle
from app.errors import NotFound


def remove(db: Handle, token: str, annotation_id: int) -> None:
    """Mark annotation ``annotation_id`` of the token's assignment removed, with every row of
    its mark; refuse (having changed nothing) when it cannot be."""
    keys = keys_for(db, token)
    known = 0 < annotation_id <= MAX_ID
    if known:
        params = {
            "assignment_id": keys.id,
            "token": token,
            "annotation_id": annotation_id,
            "now": assignments.now(),
        }
        claim, write = hot_sql.remove_statements(db.dialect)
        if db.pair(claim, write, params, alone=True).rows:
            return
    refusals.refuse_unless_live(db, keys, token, annotation_id=annotation_id if known else None)
    raise NotFound("this assignment has no such annotation")
