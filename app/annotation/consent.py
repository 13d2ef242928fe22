"""Consent as something the arrival carries, never a record looked up by a worker ID.

A worker ID is not a credential: anyone can type another's. So agreeing to a study's consent
text does not mark the ID as having agreed. The consent form's post answers with a *proof*:
a value signed with the app's ``SECRET_KEY`` (itsdangerous), valid :data:`PROOF_HOURS`, that
names the study, the consent text's SHA-256 and the arrival's own parameters (Prolific's
PID, study and session IDs; MTurk's; a generic worker ID). The browser that agreed carries
it to the arrival (``/s/<slug>?...&consent=PROOF``, or ``"consent"`` in the body of
``POST /api/assignments``), and the arrival (:func:`app.annotation.arrive.arrive`, the one
policy) opens new work only with a proof that vouches for exactly that arrival; the
agreement is then stored with the session it opened. Later documents of that session are
reached through the session's own proofs (an assignment's token, Prolific's session) and
need no new consent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from itsdangerous import BadData, URLSafeTimedSerializer

from app.documents.journey import consent_text
from app.documents.questionnaires import consent_hash
from app.errors import MarginaliaError

PROOF_HOURS = 12
SALT = "marginalia-consent-given"  # not the consent form's own token (app/web/journey.py)


class ConsentNeeded(MarginaliaError):
    """A study with a consent text, and no proof of this arrival's agreement."""

    def __init__(self, slug: str) -> None:
        super().__init__(
            "this study asks for each worker's consent first: send the worker to the study's "
            f"link /s/{slug}, where the consent form is",
            status=403,
        )


@dataclass(frozen=True)
class Proof:
    """A consent proof as the arrival carried it, and the key it must be signed with."""

    value: Any
    key: str | bytes


def required_hash(study: Any) -> str | None:
    """The SHA-256 of the study's consent text, or None when it asks for no consent."""
    text = consent_text(study)
    return consent_hash(text) if text else None


def _serializer(key: str | bytes) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(key, salt=SALT)


def sign(key: str | bytes, study_id: int, text_hash: str, params: dict[str, str]) -> str:
    """The proof of one arrival's agreement (``params``: the arrival's own parameters)."""
    return _serializer(key).dumps([study_id, text_hash, params])


def vouches(proof: Proof | None, study_id: int, text_hash: str, params: dict[str, str]) -> bool:
    """Whether ``proof`` was signed here, within :data:`PROOF_HOURS`, for this study, this
    consent text and exactly this arrival."""
    if proof is None or not isinstance(proof.value, str) or not proof.value:
        return False
    try:
        claim = _serializer(proof.key).loads(proof.value, max_age=PROOF_HOURS * 3600)
    except BadData:
        return False
    return claim == [study_id, text_hash, params]
