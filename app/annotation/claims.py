"""What every action on a token starts with: the token's keys, and the claim.

:func:`keys_for` gives the token's fixed keys from the per-process cache
(:mod:`app.annotation.cache`), or the 404 of a token no assignment has. :func:`claim` runs one
of the claims of :mod:`app.annotation.hot_sql` (an ``UPDATE assignments … WHERE`` the
assignment is live, stamping the worker's activity, locking the row): whether it took the
row is the rule's one decision; a token whose claim fails is forgotten by the cache.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Executable

from app.annotation import assignments
from app.annotation.assignments import NO_SUCH_TOKEN, TOKEN_PATTERN
from app.annotation.cache import forget_token, keys_of
from app.annotation.handle import Handle
from app.errors import NotFound


def keys_for(db: Handle, token: str) -> Any:
    """The token's keys (id, document_id, study_id, created_at, document_created_at,
    taxonomy_hash); 404 for a token no assignment has."""
    keys = keys_of(db, token) if TOKEN_PATTERN.match(token) else None
    if keys is None:
        raise NotFound(NO_SUCH_TOKEN)
    return keys


def claim(
    db: Handle, statement: Executable, keys: Any, token: str, *, alone: bool = False, **values: Any
) -> bool:
    """Run the claim ``statement`` (``alone``: committed as it runs when no transaction is
    open); False, and the token forgotten, when the assignment is not live."""
    params = {"assignment_id": keys.id, "token": token, "now": assignments.now(), **values}
    if db.run(statement, params, alone=alone).rowcount == 1:
        return True
    forget_token(db, token)
    return False
