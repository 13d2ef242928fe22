"""Time on task: the annotate page's active seconds per segment, stored per (assignment,
segment), and the study's time rules (``docs/METRICS.md``, "Active time").

The page sends, with each position update, the active seconds it measured since its last
report: ``{"segment": N, "active": {"<segment>": seconds, ...}}``. A value must be a finite
number >= 0 (else 400, nothing stored). The **time budget** (:func:`budget`): a report adds
at most the wall-clock time since the assignment's previous report (or its opening) plus
:data:`SLACK_SECONDS`, and never takes the assignment's stored total past the wall-clock
time since its opening plus :data:`SLACK_SECONDS`, however the reports are split (so the
slack is granted once over the assignment, not once per report); a larger claim is scaled
down to the budget, so forged values add no more time than really passed. A row exists for every segment the worker has
reached (seen), with 0 seconds if none were reported.

Study settings (``study.settings``): ``min_seconds_per_segment`` (a worker whose median is
below it is flagged a speeder; absent: no flag), ``require_all_segments_seen`` (true: submit
is refused until every segment was reached).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from app.annotation import hot_sql
from app.annotation.handle import Handle
from app.documents.numbers import finite_number
from app.errors import Conflict, InvalidInput
from app.models import Assignment, Study

SLACK_SECONDS = 5.0


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_active(value: Any, count: int) -> dict[int, float]:
    """The ``active`` field checked: segment index -> seconds (finite, >= 0, in range); a
    refusal names the entry (``active.<key>``)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("active must be an object of segment index -> seconds")
    if len(value) > count:
        raise InvalidInput("active names more segments than the document has")
    parsed: dict[int, float] = {}
    for key, seconds in value.items():
        # ASCII digits only: "²".isdigit() is true and int("²") fails
        if not isinstance(key, str) or not key.isascii() or not key.isdigit() or len(key) > 9:
            raise InvalidInput(f"active: keys must be segment indexes, not {str(key)[:20]!r}")
        index = int(key)
        if index >= count:
            raise InvalidInput(f"active: segment {index} is out of range (0..{count - 1})")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise InvalidInput(f"active.{key}: seconds must be numbers")
        parsed[index] = finite_number(seconds, f"active.{key}: seconds", 0)
    return parsed


def budget(moment: datetime, opened: datetime, last: datetime | None, total: float) -> float:
    """The seconds a report at ``moment`` may add: the wall-clock time since the previous
    report (or the opening) plus :data:`SLACK_SECONDS`, and no more than the time since the
    opening plus :data:`SLACK_SECONDS` less the ``total`` stored (never below 0)."""
    opened = _aware(opened)
    since_open = (moment - opened).total_seconds()
    since_last = (
        moment - max(opened, _aware(last) if last is not None else opened)
    ).total_seconds()
    return max(0.0, min(since_last, since_open - total) + SLACK_SECONDS)


def record(db: Handle, keys: Any, segment: int, active: dict[int, float], moment: datetime) -> None:
    """Mark ``segment`` seen and add ``active`` (scaled down to the :func:`budget`) to the
    assignment's rows (``keys``: its ``id`` and ``created_at``), after the claim took its
    row: the last report's time and the stored total, then one upsert of every segment's
    seconds."""
    last, total = db.run(hot_sql.REPORTED, {"assignment_id": keys.id}).first()
    allowed = budget(moment, keys.created_at, last, total or 0.0)
    claimed = sum(active.values())
    scale = min(1.0, allowed / claimed) if claimed > 0 else 1.0
    seconds = {
        # Down to the millisecond, so the rounded seconds never add up past the budget.
        str(index): math.floor(active.get(index, 0.0) * scale * 1000 + 1e-6) / 1000
        for index in sorted(set(active) | {segment})
    }
    db.later(  # with the commit
        hot_sql.add_seconds(db.dialect),
        {"assignment_id": keys.id, "seconds": json.dumps(seconds), "now": moment},
    )


def requires_all_seen(study: Study) -> bool:
    """Whether the study refuses a submit before every segment was reached."""
    return bool((study.settings or {}).get("require_all_segments_seen"))


def require_seen(db: Handle, assignment: Assignment, segments: Callable[[], int]) -> None:
    """With ``require_all_segments_seen``, refuse a submit before every one of the document's
    ``segments()`` segments was reached (no query unless the study sets it)."""
    if not requires_all_seen(assignment.study):
        return
    count = segments()
    rows = db.run(hot_sql.SEEN, {"assignment_id": assignment.id}).all()
    seen = {segment for (segment,) in rows} | {0, assignment.current_segment}
    missing = [i for i in range(count) if i not in seen]
    if missing:
        raise Conflict(
            f"please read every segment before submitting: segment {missing[0] + 1} of "
            f"{count} has not been opened yet"
        )


def min_seconds_per_segment(study: Study) -> float | None:
    value = (study.settings or {}).get("min_seconds_per_segment")
    return float(value) if value is not None else None


def apply_settings(
    study: Study,
    *,
    min_seconds: float | None = None,
    clear_min: bool = False,
    require_seen: bool | None = None,
) -> dict[str, Any]:
    """Change the time settings (validated); returns them."""
    settings = dict(study.settings or {})
    if min_seconds is not None:
        if not math.isfinite(min_seconds) or not 0 < min_seconds <= 3600:
            raise InvalidInput("min_seconds_per_segment must be more than 0 and at most 3600")
        settings["min_seconds_per_segment"] = min_seconds
    if clear_min:
        settings.pop("min_seconds_per_segment", None)
    if require_seen is not None:
        settings["require_all_segments_seen"] = bool(require_seen)
    study.settings = settings
    return describe(study)


def describe(study: Study) -> dict[str, Any]:
    settings = study.settings or {}
    return {
        "min_seconds_per_segment": min_seconds_per_segment(study),
        "require_all_segments_seen": bool(settings.get("require_all_segments_seen")),
    }
