"""Researcher accounts: hashed passwords, roles, disabling and deleting, login sessions, the
``login_required`` guard.

Workers never log in: they are identified by their assignment token. A session cookie holds
the researcher's id and ``session_version``; logout, a password change and disabling bump
the version, so every cookie issued before stops working at once (docs/SECURITY.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from flask import current_app, g, has_app_context, redirect, request, session, url_for
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from app.db import session_scope
from app.documents.text import storable
from app.errors import InvalidInput
from app.models import ApiKey, Researcher, Study, utcnow

EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+$")
MIN_PASSWORD_CHARS = 10
ROLES = ("researcher", "admin")


def _hash_method() -> str:
    """werkzeug's method for password hashes: scrypt (its default). ``PASSWORD_HASH_METHOD``
    in the app's config may name another; only the test suite's fixtures set one (a cheap
    pbkdf2: scrypt costs ~85 ms of CPU per hash, and the suite logs in hundreds of times)."""
    configured = current_app.config.get("PASSWORD_HASH_METHOD") if has_app_context() else None
    return configured or "scrypt"


def _new_hash(password: str) -> str:
    return generate_password_hash(password, method=_hash_method())


@functools.cache
def _dummy_hash(method: str) -> str:
    """A hash to check against when the e-mail is unknown, so both paths take as long."""
    return generate_password_hash("not-a-real-password-0", method=method)


def normalise_email(email: str) -> str:
    """The stored form of an e-mail address; InvalidInput for text no database can store."""
    if not storable(email):
        raise InvalidInput("an e-mail address must not contain NUL characters or surrogates")
    return email.strip().lower()


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_CHARS:
        raise InvalidInput(f"the password must have at least {MIN_PASSWORD_CHARS} characters")


def create_researcher(
    session: Session, email: str, password: str, *, role: str = "researcher"
) -> Researcher:
    email = normalise_email(email)
    if not EMAIL_PATTERN.match(email) or len(email) > 320:
        raise InvalidInput(f"{email!r} is not an e-mail address")
    _check_password(password)
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}")
    if session.scalar(select(Researcher).where(Researcher.email == email)):
        raise InvalidInput(f"a researcher {email!r} already exists")
    researcher = Researcher(
        email=email, password_hash=_new_hash(password), role=role, session_version=0
    )
    session.add(researcher)
    session.flush()
    return researcher


def find_researcher(session: Session, email: str) -> Researcher:
    """The researcher with this e-mail, or InvalidInput naming it."""
    researcher = session.scalar(
        select(Researcher).where(Researcher.email == normalise_email(email))
    )
    if researcher is None:
        raise InvalidInput(f"no researcher {normalise_email(email)!r}")
    return researcher


def end_sessions(researcher: Researcher) -> None:
    """Every session cookie issued to ``researcher`` so far stops working."""
    researcher.session_version = (researcher.session_version or 0) + 1


def set_password(session: Session, email: str, password: str) -> None:
    researcher = find_researcher(session, email)
    _check_password(password)
    researcher.password_hash = _new_hash(password)
    end_sessions(researcher)


def set_role(session: Session, email: str, role: str) -> Researcher:
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}")
    researcher = find_researcher(session, email)
    researcher.role = role
    return researcher


def set_disabled(session: Session, email: str, disabled: bool) -> Researcher:
    """Disable (sessions and API keys stop working at once) or enable an account."""
    researcher = find_researcher(session, email)
    if disabled:
        if researcher.disabled_at is None:
            researcher.disabled_at = utcnow()
        end_sessions(researcher)
    else:
        researcher.disabled_at = None
    return researcher


def delete_researcher(session: Session, email: str, reassign_to: str | None = None) -> int:
    """Delete an account (its keys and shares go with it); returns the studies reassigned.

    A researcher who owns studies is refused unless ``reassign_to`` names who takes them.
    """
    researcher = find_researcher(session, email)
    owned = session.scalars(
        select(Study.slug).where(Study.owner_id == researcher.id).order_by(Study.slug)
    ).all()
    if owned and reassign_to is None:
        raise InvalidInput(
            f"{researcher.email} owns {len(owned)} studies ({', '.join(owned[:5])}"
            f"{', ...' if len(owned) > 5 else ''}); give them to another researcher with "
            "--reassign-to EMAIL"
        )
    if owned:
        heir = find_researcher(session, reassign_to or "")
        if heir.id == researcher.id:
            raise InvalidInput("reassign the studies to another researcher")
        session.execute(
            update(Study).where(Study.owner_id == researcher.id).values(owner_id=heir.id)
        )
    session.delete(researcher)
    session.flush()
    return len(owned)


def _count_by(session: Session, key: Any, counted: Any) -> dict[Any, int]:
    """How many rows that ``counted`` keeps hold each value of ``key``."""
    return dict(session.execute(select(key, func.count()).where(counted).group_by(key)).all())


def list_researchers(session: Session) -> list[tuple[Researcher, int, int]]:
    """Every researcher with the number of studies they own and of their live (not revoked)
    API keys, by e-mail."""
    owned = _count_by(session, Study.owner_id, Study.owner_id.is_not(None))
    keys = _count_by(session, ApiKey.researcher_id, ApiKey.revoked_at.is_(None))
    researchers = session.scalars(select(Researcher).order_by(Researcher.email))
    return [(r, owned.get(r.id, 0), keys.get(r.id, 0)) for r in researchers]


def authenticate(db: Session, email: str, password: str) -> Researcher | None:
    """The enabled researcher with these credentials, or None (constant work either way)."""
    researcher = db.scalar(select(Researcher).where(Researcher.email == normalise_email(email)))
    if researcher is None:
        check_password_hash(_dummy_hash(_hash_method()), password)
        return None
    if not check_password_hash(researcher.password_hash, password):
        return None
    if researcher.disabled_at is not None:
        return None
    return researcher


def log_in(researcher: Researcher) -> None:
    session.clear()
    session["researcher_id"] = researcher.id
    session["version"] = researcher.session_version
    session.permanent = True


def log_out(researcher: Researcher | None) -> None:
    """End this researcher's sessions (every copy of the cookie) and clear this one."""
    if researcher is not None:
        end_sessions(researcher)
    session.clear()


def current_researcher() -> Researcher | None:
    """The logged-in researcher (detached, read-only), checked against the database on every
    request."""
    if "researcher" in g:
        return g.researcher
    researcher = None
    researcher_id = session.get("researcher_id")
    if isinstance(researcher_id, int):
        # Its own short session: the request's session stays outside any transaction, so
        # a writing view can still begin with begin_write (SQLite: BEGIN IMMEDIATE).
        with session_scope() as lookup:
            found = lookup.get(Researcher, researcher_id)
        if (
            found is not None
            and found.disabled_at is None
            and session.get("version") == found.session_version
        ):
            researcher = found
    if researcher is None and "researcher_id" in session:
        session.clear()
    g.researcher = researcher
    return researcher


def login_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """Send anonymous visitors to the login page (JSON callers get 401)."""

    @functools.wraps(view)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if current_researcher() is None:
            if request.accept_mimetypes.best == "application/json":
                return {"error": "log in as a researcher first"}, 401
            return redirect(url_for("admin.login", next=request.full_path))
        return view(*args, **kwargs)

    return guarded
