"""Suggestion ("hint") events: a suggestion shown to a worker, accepted or dismissed, stored
once per (assignment, suggestion, event).

They reach the server three ways, all storing the same rows: one event for one suggestion
(``POST …/suggestions/<id>/events``), one event for many (``POST …/suggestions/events``),
and riding in a position update (``POST …/position`` with ``"events": {"<event>": [id, ...]}``),
so a segment view's hints cost no request of their own (issue 17). The batch and the
position refuse the whole request, storing nothing, when any id is not one of the
document's suggestions (the batch with ``404``, the position with ``400``: there it is a bad
value in the body).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation import hot_sql
from app.annotation.values import MAX_ID
from app.errors import InvalidInput, MarginaliaError, NotFound
from app.models import Suggestion, SuggestionEvent

EVENTS = ("shown", "accepted", "dismissed")
MAX_BATCH = 200  # suggestion ids per event kind in one request


def parse_event(value: Any) -> str:
    """An event's name, checked."""
    if value not in EVENTS:
        raise InvalidInput(f"event must be one of {', '.join(EVENTS)}")
    return value


def parse_ids(value: Any) -> list[int]:
    """A non-empty list of at most :data:`MAX_BATCH` suggestion ids (integers), checked."""
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in value)
    ):
        raise InvalidInput("suggestions must be a non-empty list of suggestion ids")
    if len(value) > MAX_BATCH:
        raise InvalidInput(f"at most {MAX_BATCH} suggestions per request")
    return value


def parse_events(value: Any) -> dict[str, list[int]]:
    """A position update's ``events`` field: ``{"<event>": [id, ...]}`` (absent or None: no
    events), each list as :func:`parse_ids` takes it; ids out of range are refused here."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("events must be an object of event -> list of suggestion ids")
    parsed: dict[str, list[int]] = {}
    for event, ids in value.items():
        if event not in EVENTS:
            raise InvalidInput(f"events: the keys must be among {', '.join(EVENTS)}")
        try:
            wanted = sorted(set(parse_ids(ids)))
        except InvalidInput as error:
            raise InvalidInput(f"events.{event}: {error}") from None
        outside = [i for i in wanted if not 0 < i <= MAX_ID]
        if outside:
            raise InvalidInput(f"events: this assignment's document has no suggestion {outside[0]}")
        parsed[event] = wanted
    return parsed


def record(
    session: Session,
    assignment_id: int,
    document_id: int,
    events: dict[str, list[int]],
    *,
    unknown: type[MarginaliaError] = NotFound,
) -> None:
    """Store ``events`` (event -> suggestion ids) not stored yet, all or nothing: an id that is
    not one of the document's suggestions raises ``unknown`` before anything is added."""
    wanted = {i for ids in events.values() for i in ids}
    if not wanted:
        return
    if not all(0 < i <= MAX_ID for i in wanted):
        raise unknown("this assignment's document has no such suggestion")
    owned = set(
        session.scalars(
            select(Suggestion.id).where(
                Suggestion.id.in_(wanted), Suggestion.document_id == document_id
            )
        )
    )
    if owned != wanted:
        raise unknown(f"this assignment's document has no suggestion {min(wanted - owned)}")
    for event, ids in events.items():
        stored = set(
            session.scalars(
                select(SuggestionEvent.suggestion_id).where(
                    SuggestionEvent.assignment_id == assignment_id,
                    SuggestionEvent.suggestion_id.in_(ids),
                    SuggestionEvent.event == event,
                )
            )
        )
        for suggestion_id in sorted(set(ids) - stored):
            session.add(
                SuggestionEvent(
                    assignment_id=assignment_id, suggestion_id=suggestion_id, event=event
                )
            )


def unowned_fast(db: Any, keys: Any, events: dict[str, list[int]]) -> int | None:
    """On the hot path (before any write): the smallest id in ``events`` that is not one of
    the document's suggestions, or None (one prepared ``SELECT`` per distinct id)."""
    for suggestion_id in sorted({i for ids in events.values() for i in ids}):
        owned = hot_sql.execute(
            db,
            "suggestion_owned",
            hot_sql.SUGGESTION_OWNED,
            {"suggestion_id": suggestion_id, "document_id": keys.document_id},
        ).first()
        if owned is None:
            return suggestion_id
    return None


def insert_fast(db: Any, keys: Any, events: dict[str, list[int]], moment: Any) -> None:
    """On the hot path (after :func:`unowned_fast` and the claim): one ``INSERT … ON CONFLICT
    DO NOTHING`` per (event, suggestion)."""
    for event, ids in events.items():
        for suggestion_id in ids:
            hot_sql.execute(
                db,
                "insert_event",
                hot_sql.INSERT_EVENT,
                {
                    "assignment_id": keys.id,
                    "suggestion_id": suggestion_id,
                    "event": event,
                    "now": moment,
                },
            )
