"""A study's session settings: how many documents a participant does per session (one visit
from the platform, one completion code), whether a session may end shorter when no document
is left for them, and the reward per session (for the dashboard's hourly rate).

Stored in ``study.settings``: ``"session": {"documents": K, "shorter": bool}`` and
``"reward": {"amount": "2.50", "currency": "GBP"}``. Without them a session is one document,
as a study always was, may end shorter (it cannot: one document), and no rate is shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from app.errors import InvalidInput

DEFAULT_DOCUMENTS = 1
MAX_DOCUMENTS = 100
MAX_REWARD = Decimal("1000")
DEFAULT_CURRENCY = "GBP"  # Prolific's default study currency
CURRENCY = re.compile(r"^[A-Z]{3}$")
UNSET: Any = object()


@dataclass(frozen=True)
class SessionRule:
    documents: int  # real documents per session (practice and qualification not counted)
    shorter: bool  # no document left before ``documents``: the session ends with its code
    reward: Decimal | None  # per session, in ``currency``
    currency: str


def session_rule(study: Any) -> SessionRule:
    """The study's session settings with their defaults (``study``: anything with
    ``settings``)."""
    settings = study.settings or {}
    rule = settings.get("session") or {}
    reward = settings.get("reward") or {}
    amount = reward.get("amount")
    return SessionRule(
        documents=int(rule.get("documents", DEFAULT_DOCUMENTS)),
        shorter=bool(rule.get("shorter", True)),
        reward=Decimal(amount) if amount is not None else None,
        currency=reward.get("currency") or DEFAULT_CURRENCY,
    )


def configure_sessions(
    study: Any,
    *,
    documents: Any = UNSET,
    shorter: Any = UNSET,
    reward: Any = UNSET,
    currency: Any = UNSET,
) -> dict[str, Any]:
    """Validate and store the options given (``reward=None`` or ``''`` removes the reward);
    a bad value raises :class:`InvalidInput` and changes nothing. Returns :func:`describe`."""
    settings = dict(study.settings or {})
    rule = dict(settings.get("session") or {})
    if documents is not UNSET:
        rule["documents"] = _documents(documents)
    if shorter is not UNSET:
        rule["shorter"] = bool(shorter)
    paid = dict(settings.get("reward") or {})
    if reward is not UNSET:
        amount = _amount(reward)
        if amount is None:
            paid = {}
        else:
            paid["amount"] = amount
    if currency is not UNSET:
        code = (currency or "").strip().upper()
        if not CURRENCY.match(code):
            raise InvalidInput(f"the currency {currency!r} must be three letters, e.g. GBP or USD")
        if paid:
            paid["currency"] = code
        elif reward is UNSET:
            raise InvalidInput("give the reward per session with its currency (--reward 2.50)")
    if paid:
        paid.setdefault("currency", DEFAULT_CURRENCY)
        settings["reward"] = paid
    else:
        settings.pop("reward", None)
    if rule:
        settings["session"] = rule
    study.settings = settings
    return describe(study)


def _documents(value: Any) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidInput("the documents per session must be a whole number") from None
    if not 1 <= number <= MAX_DOCUMENTS:
        raise InvalidInput(f"the documents per session must be between 1 and {MAX_DOCUMENTS}")
    return number


def _amount(value: Any) -> str | None:
    """A reward as stored: its decimal text with two places; None for none."""
    if value is None or not str(value).strip():
        return None
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise InvalidInput(f"the reward {value!r} is not a number, e.g. 2.50") from None
    if not amount.is_finite() or not 0 < amount < MAX_REWARD:
        raise InvalidInput(f"the reward must be more than 0 and below {MAX_REWARD}")
    if amount != amount.quantize(Decimal("0.01")):
        raise InvalidInput("the reward has at most two decimal places, e.g. 2.50")
    return str(amount.quantize(Decimal("0.01")))


def describe(study: Any) -> dict[str, Any]:
    """The session settings as ``study settings`` prints them."""
    rule = session_rule(study)
    return {
        "documents_per_session": rule.documents,
        "allow_shorter_session": rule.shorter,
        "reward": None if rule.reward is None else f"{rule.reward:.2f}",
        "currency": rule.currency if rule.reward is not None else None,
    }
