"""An arrival that names its document, in two round trips (issue 31 items 2 and 3).

``POST /api/assignments`` with a ``document`` (no researcher's key) in a study whose rules do
not read the whole study (no balanced conditions, no qualification, not the demo) is the
common arrival. Its policy then is: the study open, the worker not blocked, no active
assignment of the worker ID in the study, the document never theirs before, a free slot.
:func:`open_named` does it as

1. the study's deciding columns, the document and its segment count, one prebuilt statement
   (no ORM objects, no taxonomy JSON parsed);
2. on Postgres the worker ID's advisory lock and the document's row lock, one statement
   (the locks :mod:`app.annotation.assigning` takes, in its order), and the insert,
   conditional on that policy (``arrival_sql.INSERT_IF_ALLOWED``: a new statement, so under
   ``READ COMMITTED`` it sees every arrival that held the locks before). The fast lane sends
   the two together with no ``BEGIN``, so Postgres runs them as one transaction and commits
   it as they finish: one round trip, the locks held only while the insert runs.

When any of it does not hold, it inserts nothing and answers None: the caller then rolls
back and runs the whole policy (:func:`app.annotation.assigning.assign`) in a new
transaction, which releases stale holds unconditionally, takes over an unengaged hold of a
full document, and words every refusal. So this path only ever accepts what that one would,
and never refuses. Its locks come in the policy's order (the worker ID, then the document;
it releases no stale rows inside them), so arrivals on both paths cannot deadlock; hence the
rollback before the policy runs: that releases the document's lock before the policy's
release.

Stale holds (:func:`app.annotation.assigning.release_abandoned`) are released at most once
every :data:`RELEASE_EVERY_S` seconds per study and process, not on every arrival: the
release scans the study's active assignments, which at 1,000 workers is most of an
arrival's Postgres time. An arrival that finds the release due answers first and releases
after, in a transaction of its own (:attr:`Opened.release`, :func:`release_stale`: the
route and the fast lane run it once the answer has gone out), so no arrival waits for it
(at 1,000 workers it was the open's p99). That is exact enough because a stale hold matters
to an arrival only when its slot is needed, and then the arrival is refused here and the
whole policy releases it first; otherwise a hold becomes ``abandoned`` a few seconds later
than its timeout (minutes), as if the next arrival had come a few seconds later.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.annotation import arrival_sql
from app.annotation.assigning import reads_whole_study, release_abandoned
from app.annotation.assignments import new_row, worker_id_from
from app.annotation.hot_driver import Driver
from app.db import begin_write
from app.documents.lifecycle import accepts_new_work
from app.documents.studies import SLUG_PATTERN
from app.documents.text import storable
from app.errors import InvalidInput
from app.models import Study

log = logging.getLogger(__name__)

RELEASE_EVERY_S = 5.0
# per engine (a process's connection pool to one database): study id -> monotonic time of
# the last release
_released: weakref.WeakKeyDictionary[Engine, dict[int, float]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Opened:
    """A new assignment, as the arrival's answer needs it."""

    token: str
    document_id: int
    document_created_at: datetime
    segments: int  # the document's, for the answer
    release: Study | None = None  # whose stale holds to release once the answer is out


def release_stale(session_factory: Callable[[], Session], study: Study) -> None:
    """Release ``study``'s stale holds in a transaction of its own (after an arrival's answer:
    :attr:`Opened.release`); a failure is logged, the next due arrival tries again."""
    session = session_factory()
    try:
        begin_write(session)
        release_abandoned(session, study)
        session.commit()
    except Exception:  # noqa: BLE001 - housekeeping after the answer: never the arrival's error
        log.warning("releasing stale holds of study %s failed", study.id, exc_info=True)
        _last_releases(session.get_bind()).pop(study.id, None)
    finally:
        session.close()


def _last_releases(engine: Any) -> dict[int, float]:
    return _released.setdefault(engine, {})


def take_release_turn(engine: Any, study: Study) -> bool:
    """Whether this process released the study's stale holds RELEASE_EVERY_S ago or more;
    if so the turn is taken (the caller releases, :func:`release_stale`)."""
    releases = _last_releases(engine)
    moment = time.monotonic()
    if moment - releases.get(study.id, float("-inf")) < RELEASE_EVERY_S:
        return False
    releases[study.id] = moment
    return True


def open_named(db: Session | Driver, slug: Any, worker_id: Any, external_id: Any) -> Opened | None:
    """The new assignment of ``worker_id`` to the named document, or None when this path
    does not apply or the policy might refuse: nothing is written then, and the caller runs
    :func:`app.annotation.assigning.assign` (on a session: after rolling back, so its locks
    go and the policy takes its own in its order).

    On a session (the route; SQLite) the statements run in the session's transaction. On the
    fast lane's :class:`~app.annotation.hot_driver.Driver` (Postgres) the arrival is two round
    trips and no transaction held between them: the target's read, then the locks and the
    conditional insert sent together, which Postgres commits as one transaction as they run
    (as an add's claim and insert are): the locks are held only while the insert runs."""
    if not isinstance(slug, str) or not SLUG_PATTERN.match(slug):
        return None
    if not isinstance(external_id, str | int) or isinstance(external_id, bool):
        return None
    external_id = str(external_id)
    if not storable(external_id):
        return None
    try:
        worker_id = worker_id_from(worker_id)
    except InvalidInput:
        return None
    target = {"slug": slug, "external_id": external_id}
    if isinstance(db, Driver):
        found = db.run("named_target", arrival_sql.NAMED_TARGET, target, alone=True).first()
        engine = db.engine
    else:  # Core statements: no ORM step on the way
        found = db.connection().execute(arrival_sql.NAMED_TARGET, target).one_or_none()
        engine = db.get_bind()
    if found is None or found.document_id is None:
        return None
    # not added to a session: the settings' readers and release_abandoned need these only
    study = Study(
        id=found.study_id,
        status=found.status,
        annotators_per_doc=found.annotators_per_doc,
        settings=found.settings or {},
    )
    if not accepts_new_work(study) or reads_whole_study(study):
        return None
    row = new_row(study.id, found.document_id, worker_id)
    if _insert(db, {**row, "cap": study.annotators_per_doc}) is None:
        return None
    due = take_release_turn(engine, study)  # the caller releases once the answer is out
    return Opened(
        row["token"],
        found.document_id,
        found.document_created_at,
        found.segments,
        study if due else None,
    )


def _insert(db: Session | Driver, values: dict[str, Any]) -> int | None:
    """The worker ID's and the document's locks (Postgres), then the insert conditional on
    the policy (:data:`app.annotation.arrival_sql.INSERT_IF_ALLOWED`): the new id, or None."""
    if isinstance(db, Driver):
        locks = ("arrival_locks", arrival_sql.LOCK_WORKER_AND_DOCUMENT)
        insert = ("arrival_insert", arrival_sql.INSERT_IF_ALLOWED["postgresql"])
        return db.claim_and_run(locks, insert, values, alone=True).scalar()
    arrival_sql.lock(db, arrival_sql.LOCK_WORKER_AND_DOCUMENT, **values)
    insert_if_allowed = arrival_sql.INSERT_IF_ALLOWED[db.get_bind().dialect.name]
    return db.connection().execute(insert_if_allowed, values).scalar()
