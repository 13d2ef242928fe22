"""The statements an arrival runs, built once, and its locks.

Building a statement (its clauses, its cache key) costs more Python than sending it: the
arrival policy (:mod:`app.annotation.arrive`) binds the values per call. On Postgres an
arrival locks its
worker ID (a transaction-level advisory lock) and then only the document it takes (its row,
``FOR NO KEY UPDATE``, which foreign-key checks do not wait for), so arrivals on different
documents of one study do not wait for each other; only a study whose rule reads the whole
study (balanced conditions, the qualification phase, the demo) still takes the study's row
lock. SQLite writers are serial anyway: :func:`locks` gives no lock statements there.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Executable,
    Integer,
    and_,
    bindparam,
    cast,
    exists,
    func,
    literal_column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from app.models import Assignment, Document, Segment, Study, WorkerReview
from app.rules.work import human_worker

TAKEN = ("active", "submitted")


def _sql_text(value: str) -> Any:
    """A constant spelt in the SQL (no parameter of its own: a prebuilt statement is sent
    with only the caller's named values, app/annotation/handle.py)."""
    if "'" in value:
        raise ValueError(value)
    return literal_column(f"'{value}'")


ACTIVE = _sql_text("active")
INSERT_IF_NEW = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}

# Serialise arrivals per study (Postgres row lock; SQLite writers are serial anyway).
LOCK_STUDY = select(Study.id).where(Study.id == bindparam("study_id")).with_for_update()
# Serialise one worker ID's arrivals in a study (Postgres; a hash collision only makes two
# IDs wait for each other): one active assignment per worker ID.
_WORKER_LOCK = func.pg_advisory_xact_lock(
    cast(bindparam("study_id"), Integer), func.hashtext(bindparam("worker_id"))
)
LOCK_WORKER = select(_WORKER_LOCK)
# The one document an arrival takes: every insert into a document's slots holds this lock
# until it commits, so its taken slots counted afterwards (a new statement, a new snapshot
# under READ COMMITTED) are exact.
LOCK_DOCUMENT = (
    select(Document.id)
    .where(Document.id == bindparam("document_id"))
    .with_for_update(key_share=True)
)
# Both in one round trip, the worker ID first (the target list is computed below the row
# lock), before the arrival's conditional insert (INSERT_IF_ALLOWED).
LOCK_WORKER_AND_DOCUMENT = (
    select(_WORKER_LOCK)
    .select_from(Document)
    .where(Document.id == bindparam("document_id"))
    .with_for_update(of=Document, key_share=True)
)
# A document locked and found full is let go (row locks taken after a savepoint are released
# by rolling back to it) before the arrival waits for another: two arrivals each holding a
# full document and waiting for the other's would deadlock.
SAVEPOINT = text("SAVEPOINT claim")
ROLLBACK_TO_SAVEPOINT = text("ROLLBACK TO SAVEPOINT claim")

# Stale active assignments of the study become abandoned: not seen since ``cutoff``, or never
# engaged and not seen since ``hold_cutoff``.
# Their rows are locked in id order first: two arrivals releasing the same stale rows at once
# wait for each other instead of deadlocking (Postgres).
_STALE = (
    Assignment.study_id == bindparam("in_study"),  # an UPDATE reserves "study_id"
    Assignment.status == ACTIVE,
    or_(
        Assignment.last_seen_at < bindparam("cutoff"),
        and_(Assignment.engaged_at.is_(None), Assignment.last_seen_at < bindparam("hold_cutoff")),
    ),
)
RELEASE = (
    update(Assignment)
    .where(
        *_STALE,
        Assignment.id.in_(
            select(Assignment.id)
            .where(*_STALE)
            .order_by(Assignment.id)
            .with_for_update()
            .correlate(None)
        ),
    )
    .values(status=_sql_text("abandoned"))
    .execution_options(synchronize_session=False)
)

_WORKER_HERE = (
    Assignment.study_id == bindparam("study_id"),
    Assignment.worker_id == bindparam("worker_id"),
)
_ACTIVE_HERE = exists().where(*_WORKER_HERE, Assignment.status == ACTIVE)
_HAD_DOCUMENT = exists().where(*_WORKER_HERE, Assignment.document_id == bindparam("document_id"))
_BLOCKED = exists().where(
    WorkerReview.study_id == bindparam("study_id"),
    WorkerReview.worker_id == bindparam("worker_id"),
    WorkerReview.blocked.is_(True),
)


def takes_slot() -> tuple[Any, ...]:
    """The one rule of a taken slot: a human's assignment, active or submitted (an LLM
    annotator's takes none: its work stays out of the humans' figures, app/rules/work.py).
    Its constants are spelt in the SQL, so prebuilt statements carry it too."""
    return Assignment.status.in_([_sql_text(status) for status in TAKEN]), human_worker()


def _taken_slots(document: str) -> Any:
    """A document's taken slots (its id bound as ``document``)."""
    return select(func.count()).where(Assignment.document_id == bindparam(document), *takes_slot())


TAKEN_SLOTS = _taken_slots("document_id")
# A proven return to an abandoned assignment reopens it while its document has a free slot
# (the same count as INSERT_IF_ALLOWED's, after the document's lock).
REOPEN = (
    update(Assignment)
    .where(
        Assignment.id == bindparam("assignment_id"),
        Assignment.status == _sql_text("abandoned"),
        _taken_slots("of_document").scalar_subquery() < bindparam("cap"),
    )
    .values(status=ACTIVE)
    .returning(Assignment.id)
    .execution_options(synchronize_session=False)
)

# Why an arrival's conditional insert stored nothing, read to word the refusal: whether the
# worker ID has an active assignment, whether they had ``document_id`` before, its taken
# slots, whether the worker is blocked; and whether releasing the study's stale holds (RELEASE)
# would change that: the worker's own active assignment stale, a stale hold on the document.
# One round trip.
ARRIVAL_STATE = select(
    _ACTIVE_HERE.label("active"),
    _HAD_DOCUMENT.label("had"),
    TAKEN_SLOTS.scalar_subquery().label("taken"),
    _BLOCKED.label("blocked"),
    exists().where(*_STALE, Assignment.worker_id == bindparam("worker_id")).label("mine_stale"),
    exists()
    .where(*_STALE, Assignment.document_id == bindparam("document_id"))
    .label("document_stale"),
)

# An arrival through the API: the study's columns that decide it and the document it names
# (none: every document column NULL), with its number of segments (the arrival's answer).
NAMED_TARGET = (
    select(
        Study.id.label("study_id"),
        Study.slug,
        Study.status,
        Study.annotators_per_doc,
        Study.settings,
        Document.id.label("document_id"),
        Document.created_at.label("document_created_at"),
        Document.is_gold,
        select(func.count())
        .where(Segment.document_id == Document.id)
        .scalar_subquery()
        .label("segments"),
    )
    .select_from(Study)
    .outerjoin(
        Document,
        and_(Document.study_id == Study.id, Document.external_id == bindparam("external_id")),
    )
    .where(Study.slug == bindparam("slug"))
)


def _insert_if_allowed(dialect: str) -> Executable:
    """The new assignment inserted only where the arrival policy allows it: no active
    assignment of the worker ID here, the document never theirs before, a free slot (fewer
    taken than ``cap``: the study's annotators per document), the worker not blocked. Its
    id, or no row (the policy then reads ARRIVAL_STATE to word why, or frees a slot)."""
    table = Assignment.__table__
    columns = [c for c in table.columns if c.name != "id"]
    values = [
        # Postgres types a parameter in a SELECT list as text: cast to the column's type
        # (not on SQLite, where CAST(... AS JSON) would give a number)
        cast(bindparam(c.name, type_=c.type), c.type)
        if dialect == "postgresql"
        else bindparam(c.name, type_=c.type)
        for c in columns
    ]
    allowed = select(*values).where(
        ~_ACTIVE_HERE,
        ~_HAD_DOCUMENT,
        TAKEN_SLOTS.scalar_subquery() < bindparam("cap"),
        ~_BLOCKED,
    )
    insert = INSERT_IF_NEW[dialect](table).from_select([c.name for c in columns], allowed)
    return insert.on_conflict_do_nothing(
        index_elements=["study_id", "document_id", "worker_id"]
    ).returning(table.c.id)


INSERT_IF_ALLOWED = {dialect: _insert_if_allowed(dialect) for dialect in INSERT_IF_NEW}


def locks(dialect: str) -> dict[str, Executable | None]:
    """The arrival's locks by name (``study``, ``worker``, ``document``, ``worker_and_document``)
    on Postgres; SQLite's writer holds the whole database from its ``BEGIN IMMEDIATE``, so
    none there (None)."""
    postgres = dialect == "postgresql"
    return {
        "study": LOCK_STUDY if postgres else None,
        "worker": LOCK_WORKER if postgres else None,
        "document": LOCK_DOCUMENT if postgres else None,
        "worker_and_document": LOCK_WORKER_AND_DOCUMENT if postgres else None,
    }
