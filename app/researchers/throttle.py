"""The login throttle: failed logins counted in the database, per account and per client.

Every process (each web worker, each machine) sees the same counts. Both limits apply: an
attacker rotating addresses meets the per-account limit, one client guessing many accounts
meets the per-client limit.

The count must be taken *before* a password is checked, atomically: counting first and
recording the failure after the check let sixty passwords sent at once all read the same
count of nine, and some twenty-five were checked. So :func:`attempt` counts and records the
attempt in one short write transaction, serialised per account and per client (SQLite: its
one writer; Postgres: two advisory locks), and commits it before the password is checked; a
right password then takes its row back (:func:`succeeded`), so successful logins are never
counted. A process that dies between the two leaves the attempt counted as a failure.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Integer, bindparam, cast, delete, func, or_, select
from sqlalchemy.orm import Session

from app.db import begin_write
from app.models import LoginFailure, utcnow

# (window, most failures allowed in it) for each key; the 11th failure in a minute is refused.
LIMITS = ((timedelta(minutes=1), 10), (timedelta(hours=1), 50))
KEPT_FOR = max(window for window, _ in LIMITS)

# Postgres: one account's or one client's attempts counted one at a time, until the attempt
# is committed. Two-int advisory keys with a negative class: arrival_sql's worker locks use
# the same form with a study's id (always positive), so the two never meet; a hash collision
# only makes two accounts (or clients) wait for each other.
_LOCK = select(
    func.pg_advisory_xact_lock(cast(bindparam("space"), Integer), func.hashtext(bindparam("key")))
)
_ACCOUNT_SPACE, _CLIENT_SPACE = -1, -2


def _key(email: str, client: str) -> tuple[str, str]:
    return email.strip().lower()[:320], (client or "unknown")[:100]


def _counts(db: Session, email: str, client: str, now) -> list[tuple[int, int]]:
    """(this account's, this client's) failures in each window of :data:`LIMITS`."""
    columns = []
    for window, _ in LIMITS:
        recent = LoginFailure.failed_at >= now - window
        columns.append(func.count().filter(recent, LoginFailure.email == email))
        columns.append(func.count().filter(recent, LoginFailure.client == client))
    row = db.execute(
        select(*columns).where(
            or_(LoginFailure.email == email, LoginFailure.client == client),
            LoginFailure.failed_at >= now - KEPT_FOR,
        )
    ).one()
    return [(row[2 * n] or 0, row[2 * n + 1] or 0) for n in range(len(LIMITS))]


def attempt(db: Session, email: str, client: str) -> int | None:
    """Count a login attempt before its password is checked: None when this account or this
    client has failed too often lately (check nothing then), else the id of the attempt's
    row, committed, which stays as the failure unless :func:`succeeded` takes it back.

    Commits: call it before the request's own transaction."""
    if db.in_transaction():
        raise RuntimeError("throttle.attempt commits its count: call it before any query")
    email, client = _key(email, client)
    db = begin_write(db)
    try:
        if db.get_bind().dialect.name == "postgresql":
            # Always the account's lock first, then the client's: no two attempts wait for
            # each other in a circle.
            db.execute(_LOCK, {"space": _ACCOUNT_SPACE, "key": email})
            db.execute(_LOCK, {"space": _CLIENT_SPACE, "key": client})
        now = utcnow()
        counts = _counts(db, email, client, now)
        if any(max(pair) >= most for pair, (_, most) in zip(counts, LIMITS, strict=True)):
            db.rollback()
            return None
        # Forget failures older than the longest window; rows another attempt is deleting are
        # skipped (two deletes taking the same rows in another order could deadlock).
        old = select(LoginFailure.id).where(LoginFailure.failed_at < now - KEPT_FOR)
        db.execute(
            delete(LoginFailure).where(LoginFailure.id.in_(old.with_for_update(skip_locked=True)))
        )
        row = LoginFailure(email=email, client=client, failed_at=now)
        db.add(row)
        db.flush()
        attempt_id = row.id
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return attempt_id


def succeeded(db: Session, attempt_id: int) -> None:
    """The attempt's password was right: it is not a failure (in the caller's transaction)."""
    db.execute(delete(LoginFailure).where(LoginFailure.id == attempt_id))
