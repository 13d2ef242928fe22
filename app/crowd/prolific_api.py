"""Prolific's public REST API, for ``marginalia prolific approve|reject|bonus``.

Requests as Prolific documents them (https://docs.prolific.com/api-reference):

* ``POST /api/v1/submissions/{id}/transition/`` with ``{"action": "APPROVE"}`` or
  ``{"action": "REJECT", "message": ..., "rejection_category": ...}`` (the message at least
  100 characters); ``id`` is the submission ID, which Prolific passes as ``SESSION_ID``;
* ``POST /api/v1/studies/{study}/screen-out-submissions/`` with ``{"submission_ids": [...],
  "increase_places": bool}`` (and ``"bonus_per_submission"`` when given): Prolific's paid
  screen-out of active submissions, for a study set up with a fixed screen-out payment;
* ``POST /api/v1/submissions/bonus-payments/`` with ``{"study_id", "csv_bonuses"}``
  (``"<participant ID>,<amount>\\n"`` lines) sets up a bulk bonus (its ``id`` comes back),
  then ``POST /api/v1/bulk-bonus-payments/{id}/pay/`` pays it (not idempotent: sent once).

Every request carries ``Authorization: Token <PROLIFIC_API_TOKEN>``; the base URL is
``PROLIFIC_API_URL`` (default ``https://api.prolific.com``), overridable for tests: it must
be ``https://``, except a stand-in on this machine (``http://`` to ``127.0.0.1``, ``::1`` or
``localhost``, explicitly). No redirect is followed: the token would go with it to another
host; a redirect is an error. Error answers become one-line
:class:`ProlificError` messages.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import quote, urlsplit

from app.errors import InvalidInput, MarginaliaError

DEFAULT_BASE_URL = "https://api.prolific.com"
TIMEOUT_SECONDS = 30
MIN_REJECTION_MESSAGE = 100
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
PROLIFIC_ID = re.compile(r"^[A-Za-z0-9]{1,64}$")
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Follow no redirect: the 3xx comes back as an HTTPError, the token stays here."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def base_url_checked(base: str) -> str:
    """``base`` if it is https, or http to this machine (a local stand-in); else InvalidInput."""
    parts = urlsplit(base)
    if parts.scheme == "https" and parts.hostname:
        return base.rstrip("/")
    if parts.scheme == "http" and parts.hostname in LOOPBACK:
        return base.rstrip("/")
    raise InvalidInput(
        "PROLIFIC_API_URL must start with https:// (plain http only to a stand-in on "
        "127.0.0.1, ::1 or localhost)"
    )


class ProlificError(MarginaliaError):
    """Prolific refused a request or could not be reached."""

    status = 502


def _detail(body: bytes) -> str:
    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return ""
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            detail = error.get("detail") or error.get("title") or ""
            return " ".join(str(d) for d in detail) if isinstance(detail, list) else str(detail)
        return str(error)
    return ""


class ProlificClient:
    """A thin client: one method per documented request, JSON in and out."""

    def __init__(self, token: str | None = None, base_url: str | None = None) -> None:
        self.token = token if token is not None else os.environ.get("PROLIFIC_API_TOKEN", "")
        if not self.token.strip():
            raise InvalidInput("set PROLIFIC_API_TOKEN to your Prolific API token")
        base = base_url or os.environ.get("PROLIFIC_API_URL") or DEFAULT_BASE_URL
        self.base_url = base_url_checked(base)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(
            self.base_url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Token {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with _OPENER.open(request, timeout=TIMEOUT_SECONDS) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as exc:
            raise self._error(exc, path) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ProlificError(f"cannot reach Prolific at {self.base_url}: {reason}") from None
        return json.loads(raw) if raw.strip() else {}

    @staticmethod
    def _error(exc: urllib.error.HTTPError, path: str) -> ProlificError:
        detail = _detail(exc.read() or b"")
        suffix = f": {detail}" if detail else ""
        if exc.code == 401:
            return ProlificError(
                f"Prolific refused the token (401){suffix}: check PROLIFIC_API_TOKEN"
            )
        if exc.code == 403:
            return ProlificError(f"Prolific forbids this (403){suffix}")
        if exc.code == 404:
            return ProlificError(f"Prolific has nothing at {path} (404){suffix}")
        if 300 <= exc.code < 400:
            where = exc.headers.get("Location", "elsewhere") if exc.headers else "elsewhere"
            return ProlificError(
                f"Prolific answered with a redirect ({exc.code}) to {where[:200]}: not "
                "followed (it would carry the token); check PROLIFIC_API_URL"
            )
        if exc.code == 429:
            wait = exc.headers.get("Retry-After") if exc.headers else None
            later = f" in {wait} s" if wait else " later"
            return ProlificError(f"Prolific is limiting requests (429): try again{later}")
        if exc.code >= 500:
            return ProlificError(f"Prolific had a server error ({exc.code}): try again later")
        return ProlificError(f"Prolific refused the request ({exc.code}){suffix}")

    def approve(self, submission_id: str) -> Any:
        return self.request(
            "POST", f"/api/v1/submissions/{_id(submission_id)}/transition/", {"action": "APPROVE"}
        )

    def reject(self, submission_id: str, message: str, category: str) -> Any:
        return self.request(
            "POST",
            f"/api/v1/submissions/{_id(submission_id)}/transition/",
            {"action": "REJECT", "message": message, "rejection_category": category},
        )

    def screen_out(
        self,
        study_id: str,
        submission_ids: list[str],
        *,
        increase_places: bool = False,
        bonus: Decimal | None = None,
    ) -> Any:
        for submission in submission_ids:
            _id(submission)
        body: dict[str, Any] = {
            "submission_ids": list(submission_ids),
            "increase_places": bool(increase_places),
        }
        if bonus is not None:
            body["bonus_per_submission"] = float(bonus)
        return self.request(
            "POST", f"/api/v1/studies/{_id(study_id)}/screen-out-submissions/", body
        )

    def set_up_bonuses(self, study_id: str, bonuses: list[tuple[str, Decimal]]) -> str:
        lines = "".join(f"{participant},{amount}\n" for participant, amount in bonuses)
        answer = self.request(
            "POST",
            "/api/v1/submissions/bonus-payments/",
            {"study_id": _id(study_id), "csv_bonuses": lines},
        )
        payment = answer.get("id") if isinstance(answer, dict) else None
        if not isinstance(payment, str) or not PROLIFIC_ID.match(payment):
            raise ProlificError("Prolific's answer to the bonus set-up has no payment id")
        return payment

    def pay_bonuses(self, payment_id: str) -> Any:
        return self.request("POST", f"/api/v1/bulk-bonus-payments/{_id(payment_id)}/pay/", {})


def _id(value: str) -> str:
    if not isinstance(value, str) or not PROLIFIC_ID.match(value):
        raise InvalidInput(f"{value!r} is not a Prolific ID")
    return quote(value)


def check_rejection(message: str, category: str) -> None:
    if category not in REJECTION_CATEGORIES:
        raise InvalidInput(f"category must be one of {', '.join(REJECTION_CATEGORIES)}")
    if len(message.strip()) < MIN_REJECTION_MESSAGE:
        raise InvalidInput(
            f"Prolific needs a rejection message of at least {MIN_REJECTION_MESSAGE} characters"
        )


def bonus_amount(value: str) -> Decimal:
    """A bonus in the study's currency: positive, at most two decimals, below 1000."""
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise InvalidInput(f"bonus amount {value!r} is not a number") from None
    if (
        not amount.is_finite()
        or amount <= 0
        or amount >= 1000
        or amount != amount.quantize(Decimal("0.01"))
    ):
        raise InvalidInput(f"bonus amount {value!r} must be positive, below 1000, two decimals")
    return amount.quantize(Decimal("0.01"))
