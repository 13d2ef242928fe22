"""Suggestion ("hint") events: a suggestion shown to a worker, accepted or dismissed, stored
once per (assignment, suggestion, event).

They reach the server three ways, all storing the same rows: one event for one suggestion
(``POST …/suggestions/<id>/events``), one event for many (``POST …/suggestions/events``),
and riding in a position update (``POST …/position`` with ``"events": {"<event>": [id, ...]}``),
so a segment view's hints cost no request of their own. Only events for the
suggestions the worker is shown are stored (:func:`shown_ids`, the payload's own rule); an
event for any other id, another document's, one below the study's score or past its hints
per segment, or any id at all where suggestions are hidden, is ignored with the same answer
(a 204-or-400 difference would tell which ids a hidden document has, and forged ``accepted``
events would reach the export). An id that is no whole number of the ids' range is
a bad value (400).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, NamedTuple

from sqlalchemy import text

from app.annotation import hot_sql
from app.annotation.claims import keys_for
from app.annotation.handle import Handle
from app.annotation.values import MAX_ID
from app.crowd.platforms import hint_limits
from app.errors import InvalidInput

EVENTS = ("shown", "accepted", "dismissed")
MAX_BATCH = 200  # suggestion ids per event kind in one request
VIEWER = text(
    "SELECT assignments.condition, studies.suggestions, studies.settings FROM assignments "
    "JOIN studies ON studies.id = assignments.study_id WHERE assignments.id = :assignment_id"
)
DOCUMENT_HINTS = text(
    "SELECT id, segment FROM suggestions WHERE document_id = :document_id AND score >= :lowest "
    "ORDER BY segment, score DESC, start_offset, id"
)


def parse_event(value: Any) -> str:
    """An event's name, checked."""
    if value not in EVENTS:
        raise InvalidInput(f"event must be one of {', '.join(EVENTS)}")
    return value


def parse_ids(value: Any) -> list[int]:
    """A non-empty list of at most :data:`MAX_BATCH` suggestion ids (integers in the ids'
    range), checked."""
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in value)
    ):
        raise InvalidInput("suggestions must be a non-empty list of suggestion ids")
    if len(value) > MAX_BATCH:
        raise InvalidInput(f"at most {MAX_BATCH} suggestions per request")
    outside = next((i for i in value if not 0 < i <= MAX_ID), None)
    if outside is not None:
        raise InvalidInput(f"{outside} is not a suggestion id (1 to {MAX_ID})")
    return value


def parse_events(value: Any) -> dict[str, list[int]]:
    """A position update's ``events`` field: ``{"<event>": [id, ...]}`` (absent or None: no
    events), each list as :func:`parse_ids` takes it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("events must be an object of event -> list of suggestion ids")
    parsed: dict[str, list[int]] = {}
    for event, ids in value.items():
        if event not in EVENTS:
            raise InvalidInput(f"events: the keys must be among {', '.join(EVENTS)}")
        try:
            parsed[event] = sorted(set(parse_ids(ids)))
        except InvalidInput as error:
            raise InvalidInput(f"events.{event}: {error}") from None
    return parsed


def pick_shown(rows: Iterable[Any], most: int) -> list[Any]:
    """The suggestions a worker is shown, from a document's rows scoring at least the study's
    lowest, in (segment, score best first, start, id) order: at most ``most`` per segment.
    The one rule of the payload (app/annotation/read.py) and of which events count."""
    kept: list[Any] = []
    per_segment: dict[int, int] = {}
    for row in rows:
        if per_segment.get(row.segment, 0) < most:
            per_segment[row.segment] = per_segment.get(row.segment, 0) + 1
            kept.append(row)
    return kept


def shown_ids(db: Handle, assignment_id: int, document_id: int) -> set[int]:
    """The ids of the suggestions this assignment's worker is shown: none in a study whose
    suggestions are hidden or off, nor in the unassisted condition."""
    viewer = db.run(VIEWER, {"assignment_id": assignment_id}, alone=True).first()
    if viewer is None or viewer.suggestions != "shown" or viewer.condition == "unassisted":
        return set()
    settings = viewer.settings
    if isinstance(settings, str):  # SQLite hands JSON back as text
        settings = json.loads(settings)
    most, lowest = hint_limits(SimpleNamespace(settings=settings))  # type: ignore[arg-type]
    params = {"document_id": document_id, "lowest": lowest}
    rows = db.run(DOCUMENT_HINTS, params, alone=True).all()
    return {row[0] for row in pick_shown((_Hint(*row) for row in rows), most)}


class _Hint(NamedTuple):
    id: int
    segment: int


def record(db: Handle, token: str, event: str, ids: list[int]) -> None:
    """The suggestion-event action (``POST …/suggestions/<id>/events``, ``POST
    …/suggestions/events``): ``event`` for the suggestions ``ids`` this worker is shown
    (:func:`shown_only`), each stored once, whatever the assignment's status; 404 for an
    unknown token."""
    keys = keys_for(db, token)
    insert(db, keys, shown_only(db, keys, {event: sorted(set(ids))}), datetime.now(UTC))


def shown_only(db: Handle, keys: Any, events: dict[str, list[int]]) -> dict[str, list[int]]:
    """``events`` narrowed to the suggestions this worker is shown (:func:`shown_ids`: two
    prepared ``SELECT``s, none when there are no events); any other id is dropped, the same
    way whatever it is, so an answer tells nothing about which ids belong to the document."""
    if not any(events.values()):
        return {}
    visible = shown_ids(db, keys.id, keys.document_id)
    kept = {event: [i for i in ids if i in visible] for event, ids in events.items()}
    return {event: ids for event, ids in kept.items() if ids}


def insert(db: Handle, keys: Any, events: dict[str, list[int]], moment: Any) -> None:
    """Store ``events`` (already :func:`shown_only`; in a position, after the claim): one
    ``INSERT … ON CONFLICT DO NOTHING`` per (event, suggestion), sent with the commit."""
    for event, ids in events.items():
        for suggestion_id in ids:
            db.later(
                hot_sql.INSERT_EVENT,
                {
                    "assignment_id": keys.id,
                    "suggestion_id": suggestion_id,
                    "event": event,
                    "now": moment,
                },
            )
