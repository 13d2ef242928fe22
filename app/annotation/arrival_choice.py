"""The arrival policy's choices (:mod:`app.annotation.arrive`), as Core statements built per
call on the arrival's handle: which document (the fewest taken, the next gold document of an
unqualified worker), which unengaged hold to take over, which condition.

They read; the policy's conditional insert decides. So a choice that another arrival made
stale (a document filled meanwhile) makes the insert store nothing, and the policy chooses
again.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update

from app.annotation.arrival_sql import takes_slot
from app.annotation.assigning import CONDITIONS, ScreenedOut, randomises_conditions
from app.annotation.handle import Handle
from app.annotation.qualification import qualification, qualification_state
from app.errors import Conflict
from app.models import Assignment, Document

UNCAPPED = 2**31 - 1  # the cap of a document that never fills (gold test items, the demo)


def cap_of(study: Any, is_gold: bool) -> int:
    """How many taken slots a document may have: the study's annotators per document; no
    limit for a gold document (a test item) in a study with a pass mark."""
    return UNCAPPED if is_gold and qualification(study) is not None else study.annotators_per_doc


def _had_before(study: Any, worker_id: str) -> Any:
    return select(Assignment.document_id).where(
        Assignment.study_id == study.id, Assignment.worker_id == worker_id
    )


@dataclass(frozen=True)
class Target:
    """A document an arrival may take; ``segments``: its count, when read with it."""

    id: int
    created_at: datetime
    is_gold: bool
    segments: int | None = None


def _target(row: Any) -> Target | None:
    return None if row is None else Target(row.id, row.created_at, bool(row.is_gold))


def fewest_taken(
    db: Handle, study: Any, worker_id: str, *, capped: bool = True, lock: str = ""
) -> Target | None:
    """The document with the fewest taken slots that ``worker_id`` never had (gold documents
    aside in a study with a pass mark), earliest first; with ``capped`` only one with a free
    slot; ``lock`` ("skip" or "wait"): its row locked on Postgres, skipping or waiting for
    rows others hold."""
    # Counted once, before the join (MATERIALIZED): on a database whose tables were never
    # analyzed (before autovacuum's first ANALYZE) Postgres took the count for a subquery of
    # one row and ran it again for every document, an arrival's cost growing with documents x
    # assignments (13 ms at 100 documents and 250 assignments; 2.8 ms counted once; 0.35 ms
    # either way once analyzed, docs/PERFORMANCE.md).
    taken = (
        select(Assignment.document_id, func.count().label("n"))
        .where(Assignment.study_id == study.id, *takes_slot())
        .group_by(Assignment.document_id)
        .cte("taken")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    conditions = [
        Document.study_id == study.id,
        Document.id.not_in(_had_before(study, worker_id)),
    ]
    if capped:
        conditions.append(func.coalesce(taken.c.n, 0) < study.annotators_per_doc)
    if qualification(study) is not None:
        conditions.append(Document.is_gold.is_(False))
    query = (
        select(Document.id, Document.created_at, Document.is_gold)
        .outerjoin(taken, taken.c.document_id == Document.id)
        .where(*conditions)
        .order_by(func.coalesce(taken.c.n, 0), Document.position, Document.id)
        .limit(1)
    )
    if lock:
        query = query.with_for_update(
            of=Document.__table__, key_share=True, skip_locked=lock == "skip"
        )
    return _target(db.query(query).first())


def displace_hold(db: Handle, study: Any, worker_id: str, document_id: int | None) -> int | None:
    """Take over the oldest slot (of ``document_id``, if given) held by someone who never did
    anything: that assignment becomes ``abandoned``; its document's id, or None when there is
    no such hold (a hold whose heartbeat is being saved right now is skipped on Postgres)."""
    conditions = [
        Assignment.study_id == study.id,
        Assignment.status == "active",
        Assignment.engaged_at.is_(None),
        Assignment.worker_id != worker_id,
        Assignment.document_id.not_in(_had_before(study, worker_id)),
    ]
    if document_id is not None:
        conditions.append(Assignment.document_id == document_id)
    if qualification(study) is not None:
        conditions.append(Document.is_gold.is_(False))
    hold = (
        select(Assignment.id)
        .join(Document, Document.id == Assignment.document_id)
        .where(*conditions)
        .order_by(Assignment.last_seen_at, Assignment.id)
        .limit(1)
        .with_for_update(of=Assignment.__table__, skip_locked=True)
        .correlate(None)
        .scalar_subquery()
    )
    taken_over = (
        update(Assignment)
        .where(Assignment.id == hold)
        .values(status="abandoned")
        .returning(Assignment.document_id)
    )
    return db.query(taken_over).scalar()


def gold_for_unqualified(
    db: Handle, study: Any, worker_id: str
) -> tuple[Target | None, Exception | None]:
    """In a study with a pass mark, the next gold document while ``worker_id`` has not
    qualified: the practice documents first, in order, then a qualification document drawn at
    random from those the worker has not had (their answers are never shown, so one that
    another ID of the same person saw is no easier). ``(None, None)`` once qualified or
    without a pass mark; ``(None, refusal)`` for a worker out of attempts
    (:class:`ScreenedOut`) or out of qualification documents. The qualification's state is
    read through the ORM on the handle's transaction (it scores unscored attempts)."""
    if qualification(study) is None:
        return None, None
    state = qualification_state(db.session(), study, worker_id)
    if state.qualified:
        return None, None
    if not state.can_try_again:
        return None, ScreenedOut()
    unseen = [
        Document.study_id == study.id,
        Document.is_gold.is_(True),
        Document.id.not_in(_had_before(study, worker_id)),
    ]
    columns = (Document.id, Document.created_at, Document.is_gold)
    practice = (
        select(*columns)
        .where(*unseen, Document.is_practice.is_(True))
        .order_by(Document.position, Document.id)
        .limit(1)
    )
    graded = (
        select(*columns)
        .where(*unseen, Document.is_practice.is_(False))
        .order_by(func.random())
        .limit(1)
    )
    gold = _target(db.query(practice).first() or db.query(graded).first())
    if gold is None:
        return None, Conflict("this study has no qualification documents left for you")
    return gold, None


def condition_for(db: Handle, study: Any, worker_id: str) -> str | None:
    """The worker's experimental condition: kept once given, else the less-filled one (ties
    broken at random); None when the study does not randomise conditions."""
    if not randomises_conditions(study):
        return None
    earlier = db.query(
        select(Assignment.condition)
        .where(
            Assignment.study_id == study.id,
            Assignment.worker_id == worker_id,
            Assignment.condition.is_not(None),
        )
        .order_by(Assignment.id)
        .limit(1)
    ).scalar()
    if earlier:
        return earlier
    counts = dict.fromkeys(CONDITIONS, 0)
    for condition, workers in db.query(
        select(Assignment.condition, func.count(func.distinct(Assignment.worker_id)))
        .where(Assignment.study_id == study.id, Assignment.condition.in_(CONDITIONS))
        .group_by(Assignment.condition)
    ).all():
        counts[condition] = workers
    fewest = min(counts.values())
    return secrets.choice([c for c in CONDITIONS if counts[c] == fewest])
