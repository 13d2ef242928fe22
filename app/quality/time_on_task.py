"""Time on task per worker (``docs/METRICS.md``, "Active time"): the median active seconds
per segment and the speeder flag.

A worker's segments are every segment of each of their submitted assignments that has any
measured time (assignments without a single ``segment_times`` row, imported work or scripts,
are left out); a segment without a row counts 0 seconds. The median is the middle value of
those (mean of the two middle ones for an even count). A worker is a *speeder* when the
study sets ``min_seconds_per_segment`` and their median is below it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from itertools import groupby
from operator import itemgetter
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Assignment, Document, Segment, SegmentTime, Study
from app.rules.work import Work, assignment_filter, document_filter, stream

# The pages about a worker count their rejected work's time too (app/rules/work.py)
COUNTED = Work(rejected=True)


def segment_seconds(session: Session, assignment_ids: Iterable[int]) -> dict[int, dict[int, float]]:
    """Assignment id -> {segment index: active seconds} for the rows that exist."""
    ids = list(assignment_ids)
    found: dict[int, dict[int, float]] = defaultdict(dict)
    for start in range(0, len(ids), 500):
        for aid, segment, seconds in session.execute(
            select(
                SegmentTime.assignment_id, SegmentTime.segment, SegmentTime.active_seconds
            ).where(SegmentTime.assignment_id.in_(ids[start : start + 500]))
        ):
            found[aid][segment] = seconds
    return dict(found)


def per_segment_values(seconds: dict[int, float], count: int) -> list[float]:
    """Every segment's seconds (0 where none were measured) of one measured assignment."""
    return [seconds.get(i, 0.0) for i in range(count)]


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def is_speeder(median: float | None, minimum: float | None) -> bool:
    return minimum is not None and median is not None and median < minimum


def worker_times(
    session: Session,
    study: Study,
    *,
    work: Work = COUNTED,
) -> dict[str, dict[str, Any]]:
    """Worker ID -> ``median_seconds_per_segment``, ``active_seconds`` (total), ``measured``
    (segments counted), ``speeder``; over their assignments of ``work`` (:mod:`app.rules.work`:
    submitted, and rejected by default; not on the practice documents of a training phase
    unless ``work.include_practice``)."""
    counting = document_filter(study, work)
    counts = dict(
        session.execute(
            select(Segment.document_id, func.count())
            .join(Document, Document.id == Segment.document_id)
            .where(*counting)
            .group_by(Segment.document_id)
        ).all()
    )
    # streamed an assignment at a time: a big study's rows never all in memory
    query = (
        select(
            Assignment.id,
            Assignment.worker_id,
            Assignment.document_id,
            SegmentTime.segment,
            SegmentTime.active_seconds,
        )
        .join(SegmentTime, SegmentTime.assignment_id == Assignment.id)
        .join(Document, Document.id == Assignment.document_id)
        .where(*assignment_filter(study, work))
        .order_by(Assignment.id)
    )
    values: dict[str, list[float]] = defaultdict(list)
    for _, found in groupby(stream(session, query), key=itemgetter(0)):
        rows = list(found)
        seconds = {row.segment: row.active_seconds for row in rows}
        values[rows[0].worker_id] += per_segment_values(seconds, counts.get(rows[0].document_id, 0))
    value = (study.settings or {}).get("min_seconds_per_segment")
    minimum = float(value) if value is not None else None
    result = {}
    for worker, found in values.items():
        median = median_or_none(found)
        result[worker] = {
            "median_seconds_per_segment": median,
            "active_seconds": round(sum(found), 3),
            "measured": len(found),
            "speeder": is_speeder(median, minimum),
        }
    return result


def add_to_report(
    session: Session, study: Study, workers: list[dict[str, Any]], *, include_practice: bool = False
) -> None:
    """The report's worker rows gain ``active_seconds_per_segment`` (median) and ``speeder``."""
    times = worker_times(session, study, work=Work(include_practice=include_practice))
    for row in workers:
        found = times.get(row["worker_id"], {})
        row["active_seconds_per_segment"] = found.get("median_seconds_per_segment")
        row["speeder"] = bool(found.get("speeder"))
