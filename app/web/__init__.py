"""HTTP layer: blueprints, error handlers and response headers."""

from __future__ import annotations

from flask import Flask, jsonify, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from app.errors import MarginaliaError


def register(app: Flask) -> None:
    """Attach every blueprint and the JSON error handlers to ``app``."""
    from flask_wtf.csrf import CSRFProtect

    from app.web import admin, api, health, pages
    from app.web.limits import limiter

    app.config.setdefault("RATELIMIT_STORAGE_URI", "memory://")
    limiter.init_app(app)
    csrf = CSRFProtect(app)
    csrf.exempt(api.bp)  # token-authenticated JSON, no cookies involved
    app.config.setdefault("SESSION_COOKIE_HTTPONLY", True)
    app.config.setdefault("SESSION_COOKIE_SAMESITE", "Lax")
    app.register_blueprint(api.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(health.bp)

    @app.errorhandler(MarginaliaError)
    def _marginalia_error(exc: MarginaliaError):
        return jsonify(error=str(exc)), exc.status

    @app.errorhandler(RequestEntityTooLarge)
    def _too_large(_exc):
        limit = app.config["MAX_CONTENT_LENGTH"]
        return jsonify(error=f"request body is larger than the limit of {limit} bytes"), 413

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        if request.path.startswith("/api/"):
            return jsonify(error=exc.description or exc.name), exc.code
        return exc

    @app.after_request
    def _security_headers(response):
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; object-src 'none'; "
            "base-uri 'none'; frame-ancestors 'none'",
        )
        return response
