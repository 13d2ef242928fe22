"""A study's sessions as the researcher sees them (the Workers page, the pay figures): each
session's worker, platform visit, documents done of K and state.

A session's state (docs/METRICS.md, "Sessions, time and pay"), first that holds:

* ``screened_out``: one of its assignments is (the training phase's end);
* ``finished``: it ended early, or K real documents are done (submitted, or rejected later
  by the researcher: the participant did them) — the rule of
  :attr:`app.annotation.sessions.Facts.finished`;
* ``returned``: nothing of it has been seen for the abandon timeout (the participant left
  or returned the study on the platform; what they submitted counts, an open document's slot
  goes to the next arrival);
* ``started``: otherwise (a document open, or between two).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation.assigning import abandon_after
from app.annotation.assignments import now
from app.annotation.sessions import DONE
from app.models import Assignment, Document, WorkSession
from app.rules.work import is_practice

STATES = ("started", "finished", "returned", "screened_out")
VISIT_KEYS = {"prolific": "session_id", "mturk": "assignment_id"}


@dataclass
class SessionRow:
    id: int
    worker_id: str
    platform: str
    visit: str | None  # Prolific's SESSION_ID, MTurk's assignmentId
    started_at: datetime
    documents: int
    done: int = 0
    state: str = "started"
    assignments: list[int] = field(default_factory=list)


def session_state(
    *,
    done: int,
    documents: int,
    ended_early: bool,
    screened_out: bool,
    last_seen: datetime | None,
    cutoff: datetime,
) -> str:
    """The state of a session (see the module)."""
    if screened_out:
        return "screened_out"
    if ended_early or done >= documents:
        return "finished"
    if last_seen is not None and _aware(last_seen) < cutoff:
        return "returned"
    return "started"


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def session_rows(db: Session, study: Any) -> list[SessionRow]:
    """Every session of the study, oldest first, with its state."""
    sessions = db.scalars(
        select(WorkSession).where(WorkSession.study_id == study.id).order_by(WorkSession.id)
    ).all()
    found = db.execute(
        select(
            Assignment.id,
            Assignment.session_id,
            Assignment.status,
            Assignment.platform_data,
            Assignment.last_seen_at,
            Assignment.submitted_at,
            is_practice([study]).label("training"),
        )
        .join(Document, Document.id == Assignment.document_id)
        .where(Assignment.study_id == study.id, Assignment.session_id.is_not(None))
        .order_by(Assignment.id)
    ).all()
    of_session: dict[int, list[Any]] = defaultdict(list)
    for row in found:
        of_session[row.session_id].append(row)
    cutoff = now() - abandon_after(study)
    rows = []
    for work in sessions:
        mine = of_session.get(work.id, [])
        real = [a for a in mine if not a.training]  # the training phase's are not the K
        seen = [_aware(m) for a in mine for m in (a.last_seen_at, a.submitted_at) if m]
        key = VISIT_KEYS.get(work.platform)
        visits = [(a.platform_data or {}).get(key) for a in mine] if key else []
        row = SessionRow(
            id=work.id,
            worker_id=work.worker_id,
            platform=work.platform,
            visit=next((v for v in visits if v), None),
            started_at=work.started_at,
            documents=work.documents,
            done=sum(1 for a in real if a.status in DONE),
            assignments=[a.id for a in mine],
        )
        row.state = session_state(
            done=row.done,
            documents=work.documents,
            ended_early=work.ended_early_at is not None,
            screened_out=any(a.status == "screened_out" for a in mine),
            last_seen=max(seen) if seen else _aware(work.started_at),
            cutoff=cutoff,
        )
        rows.append(row)
    return rows
