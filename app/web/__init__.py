"""HTTP layer: blueprints, error handlers and response headers."""

from __future__ import annotations

from flask import Flask, jsonify, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from app.errors import MarginaliaError


def register(app: Flask) -> None:
    """Attach every blueprint and the JSON error handlers to ``app``."""
    from app.web import api, pages

    app.register_blueprint(api.bp)
    app.register_blueprint(pages.bp)

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
