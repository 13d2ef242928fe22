"""Researchers' API keys for scripts: ``Authorization: Bearer <key>``.

A key is ``mgk_<8 hex>_<secret>``: the first part is shown in listings to tell keys apart,
the secret is 32 random bytes. Only the SHA-256 of the whole key is stored, so a copy of the
database gives nobody a working key. A revoked key, or any key of a disabled or deleted
researcher, is refused at once.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.errors import InvalidInput, MarginaliaError
from app.models import ApiKey, Researcher, utcnow
from app.researchers.accounts import find_researcher

KEY_TAG = "mgk_"


class InvalidKey(MarginaliaError):
    """No usable key: missing, malformed, unknown, revoked, or its researcher is disabled."""

    status = 401


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def create_key(db: Session, email: str, label: str = "") -> tuple[ApiKey, str]:
    """A new key for ``email``: the row and the key itself, which is never stored."""
    researcher = find_researcher(db, email)
    if len(label) > 200:
        raise InvalidInput("a key's label has at most 200 characters")
    prefix = KEY_TAG + secrets.token_hex(4)
    while db.scalar(select(ApiKey.id).where(ApiKey.prefix == prefix)) is not None:
        prefix = KEY_TAG + secrets.token_hex(4)
    key = f"{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKey(researcher_id=researcher.id, prefix=prefix, secret_hash=_digest(key), label=label)
    db.add(row)
    db.flush()
    return row, key


def list_keys(db: Session, email: str) -> list[ApiKey]:
    researcher = find_researcher(db, email)
    return list(
        db.scalars(select(ApiKey).where(ApiKey.researcher_id == researcher.id).order_by(ApiKey.id))
    )


def revoke_key(db: Session, prefix: str) -> ApiKey:
    """Revoke the key whose visible part is ``prefix`` (again: no change)."""
    row = db.scalar(select(ApiKey).where(ApiKey.prefix == prefix.strip()))
    if row is None:
        raise InvalidInput(f"no API key {prefix.strip()!r} (see `marginalia researcher keys`)")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
    return row


def bearer_researcher(db: Session, authorization: str | None) -> Researcher | None:
    """The researcher whose key the ``Authorization`` header carries; None without a header.

    A header that is there but carries no usable key raises InvalidKey (401).
    """
    if authorization is None:
        return None
    scheme, _, key = authorization.strip().partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise InvalidKey("send a researcher's API key as Authorization: Bearer <key>")
    row = db.scalar(select(ApiKey).where(ApiKey.secret_hash == _digest(key)))
    if row is None or row.revoked_at is not None:
        raise InvalidKey("this API key is not valid (unknown or revoked)")
    researcher = db.get(Researcher, row.researcher_id)
    if researcher is None or researcher.disabled_at is not None:
        raise InvalidKey("this API key's researcher is disabled")
    row.last_used_at = utcnow()
    return researcher
