"""Researcher accounts: hashed passwords, login sessions, the ``login_required`` guard.

Workers never log in: they are identified by their assignment token.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from flask import redirect, request, session, url_for
from sqlalchemy import select
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from app.db import get_session
from app.errors import InvalidInput
from app.models import Researcher, utcnow

EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+$")
MIN_PASSWORD_CHARS = 10


@functools.cache
def _dummy_hash() -> str:
    """A hash to check against when the e-mail is unknown, so both paths take as long."""
    return generate_password_hash("not-a-real-password-0")


def create_researcher(session: Session, email: str, password: str) -> Researcher:
    email = email.strip().lower()
    if not EMAIL_PATTERN.match(email):
        raise InvalidInput(f"{email!r} is not an e-mail address")
    if len(password) < MIN_PASSWORD_CHARS:
        raise InvalidInput(f"the password must have at least {MIN_PASSWORD_CHARS} characters")
    if session.scalar(select(Researcher).where(Researcher.email == email)):
        raise InvalidInput(f"a researcher {email!r} already exists")
    researcher = Researcher(email=email, password_hash=generate_password_hash(password))
    session.add(researcher)
    session.flush()
    return researcher


def set_password(session: Session, email: str, password: str) -> None:
    researcher = session.scalar(select(Researcher).where(Researcher.email == email.lower()))
    if researcher is None:
        raise InvalidInput(f"no researcher {email!r}")
    if len(password) < MIN_PASSWORD_CHARS:
        raise InvalidInput(f"the password must have at least {MIN_PASSWORD_CHARS} characters")
    researcher.password_hash = generate_password_hash(password)


def authenticate(db: Session, email: str, password: str) -> Researcher | None:
    """The researcher with these credentials, or None (constant work either way)."""
    researcher = db.scalar(select(Researcher).where(Researcher.email == email.strip().lower()))
    if researcher is None:
        check_password_hash(_dummy_hash(), password)
        return None
    if not check_password_hash(researcher.password_hash, password):
        return None
    researcher.last_login_at = utcnow()
    return researcher


def log_in(researcher: Researcher) -> None:
    session.clear()
    session["researcher_id"] = researcher.id
    session.permanent = True


def log_out() -> None:
    session.clear()


def current_researcher() -> Researcher | None:
    researcher_id = session.get("researcher_id")
    if researcher_id is None:
        return None
    return get_session().get(Researcher, researcher_id)


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
