"""How large a request body a route takes, and how long it may take to arrive: the rules
the web process's front (:mod:`app.web.front`) applies before any byte is read.

- Every route takes at most ``MAX_CONTENT_LENGTH`` (64 KB: a worker's JSON needs a few
  kilobytes). Only the researchers' upload routes (``UPLOAD_ENDPOINTS``, the same set that
  raises Flask's own limit for them) take up to ``MAX_UPLOAD_LENGTH`` (32 MB), and only
  with a signed-in researcher's session cookie: an anonymous client cannot make the
  process hold megabytes. The route is looked up only for a body over the small limit.
- A body must arrive by ``WEB_BODY_TIMEOUT`` seconds (10) after the headers, plus one
  second per ``WEB_BODY_MIN_RATE`` bytes received (500, Apache mod_reqtimeout's rule:
  a slow but real upload goes on), and never later than ``WEB_BODY_MAX_SECONDS`` (300)
  whatever it has sent: the deadline no longer grows with the declared length.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from app.web.answers import too_large

DEFAULT_BODY_TIMEOUT = 10.0
DEFAULT_BODY_MIN_RATE = 500.0
DEFAULT_BODY_MAX_SECONDS = 300.0


@dataclass(frozen=True)
class Refusal:
    """An answer given before the body is read (the connection is then closed)."""

    status: int
    message: str
    retry_after: int = 0

    def json(self) -> bytes:
        return json.dumps({"error": self.message}).encode()


def _too_large(limit: int) -> Refusal:
    """The 413 of a body over ``limit``, in the app's own words (:func:`app.web.answers.too_large`)."""
    return Refusal(413, too_large(limit))


def _seconds(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    number = float(value)
    if not number > 0:
        raise ValueError(f"{name} must be a number above 0, not {value!r}")
    return number


@dataclass
class BodyRules:
    """The limits of one app (see the module's docstring)."""

    max_content: int = 64 * 1024
    max_upload: int = 32 * 1024 * 1024
    timeout: float = DEFAULT_BODY_TIMEOUT
    min_rate: float = DEFAULT_BODY_MIN_RATE
    max_seconds: float = DEFAULT_BODY_MAX_SECONDS
    # the route's endpoint for a method and path (None: no route): for bodies over max_content
    endpoint_of: Any = None
    upload_endpoints: frozenset[str] = field(default_factory=frozenset)
    # True when the request's cookies hold a signed-in researcher's session
    researcher_signed_in: Any = None

    @classmethod
    def of(cls, app: Any) -> BodyRules:
        """The rules of a Flask app (its config, URL map and session signing), with the
        timing settings from the environment. Any other WSGI app (a bench's baseline) gets
        the defaults and no upload routes."""
        config = getattr(app, "config", {})
        rules = cls(
            max_content=int(config.get("MAX_CONTENT_LENGTH") or 64 * 1024),
            max_upload=int(config.get("MAX_UPLOAD_LENGTH") or 32 * 1024 * 1024),
            timeout=_seconds("WEB_BODY_TIMEOUT", DEFAULT_BODY_TIMEOUT),
            min_rate=_seconds("WEB_BODY_MIN_RATE", DEFAULT_BODY_MIN_RATE),
            max_seconds=_seconds("WEB_BODY_MAX_SECONDS", DEFAULT_BODY_MAX_SECONDS),
        )
        if hasattr(app, "url_map") and hasattr(app, "session_interface"):
            from app.web.admin.blueprint import UPLOAD_ENDPOINTS

            rules.upload_endpoints = frozenset(UPLOAD_ENDPOINTS)
            rules.endpoint_of = _endpoint_lookup(app)
            rules.researcher_signed_in = _session_check(app)
        return rules

    def check(self, method: str, path: str, length: int, headers: Any) -> Refusal | None:
        """None when a body of ``length`` bytes may be read for this request."""
        if length <= self.max_content:
            return None
        endpoint = self.endpoint_of(method, path) if self.endpoint_of else None
        if endpoint not in self.upload_endpoints:
            return _too_large(self.max_content)
        if length > self.max_upload:
            return _too_large(self.max_upload)
        if not (self.researcher_signed_in and self.researcher_signed_in(headers.get("cookie"))):
            return Refusal(403, "sign in as a researcher to upload files")
        return None

    def deadline(self, started: float, received: int) -> float:
        """When the body must have arrived, given the bytes received so far."""
        return started + min(self.max_seconds, self.timeout + received / self.min_rate)


def _endpoint_lookup(app: Any) -> Any:
    from werkzeug.exceptions import HTTPException

    adapter = app.url_map.bind("localhost")

    def endpoint_of(method: str, path: str) -> str | None:
        try:
            endpoint, _ = adapter.match(path, method=method)
        except HTTPException:
            return None
        return endpoint

    return endpoint_of


def _session_check(app: Any) -> Any:
    """Whether a Cookie header carries a session this app signed for a researcher (the
    signature and age only: the app checks the account itself on the request)."""
    from werkzeug.http import parse_cookie

    name = app.config.get("SESSION_COOKIE_NAME") or "session"
    max_age = int(app.permanent_session_lifetime.total_seconds())

    def signed_in(cookie_header: str | None) -> bool:
        if not cookie_header:
            return False
        value = parse_cookie(cookie_header).get(name)
        if not value:
            return False
        with app.app_context():
            serializer = app.session_interface.get_signing_serializer(app)
        if serializer is None:
            return False
        try:
            data = serializer.loads(value, max_age=max_age)
        except Exception:  # noqa: BLE001 - forged, expired or from another key
            return False
        return isinstance(data, dict) and isinstance(data.get("researcher_id"), int)

    return signed_in
