"""The login throttle: failed logins counted in the database, per account and per client.

Every process (each gunicorn worker, each machine) sees the same counts; successful logins
are never counted. Both limits apply: an attacker rotating addresses meets the per-account
limit, one client guessing many accounts meets the per-client limit.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app.models import LoginFailure, utcnow

# (window, most failures allowed in it) for each key; the 11th failure in a minute is refused.
LIMITS = ((timedelta(minutes=1), 10), (timedelta(hours=1), 50))
KEPT_FOR = max(window for window, _ in LIMITS)


def _key(email: str, client: str) -> tuple[str, str]:
    return email.strip().lower()[:320], (client or "unknown")[:100]


def throttled(db: Session, email: str, client: str) -> bool:
    """True when this account or this client has failed too often lately."""
    email, client = _key(email, client)
    now = utcnow()
    for window, most in LIMITS:
        since = now - window
        for column, value in ((LoginFailure.email, email), (LoginFailure.client, client)):
            count = db.scalar(
                select(func.count())
                .select_from(LoginFailure)
                .where(column == value, LoginFailure.failed_at >= since)
            )
            if (count or 0) >= most:
                return True
    return False


def record_failure(db: Session, email: str, client: str) -> None:
    """Count one failed login (and forget failures older than the longest window)."""
    email, client = _key(email, client)
    now = utcnow()
    db.execute(delete(LoginFailure).where(LoginFailure.failed_at < now - KEPT_FOR))
    db.add(LoginFailure(email=email, client=client, failed_at=now))
    db.flush()
