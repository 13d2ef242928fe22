"""Time and pay (docs/METRICS.md, "Sessions, time and pay"): the median active minutes per
document and per session, from the active time the annotate page already measures
(``segment_times``), and the hourly rate the study's reward per session implies at the
median session, so a researcher can set the documents per session and the reward to a fair
hourly rate (Prolific asks for one).

* **Per document**: each real document done (an assignment ``submitted`` or ``rejected`` of a
  document that is not a training document: the counted-work rule,
  :func:`app.rules.work.assignment_filter`, decides it alone) with any measured time: its
  active seconds summed over its segments. The median of those, in minutes.
* **Per session**: each finished session (:mod:`app.annotation.session_list`) with any
  measured time: the active seconds of every assignment in it summed (the training phase and
  a document left open included: the participant spent that time in the session). The
  median of those, in minutes.
* **Hourly rate**: the reward per session divided by the median session in hours, rounded to
  the cent; none without a reward or a measured finished session.
"""

from __future__ import annotations

import statistics
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.annotation.session_list import session_rows
from app.annotation.session_settings import session_rule
from app.models import Assignment, Document, SegmentTime
from app.rules.work import Work, assignment_filter


def active_seconds(db: Session, study: Any) -> dict[int, float]:
    """Assignment id -> its active seconds summed over its segments (measured ones only)."""
    return dict(
        db.execute(
            select(SegmentTime.assignment_id, func.sum(SegmentTime.active_seconds))
            .join(Assignment, Assignment.id == SegmentTime.assignment_id)
            .where(Assignment.study_id == study.id)
            .group_by(SegmentTime.assignment_id)
        ).all()
    )


def _minutes(values: list[float]) -> float | None:
    return round(statistics.median(values) / 60, 2) if values else None


def time_and_pay(db: Session, study: Any) -> dict[str, Any]:
    """The figures of the module's docstring, as the dashboard shows them."""
    seconds = active_seconds(db, study)
    done = db.scalars(  # done: submitted or rejected later; the training phase left out there
        select(Assignment.id)
        .join(Document, Document.id == Assignment.document_id)
        .where(*assignment_filter(study, Work(rejected=True)))
    ).all()
    per_document = [seconds[assignment] for assignment in done if assignment in seconds]
    per_session = []
    for row in session_rows(db, study):
        measured = [seconds[a] for a in row.assignments if a in seconds]
        if row.state == "finished" and measured:
            per_session.append(sum(measured))
    rule = session_rule(study)
    rate = None
    if rule.reward is not None and per_session and statistics.median(per_session) > 0:
        hours = Decimal(str(statistics.median(per_session))) / Decimal(3600)
        rate = (rule.reward / hours).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return {
        "documents_per_session": rule.documents,
        "documents": len(per_document),
        "median_minutes_per_document": _minutes(per_document),
        "sessions": len(per_session),
        "median_minutes_per_session": _minutes(per_session),
        "reward": None if rule.reward is None else f"{rule.reward:.2f}",
        "currency": rule.currency,
        "hourly_rate": None if rate is None else f"{rate:.2f}",
    }
