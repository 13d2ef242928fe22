"""Position and heartbeat: where the worker is, how long they were active, that they are there.

``POST /api/assignments/<token>/position`` stores the worker's segment, the segment seen, its
active seconds within the time budget (:func:`app.annotation.timing.record`) and the
suggestion events riding along (:mod:`app.annotation.hint_events`), all checked before any
write (a bad body: 400, nothing stored). It is the claim (:data:`hot_sql.CLAIM_POSITION`: the
assignment live, its position set, the activity stamped), the time budget's read, then the
seconds and events, which go with the commit. An assignment no longer active keeps its
position: only the events are stored, as ``POST …/suggestions/events`` would (also once
submitted).

``POST /api/assignments/<token>/heartbeat`` keeps an active assignment's slot: one claim, run
alone (any other assignment: nothing to keep, still 204; an unknown token: 404).
"""

from __future__ import annotations

from typing import Any

from app.annotation import assignments, hint_events, hot_sql, refusals, timing, values
from app.annotation.cache import texts_of
from app.annotation.claims import claim, keys_for
from app.annotation.handle import Handle
from app.errors import InvalidInput


def set_position(db: Handle, token: str, body: Any) -> None:
    """Store the worker's segment, its active seconds and the events riding along (see the
    module)."""
    keys = keys_for(db, token)
    count = len(texts_of(db, keys.document_id, keys.document_created_at))
    try:
        if not isinstance(body, dict):
            raise InvalidInput("the body must be a JSON object")
        segment = values._int(body, "segment")
        if not 0 <= segment < count:
            raise InvalidInput(f"segment {segment} is out of range (0..{count - 1})")
        active = timing.parse_active(body.get("active"), count)
        events = _shown_events(db, keys, body)
    except InvalidInput:
        if refusals.status(db, keys, token) == "active":
            raise
        _store_events(db, keys, _shown_events(db, keys, body) if isinstance(body, dict) else {})
        return
    if claim(db, hot_sql.CLAIM_POSITION, keys, token, segment=segment):
        moment = assignments.now()
        timing.record(db, keys, segment, active, moment)
        hint_events.insert(db, keys, events, moment)
    elif refusals.status(db, keys, token) == "active":
        raise refusals.TryAgain()
    else:
        _store_events(db, keys, events)


def heartbeat(db: Handle, token: str) -> None:
    """Keep an active assignment's slot in one statement (any other: nothing to keep)."""
    keys = keys_for(db, token)
    if not claim(db, hot_sql.CLAIM, keys, token, alone=True):
        refusals.status(db, keys, token)  # 404 when the assignment is gone


def _shown_events(db: Handle, keys: Any, body: dict[str, Any]) -> dict[str, list[int]]:
    """A position's ``events``, checked (400 for a malformed one) and narrowed to the
    suggestions the worker is shown (:func:`app.annotation.hint_events.shown_only`)."""
    return hint_events.shown_only(db, keys, hint_events.parse_events(body.get("events")))


def _store_events(db: Handle, keys: Any, events: dict[str, list[int]]) -> None:
    hint_events.insert(db, keys, events, assignments.now())
