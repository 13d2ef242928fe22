"""Arrival: the one policy that gives an arriving worker new work (``POST /api/assignments``,
the study links ``/s/<slug>`` of Prolific, MTurk and generic arrivals, a proven return whose
slot went to someone else), on the one handle (:mod:`app.annotation.handle`).

The rules (:mod:`app.annotation.assigning` has the settings that tune them): the study open;
the worker not blocked; one active assignment per worker ID; never the same document twice;
``annotators_per_doc`` workers per document (active or submitted assignments take a slot),
the fewest-taken document first; slots held by workers who never engaged taken over when a
document is full; stale holds released; balanced conditions; qualification (practice
documents first, then qualification documents at random, gold documents never real work
nor counted against the slots); the demo never fills.

Most of them are decided by one conditional statement, once: the insert of the new
assignment (``arrival_sql.INSERT_IF_ALLOWED``: no active assignment of the worker ID, never
had the document, a free slot, not blocked), after the worker ID's lock and the document's
(on Postgres, in the policy's order: the study when a rule reads the whole study, the worker
ID, stale rows, the document; so arrivals cannot deadlock, and arrivals on different
documents never wait for each other). An arrival that names its document in a study whose
rules do not read the whole study (the common one) is that pair run alone: with the target's
read, two round trips on Postgres, no ``BEGIN``/``COMMIT``, the locks held only while the
insert runs. Otherwise the policy first chooses the document: the fewest-taken one with a
free slot, earliest first, ``FOR UPDATE SKIP LOCKED`` on Postgres (a document another arrival
holds is skipped; one filled meanwhile is let go by rolling back to a savepoint before
another is locked), or the next gold document of an unqualified worker.

When the insert stores nothing, the policy does not run a second policy: it releases the
study's stale holds (once; the worker's own included, so an ID whose earlier browser is gone
gets new work once that assignment timed out) and tries again, then reads back why
(``arrival_sql.ARRIVAL_STATE``) to word the refusal, in the order the API has always given
them: work in progress elsewhere, blocked (or paused), the training phase's refusals, a
document had before, a full document (after taking over its oldest unengaged hold, if any),
no documents left (after taking over any unengaged hold, and in the demo any document not
had). Stale holds are otherwise released at most every :data:`RELEASE_EVERY_S` seconds per
study and process, after the answer has gone out (:attr:`Arrived.release`,
:func:`release_stale`): the release scans the study's active assignments, most of an
arrival's Postgres time at 1,000 workers, and a stale hold matters to an arrival only when
its slot is needed, when the arrival's miss releases it first.

Sessions (:mod:`app.annotation.sessions`): an arrival opens a participant's session or
continues one. A new session in a study with a consent text needs the consent form's signed
answer for this very arrival (refused before anything is read or written otherwise: "no
assignment without consent on record", on every way in); its row is inserted after the
worker ID's lock, with the agreement, in the arrival's transaction. A continued session is
checked under that lock: this worker's, not finished, and with room for a real document. An
arrival that opens or continues a session never runs alone.
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, select

from app.annotation import arrival_sql, assignments, sessions
from app.annotation.arrival_choice import (
    UNCAPPED,
    Target,
    cap_of,
    condition_for,
    displace_hold,
    fewest_taken,
    gold_for_unqualified,
)
from app.annotation.assigning import (
    NoDocumentsLeft,
    WorkInProgress,
    abandon_after,
    hold_for,
    is_demo,
    reads_whole_study,
)
from app.annotation.assignments import new_row, worker_id_from
from app.annotation.connect import open_handle
from app.annotation.handle import Handle
from app.annotation.qualification import qualification
from app.annotation.reviews import refuse_blocked
from app.documents.lifecycle import require_open
from app.documents.studies import SLUG_PATTERN, find_document, get_study
from app.documents.text import storable
from app.errors import Conflict, NotFound
from app.models import Document
from app.rules.work import has_pass_mark

log = logging.getLogger(__name__)

RELEASE_EVERY_S = 5.0
TRIES = 100  # documents filled under one arrival before it gives up (a 409 "try again")
# per engine: study id -> monotonic time of this process's last release of its stale holds
_released: weakref.WeakKeyDictionary[Engine, dict[int, float]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class StudyFacts:
    """The study's columns the policy reads (an ORM ``Study`` has them too)."""

    id: int
    slug: str
    status: str
    annotators_per_doc: int
    settings: dict[str, Any]


@dataclass(frozen=True)
class Arrived:
    """The new assignment, as the ways in answer it."""

    token: str
    document: Target
    release: Any = None  # the study whose stale holds to release once the answer is out
    status: str = "active"


def arrive(
    db: Handle,
    study: Any,
    worker_id: Any,
    *,
    platform: str = "generic",
    platform_data: dict[str, Any] | None = None,
    document: Target | None = None,
    session: sessions.Open | sessions.Continue | None = None,
) -> Arrived:
    """New work for ``worker_id`` in ``study`` (a :class:`StudyFacts` or an ORM ``Study``),
    never an existing assignment; ``document``: the document the worker asked for, checked
    against the policy instead of chosen; ``session``: the participant's session it opens
    (with the consent proof the arrival carried) or continues, None as an API arrival
    (:func:`app.annotation.sessions.admit`). Raises the refusal, having stored nothing."""
    require_open(study)
    worker_id = worker_id_from(worker_id)
    data = platform_data or {}
    visit = sessions.admit(study, worker_id, platform, data, session)
    return _Arrival(db, study, worker_id, platform, data, visit).take(document)


def resolve(
    db: Handle, slug: Any, worker_id: Any, external_id: Any
) -> tuple[StudyFacts, str, Target | None]:
    """The study an API arrival names and the document it asks for (None: none asked for),
    read in one statement (``arrival_sql.NAMED_TARGET``), and its checked worker ID; refused
    in the API's order: the study (404), the worker ID (400), the document (400 or 404, worded
    by :func:`app.documents.studies.find_document`)."""
    named = None
    if isinstance(external_id, str | int) and not isinstance(external_id, bool):
        named = str(external_id) if storable(str(external_id)) else None
    row = None
    if isinstance(slug, str) and SLUG_PATTERN.match(slug):
        row = db.run(arrival_sql.NAMED_TARGET, {"slug": slug, "external_id": named}, alone=True)
        row = row.first()
    if row is None:
        get_study(db.session(), slug)  # raises its 404
        raise NotFound(f"no study {slug!r}")
    study = StudyFacts(
        row.study_id, row.slug, row.status, row.annotators_per_doc, row.settings or {}
    )
    worker_id = worker_id_from(worker_id)
    if external_id is None:
        return study, worker_id, None
    if row.document_id is None:
        session = db.session()
        find_document(session, get_study(session, slug), external_id)  # raises 400 or 404
    target = Target(row.document_id, row.document_created_at, bool(row.is_gold), row.segments)
    return study, worker_id, target


class _Arrival:
    """One arrival's run of the policy (see the module)."""

    def __init__(
        self,
        db: Handle,
        study: Any,
        worker_id: str,
        platform: str,
        data: dict[str, Any],
        visit: sessions.Open | sessions.Continue | None,
    ) -> None:
        self.db, self.study, self.worker_id = db, study, worker_id
        self.platform, self.platform_data = platform, data
        self.visit = visit
        self.session_id: int | None = None
        self.locks = arrival_sql.locks(db.dialect)
        self.condition: str | None = None
        self.released = self.displaced = self.demo = False

    def take(self, named: Target | None) -> Arrived:
        study = self.study
        alone = named is not None and not reads_whole_study(study) and self.visit is None
        if reads_whole_study(study):
            self._lock("study", study_id=study.id)
        self.condition = condition_for(self.db, study, self.worker_id)
        gold, first_refusal = gold_for_unqualified(self.db, study, self.worker_id)
        later_refusal, cap = None, study.annotators_per_doc
        if named is not None and qualification(study) is not None:
            if gold is not None and not named.is_gold:
                later_refusal = Conflict("this worker must pass the qualification documents first")
            elif gold is None and first_refusal is None and named.is_gold:
                later_refusal = Conflict(
                    "this document is a qualification document, not work for this worker"
                )
            cap = cap_of(study, named.is_gold)
        if not alone:
            self._lock("worker", study_id=study.id, worker_id=self.worker_id)
            self._session(gold is None if named is None else not _training(study, named))
        forced: tuple[Target, int] | None = None
        for _ in range(TRIES):
            target = named
            if named is None:
                self.db.query(arrival_sql.SAVEPOINT)
                target, cap = forced or self._choose(gold)
                forced = None
            if target is not None and first_refusal is None and later_refusal is None:
                token = self._insert(target, cap, alone)
                if token is not None:
                    return self._arrived(token, target)
            if named is None:  # the chosen document let go before anything else is locked
                self.db.query(arrival_sql.ROLLBACK_TO_SAVEPOINT)
            state = self._state(target, alone)
            if not self.released and _release_helps(state, target, cap):
                alone = self._in_transaction(alone)
                self._release()
                continue
            if state.active:
                raise WorkInProgress()
            if state.blocked:
                refuse_blocked(self.db.session(), study, self.worker_id)
            if first_refusal is not None:
                raise first_refusal
            if named is not None:
                if state.had:
                    raise Conflict(
                        "this worker ID has already had this document; each worker gets it once"
                    )
                if later_refusal is not None:
                    raise later_refusal
                if (state.taken or 0) >= cap:  # full: its oldest unengaged hold taken over
                    alone = self._in_transaction(alone)  # (a write)
                    self._take_over_or_refuse(named)
            elif target is None:
                alone = self._in_transaction(alone)
                forced = self._nothing_left()
            # else the chosen document filled meanwhile: choose again
        raise Conflict("too many workers are arriving at once; try again")

    def _session(self, real: bool) -> None:
        """Under the worker ID's lock: the session continued (checked), or the new one."""
        visit = self.visit
        if isinstance(visit, sessions.Continue):
            sessions.continued(self.db, self.study, self.worker_id, visit.session_id, real)
            self.session_id = visit.session_id
        elif visit is not None:
            self.session_id = sessions.open_session(
                self.db, self.study, self.worker_id, self.platform
            )

    def _take_over_or_refuse(self, named: Target) -> None:
        """The named document is full: its oldest unengaged hold taken over (once), else the
        refusal."""
        taken_over = not self.displaced and displace_hold(
            self.db, self.study, self.worker_id, named.id
        )
        self.displaced = True
        if not taken_over:
            raise Conflict("this document already has all the annotators it needs")

    def _nothing_left(self) -> tuple[Target, int] | None:
        """No document with a free slot: take over the oldest unengaged hold (once), then, in
        the demo, any document not had; else :class:`NoDocumentsLeft`."""
        if not self.displaced:
            self.displaced = True
            held = displace_hold(self.db, self.study, self.worker_id, None)
            if held is not None:
                return self._facts(held), self.study.annotators_per_doc
        if is_demo(self.study) and not self.demo:  # the demo has a place for every arrival
            self.demo = True
            found = fewest_taken(self.db, self.study, self.worker_id, capped=False)
            if found is not None:
                return found, UNCAPPED
        raise NoDocumentsLeft()

    def _choose(self, gold: Target | None) -> tuple[Target | None, int]:
        """The next gold document of an unqualified worker, else the fewest-taken document
        with a free slot, locked (skipping one another arrival holds, waiting only when no
        other is left)."""
        if gold is not None:
            return gold, UNCAPPED
        found = fewest_taken(self.db, self.study, self.worker_id, lock="skip") or fewest_taken(
            self.db, self.study, self.worker_id, lock="wait"
        )
        return found, self.study.annotators_per_doc

    def _insert(self, target: Target, cap: int, alone: bool) -> str | None:
        """The worker ID's and the document's locks, then the conditional insert: the new
        token, or None (nothing stored)."""
        row = new_row(
            self.study.id,
            target.id,
            self.worker_id,
            self.platform,
            self.platform_data,
            self.condition,
            self.session_id,
        )
        insert = arrival_sql.INSERT_IF_ALLOWED[self.db.dialect]
        params = {**row, "cap": cap}
        stored = self.db.pair(self.locks["worker_and_document"], insert, params, alone=alone)
        return row["token"] if stored.scalar() is not None else None

    def _in_transaction(self, alone: bool) -> bool:
        """From here on one transaction, the worker ID locked first (the policy's order)."""
        if alone:
            self._lock("worker", study_id=self.study.id, worker_id=self.worker_id)
        return False

    def _lock(self, name: str, **params: Any) -> None:
        statement = self.locks[name]
        if statement is not None:
            self.db.run(statement, params)

    def _release(self) -> None:
        release_abandoned(self.db, self.study)
        self.released = True

    def _state(self, target: Target | None, alone: bool) -> Any:
        """Why the insert stored nothing (``arrival_sql.ARRIVAL_STATE``)."""
        params = {
            "study_id": self.study.id,
            "worker_id": self.worker_id,
            "document_id": target.id if target is not None else None,
            **_stale_cutoffs(self.study),
        }
        return self.db.run(arrival_sql.ARRIVAL_STATE, params, alone=alone).first()

    def _facts(self, document_id: int) -> Target:
        row = self.db.run(_TARGET, {"document_id": document_id}).first()
        return Target(row.id, row.created_at, bool(row.is_gold))

    def _arrived(self, token: str, target: Target) -> Arrived:
        visit = self.visit
        if isinstance(visit, sessions.Open) and sessions.required_hash(self.study) is not None:
            assert self.session_id is not None  # admit checked the proof of this agreement
            sessions.record_agreement(self.db, self.study, self.worker_id, self.session_id)
        engine = self.db.engine
        due = take_release_turn(engine, self.study.id) and not self.released
        return Arrived(token, target, self.study if due else None)


_TARGET = select(Document.id, Document.created_at, Document.is_gold).where(
    Document.id == bindparam("document_id")
)


def _training(study: Any, target: Target) -> bool:
    """Whether ``target`` is a training document: a gold one of a study with a pass mark
    (:func:`app.rules.work.has_pass_mark`)."""
    return target.is_gold and has_pass_mark(study)


def _release_helps(state: Any, target: Target | None, cap: int) -> bool:
    """Whether releasing the study's stale holds could change a refusal: the worker's own
    active assignment is stale, or the document is full and a stale hold takes a slot, or no
    document had a free slot."""
    if state.active:
        return bool(state.mine_stale)
    if target is None:
        return True
    return (state.taken or 0) >= cap and bool(state.document_stale)


# --- stale holds ----------------------------------------------------------------------------


def _stale_cutoffs(study: Any) -> dict[str, Any]:
    """``arrival_sql._STALE``'s parameters: not seen for the abandon timeout, or never engaged
    and not seen for the hold."""
    moment = assignments.now()
    return {
        "in_study": study.id,
        "cutoff": moment - abandon_after(study),
        "hold_cutoff": moment - hold_for(study),
    }


def release_abandoned(db: Handle, study: Any) -> int:
    """Mark the study's stale active assignments ``abandoned``; returns how many."""
    return db.run(arrival_sql.RELEASE, _stale_cutoffs(study)).rowcount or 0


def release_stale(engine: Engine, study: Any) -> None:
    """Release ``study``'s stale holds in a transaction of its own (after an arrival's answer:
    :attr:`Arrived.release`); a failure is logged, the next due arrival tries again."""
    db = open_handle(engine)
    try:
        release_abandoned(db, study)
        db.commit()
    except Exception as error:  # noqa: BLE001 - housekeeping after the answer, never its error
        log.warning("releasing stale holds of study %s failed", study.id, exc_info=True)
        _released.setdefault(engine, {}).pop(study.id, None)
        db.fail(error)
        return
    db.close()


def take_release_turn(engine: Engine, study_id: int) -> bool:
    """Whether this process released the study's stale holds :data:`RELEASE_EVERY_S` ago or
    more; if so the turn is taken (the caller releases, :func:`release_stale`)."""
    releases = _released.setdefault(engine, {})
    moment = time.monotonic()
    if moment - releases.get(study_id, float("-inf")) < RELEASE_EVERY_S:
        return False
    releases[study_id] = moment
    return True
