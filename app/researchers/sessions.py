"""The session cookie's attributes: ``SameSite=Lax``, ``HttpOnly``, ``Secure`` whenever the
request came over HTTPS (directly, or through the ``BEHIND_PROXY`` proxies), and an idle
lifetime of ``SESSION_LIFETIME_HOURS`` (each request renews it)."""

from __future__ import annotations

from flask import Flask, has_request_context, request
from flask.sessions import SecureCookieSessionInterface


class ResearcherSessionInterface(SecureCookieSessionInterface):
    """Flask's signed cookie, marked ``Secure`` on HTTPS requests even when not configured."""

    def get_cookie_secure(self, app: Flask) -> bool:
        configured = bool(app.config["SESSION_COOKIE_SECURE"])
        return configured or (has_request_context() and request.is_secure)

    def open_session(self, app: Flask, request):  # type: ignore[no-untyped-def]
        """No cookie, nothing to verify: an empty session without building the signer (the
        worker API's requests carry no cookie)."""
        if not request.cookies.get(self.get_cookie_name(app)) and app.secret_key:
            return self.session_class()
        return super().open_session(app, request)


def configure_sessions(app: Flask) -> None:
    """Cookie attributes for researcher logins (Flask's defaults are SameSite unset, 31 days)."""
    app.session_interface = ResearcherSessionInterface()
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    if not app.config.get("SESSION_COOKIE_SAMESITE"):
        app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    app.config["SESSION_REFRESH_EACH_REQUEST"] = True
