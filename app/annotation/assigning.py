"""Which document a worker arriving at a study gets next, and under which condition.

Rules, all per study:

* each document needs ``study.annotators_per_doc`` workers; an arriving worker gets their
  own unfinished (active) assignment first, else the document with the fewest taken slots
  (humans' active or submitted assignments: an LLM annotator's take none), earliest
  position first; never a document they had before, whatever became of it;
* an arrival never gets back an assignment it has not proven it owns (see
  :mod:`app.annotation.admission`): a worker ID that has an active assignment gets
  :class:`WorkInProgress`, not that assignment;
* a new assignment's slot is *held* for ``settings["hold_minutes"]`` (default 5) until the
  worker does something (an annotation, a position update, a heartbeat: ``engaged_at``);
  when every slot is taken, an arrival takes over the oldest such unengaged hold, so
  arrivals that never load the page cannot fill a study. An engaged assignment whose
  ``last_seen_at`` is older than the study's abandon timeout
  (``settings["abandon_after_minutes"]``, default 45) is marked ``abandoned`` when another
  worker arrives (an arrival naming its document releases stale holds at most every 5 s,
  and always before it would be refused: :mod:`app.annotation.named_arrival`): its
  annotations stay stored, its slot is free again;
* with ``settings["randomise_conditions"]`` each worker is put in ``assisted`` or
  ``unassisted`` on arrival (balanced over workers, ties broken at random) and keeps it;
  the API hides suggestions from ``unassisted`` assignments;
* with ``settings["qualification"] = {"min_f1": F, "attempts": K}`` a worker first does
  gold documents (``Document.is_gold``), at most K of them, scored on submission against
  their :class:`GoldError` rows, and gets real documents only once one of them reaches
  F1 >= F (the training phase: practice documents, ``is_practice``, come first and teach,
  :mod:`app.annotation.practice` gives their answers per segment, and are never graded; the
  attempts are drawn at random from the other gold documents; a worker out of attempts is
  :class:`ScreenedOut`). Gold documents are then test items: they do not count against
  ``annotators_per_doc`` and are never handed out as real work.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.annotation import arrival_sql
from app.annotation.qualification import qualification, qualification_state
from app.annotation.reviews import Blocked, refuse_blocked
from app.documents.language import N_
from app.documents.lifecycle import require_open
from app.errors import Conflict
from app.models import Assignment, Document, Study
from app.quality.work import human_worker

DEFAULT_ABANDON_MINUTES = 45
DEFAULT_HOLD_MINUTES = 5
CONDITIONS = ("assisted", "unassisted")
TAKEN = arrival_sql.TAKEN  # the statuses that take a document's slot


def now() -> datetime:
    return datetime.now(UTC)


class ScreenedOut(Conflict):
    """The worker used every practice attempt without reaching the pass mark: no real
    documents for them; the worker pages send them back with the platform's screen-out
    return (:func:`app.crowd.platforms.screen_out_url`)."""

    def __init__(self) -> None:
        super().__init__(
            "thank you — your answers on the practice documents did not reach the "
            "accuracy this study needs, so there are no more documents for you"
        )


class WorkInProgress(Conflict):
    """The arriving worker ID has an active assignment that this arrival did not prove it owns."""

    template = N_(
        "this worker ID already has work in progress in another browser. Continue in the "
        "browser where you started; if you did not start this study, check the ID you were "
        "given"
    )

    def __init__(self) -> None:
        super().__init__(self.template)


class NoDocumentsLeft(Conflict):
    """Every document has the annotators it needs, or none is left for this worker."""

    def __init__(self) -> None:
        super().__init__("there are no more documents for you in this study — thank you!")


# --- settings ------------------------------------------------------------------------------


def abandon_after(study: Study) -> timedelta:
    minutes = (study.settings or {}).get("abandon_after_minutes", DEFAULT_ABANDON_MINUTES)
    return timedelta(minutes=float(minutes))


def hold_for(study: Study) -> timedelta:
    """How long a new assignment keeps its slot before the worker does anything."""
    minutes = (study.settings or {}).get("hold_minutes", DEFAULT_HOLD_MINUTES)
    return timedelta(minutes=float(minutes))


def randomises_conditions(study: Study) -> bool:
    return bool((study.settings or {}).get("randomise_conditions"))


# --- abandoned assignments -----------------------------------------------------------------


def _naive_for(session: Session, moment: datetime) -> datetime:
    if session.bind is not None and session.bind.dialect.name == "sqlite":
        return moment.astimezone(UTC).replace(tzinfo=None)  # SQLite stores naive UTC
    return moment


def release_abandoned(
    session: Session, study: Study, *, keep_worker: str | None = None, at: datetime | None = None
) -> int:
    """Mark the study's stale active assignments ``abandoned``; returns how many.

    Stale: not seen for the abandon timeout, or never engaged and not seen for the hold.
    ``keep_worker``'s own assignments are left alone.
    """
    moment = at or now()
    cutoff = _naive_for(session, moment - abandon_after(study))
    hold_cutoff = _naive_for(session, moment - hold_for(study))
    values = {"in_study": study.id, "cutoff": cutoff, "hold_cutoff": hold_cutoff}
    query = arrival_sql.RELEASE
    if keep_worker is not None:
        query = query.where(Assignment.worker_id != keep_worker)
    return session.execute(query, values).rowcount or 0


# --- conditions ------------------------------------------------------------------------------


def condition_for(session: Session, study: Study, worker_id: str) -> str | None:
    """The worker's experimental condition: kept once given, else the less-filled one."""
    if not randomises_conditions(study):
        return None
    earlier = session.scalar(
        select(Assignment.condition)
        .where(
            Assignment.study_id == study.id,
            Assignment.worker_id == worker_id,
            Assignment.condition.is_not(None),
        )
        .order_by(Assignment.id)
        .limit(1)
    )
    if earlier:
        return earlier
    counts = dict.fromkeys(CONDITIONS, 0)
    for condition, workers in session.execute(
        select(Assignment.condition, func.count(func.distinct(Assignment.worker_id)))
        .where(Assignment.study_id == study.id, Assignment.condition.in_(CONDITIONS))
        .group_by(Assignment.condition)
    ):
        counts[condition] = workers
    fewest = min(counts.values())
    return secrets.choice([c for c in CONDITIONS if counts[c] == fewest])


# --- choosing the document -------------------------------------------------------------------


def reads_whole_study(study: Study) -> bool:
    """Balanced conditions, qualification, the demo: those arrivals take the study's lock."""
    return randomises_conditions(study) or qualification(study) is not None or is_demo(study)


def lock_document(session: Session, document: Document) -> None:
    arrival_sql.lock(session, arrival_sql.LOCK_DOCUMENT, document_id=document.id)


def _taken_slots(session: Session, document_id: int) -> int:
    return session.scalar(arrival_sql.TAKEN_SLOTS, {"document_id": document_id}) or 0


def slot_is_free(
    session: Session, study: Study, document: Document, *, taken: int | None = None
) -> bool:
    """Whether ``document`` can take one more worker (gold test items always can);
    ``taken``: its taken slots when already counted."""
    if qualification(study) is not None and document.is_gold:
        return True
    if taken is None:
        taken = _taken_slots(session, document.id)
    return taken < study.annotators_per_doc


def _had_before(study: Study, worker_id: str):
    return select(Assignment.document_id).where(
        Assignment.study_id == study.id, Assignment.worker_id == worker_id
    )


def _gold_for_unqualified(session: Session, study: Study, worker_id: str) -> Document | None:
    """The next gold document while ``worker_id`` has not qualified (None once qualified):
    the practice documents first, in order, then a qualification document drawn at random
    from those the worker has not had (their answers are never shown, so one that another ID
    of the same person saw is no easier)."""
    if qualification(study) is None:
        return None
    state = qualification_state(session, study, worker_id)
    if state.qualified:
        return None
    if not state.can_try_again:
        raise ScreenedOut()
    unseen = [
        Document.study_id == study.id,
        Document.is_gold.is_(True),
        Document.id.not_in(_had_before(study, worker_id)),
    ]
    gold = session.scalar(
        select(Document)
        .where(*unseen, Document.is_practice.is_(True))
        .order_by(Document.position, Document.id)
        .limit(1)
    ) or session.scalar(
        select(Document)
        .where(*unseen, Document.is_practice.is_(False))
        .order_by(func.random())
        .limit(1)
    )
    if gold is None:
        raise Conflict("this study has no qualification documents left for you")
    return gold


def _displace_unengaged_hold(
    session: Session, study: Study, worker_id: str, document: Document | None = None
) -> Document | None:
    """Take over the oldest slot (of ``document``, if given) held by someone who never did
    anything; the document, or None when there is no such hold."""
    conditions = [
        Assignment.study_id == study.id,
        Assignment.status == "active",
        Assignment.engaged_at.is_(None),
        Assignment.worker_id != worker_id,
        Assignment.document_id.not_in(_had_before(study, worker_id)),
    ]
    if document is not None:
        conditions.append(Assignment.document_id == document.id)
    if qualification(study) is not None:
        conditions.append(Document.is_gold.is_(False))
    hold = session.scalar(
        select(Assignment)
        .join(Document, Document.id == Assignment.document_id)
        .where(*conditions)
        .order_by(Assignment.last_seen_at, Assignment.id)
        .limit(1)
        # a hold whose heartbeat is being saved right now is not taken (Postgres)
        .with_for_update(of=Assignment, skip_locked=True)
    )
    if hold is None:
        return None
    hold.status = "abandoned"
    session.flush()
    return hold.document


def _arrival_state(
    session: Session, study: Study, worker_id: str, document: Document | None
) -> tuple[bool, bool, int]:
    """One statement under the study's lock: whether the worker ID has an active assignment
    here, and for a named ``document`` whether they had it before and its taken slots."""
    values = {"study_id": study.id, "worker_id": worker_id}
    if document is None:
        return bool(session.scalar(arrival_sql.WORK_IN_PROGRESS, values)), False, 0
    values["document_id"] = document.id
    active, had_it, slots = session.execute(arrival_sql.NAMED_DOCUMENT_STATE, values).one()
    return bool(active), bool(had_it), int(slots or 0)


def _check_document_allowed(
    session: Session, study: Study, worker_id: str, document: Document, had: bool, taken: int
) -> None:
    """Refuse a named document the study's policy would not give this worker (``had`` and
    ``taken`` from :func:`_arrival_state`)."""
    gold = _gold_for_unqualified(session, study, worker_id)
    if had:
        raise Conflict("this worker ID has already had this document; each worker gets it once")
    if gold is not None and not document.is_gold:
        raise Conflict("this worker must pass the qualification documents first")
    if gold is None and qualification(study) is not None and document.is_gold:
        raise Conflict("this document is a qualification document, not work for this worker")
    if not slot_is_free(session, study, document, taken=taken) and (
        _displace_unengaged_hold(session, study, worker_id, document) is None
    ):
        raise Conflict("this document already has all the annotators it needs")


def next_assignment_document(
    session: Session, study: Study, worker_id: str, document: Document | None = None
) -> Document:
    """The next document still needing annotators for a worker with no active assignment here.

    Releases stale assignments first and applies the qualification rule. Never the same
    document twice to one worker. With ``document`` (a named document), checks that the
    policy allows it instead of choosing. Raises :class:`WorkInProgress` when the worker ID
    has an active assignment (only a proven return resumes it), :class:`StudyUnavailable`
    when the study is not open, :class:`NoDocumentsLeft` (a :class:`Conflict`) when there
    is nothing left for this worker.
    """
    require_open(study)
    # A researcher's block is read before the lock (what it answers does not depend on other
    # arrivals); it is still refused after WorkInProgress, as before.
    try:
        refuse_blocked(session, study, worker_id)
        blocked = None
    except Blocked as refusal:
        blocked = refusal
    if reads_whole_study(study):
        arrival_sql.lock(session, arrival_sql.LOCK_STUDY, study_id=study.id)
    arrival_sql.lock(session, arrival_sql.LOCK_WORKER, study_id=study.id, worker_id=worker_id)
    # Stale work is released first, the worker's own included: an ID whose earlier browser is
    # gone for good gets new work once that assignment has timed out.
    release_abandoned(session, study)
    if document is not None:  # locked before its taken slots are counted
        lock_document(session, document)
    unfinished, had, taken = _arrival_state(session, study, worker_id, document)
    if unfinished:
        raise WorkInProgress()
    if blocked is not None:
        raise blocked
    if document is not None:
        _check_document_allowed(session, study, worker_id, document, had, taken)
        return document
    gold = _gold_for_unqualified(session, study, worker_id)
    if gold is not None:
        return gold

    candidate = _claim_fewest_taken(session, study, worker_id)
    if candidate is None:
        candidate = _displace_unengaged_hold(session, study, worker_id)
        if candidate is not None:
            lock_document(session, candidate)  # its hold is ours now; the document too
    if candidate is None and is_demo(study):  # the demo has a place for every arrival
        candidate = _fewest_taken(session, study, worker_id, capped=False)
    if candidate is None:
        raise NoDocumentsLeft()
    return candidate


def _claim_fewest_taken(session: Session, study: Study, worker_id: str) -> Document | None:
    """:func:`_fewest_taken`, locked on Postgres (arrival_sql.py: skipping a document others
    hold, waiting only when none is left; a document filled meanwhile is passed over)."""
    if not arrival_sql.on_postgres(session):
        return _fewest_taken(session, study, worker_id)
    session.flush()  # nothing of the ORM's is left to flush inside the savepoint
    for _ in range(100):  # documents filled under one arrival before it gives up
        session.execute(arrival_sql.SAVEPOINT)
        candidate = _fewest_taken(session, study, worker_id, lock="skip") or _fewest_taken(
            session, study, worker_id, lock="wait"
        )
        if candidate is None or slot_is_free(session, study, candidate):
            return candidate
        # filled meanwhile: its lock is let go before waiting for another (no deadlock)
        session.execute(arrival_sql.ROLLBACK_TO_SAVEPOINT)
    raise Conflict("too many workers are arriving at once; try again")


def is_demo(study: Study) -> bool:
    """``marginalia demo``'s study: once every slot is taken, an arrival still gets the
    document with the fewest workers that it has not had (the demo never fills up)."""
    return bool((study.settings or {}).get("demo"))


def _fewest_taken(
    session: Session, study: Study, worker_id: str, *, capped: bool = True, lock: str = ""
) -> Document | None:
    """The document with the fewest taken slots that ``worker_id`` never had (practice
    documents aside), earliest first; with ``capped`` only one with a free slot; ``lock``
    ("skip" or "wait"): its row locked, skipping or waiting for rows others hold."""
    taken = (
        select(Assignment.document_id, func.count().label("n"))
        .where(Assignment.study_id == study.id, Assignment.status.in_(TAKEN), human_worker())
        .group_by(Assignment.document_id)
        .subquery()
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
        select(Document)
        .outerjoin(taken, taken.c.document_id == Document.id)
        .where(*conditions)
        .order_by(func.coalesce(taken.c.n, 0), Document.position, Document.id)
        .limit(1)
    )
    if lock:
        query = query.with_for_update(of=Document, key_share=True, skip_locked=lock == "skip")
    return session.scalar(query)


def preview_document(session: Session, study: Study) -> Document | None:
    """A document to show read-only before a worker accepts (MTurk preview); no writes."""
    return session.scalar(
        select(Document)
        .where(Document.study_id == study.id, Document.is_gold.is_(False))
        .order_by(Document.position, Document.id)
        .limit(1)
    ) or session.scalar(
        select(Document).where(Document.study_id == study.id).order_by(Document.position).limit(1)
    )


def assign(
    session: Session,
    study: Study,
    worker_id: str,
    *,
    platform: str = "generic",
    platform_data: dict[str, Any] | None = None,
    document: Document | None = None,
) -> Assignment:
    """Start new work for ``worker_id`` under the study's policy: a new assignment, never an
    existing one. ``document`` names the document (checked against the policy)."""
    from app.annotation.assignments import open_assignment, worker_id_from

    worker_id = worker_id_from(worker_id)  # never an LLM annotator's ID
    chosen = next_assignment_document(session, study, worker_id, document)
    # The condition is drawn before the insert (the new row counts in no condition either
    # way), so the row is written once.
    assignment, created = open_assignment(
        session,
        study,
        chosen,
        worker_id,
        platform=platform,
        platform_data=platform_data,
        condition=condition_for(session, study, worker_id),
    )
    if not created:  # a concurrent arrival with the same worker ID got there first
        raise WorkInProgress()
    return assignment
