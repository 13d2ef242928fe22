"""HTTP layer: blueprints, error handlers and response headers."""

from __future__ import annotations

from flask import Flask, abort, jsonify, request
from sqlalchemy.exc import DBAPIError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from app.csp import FRAMING_HEADERS, security_headers
from app.errors import MarginaliaError
from app.web.answers import LOST_DATABASE, error_body, too_large


def trust_proxy(app: Flask) -> None:
    """Honour X-Forwarded-* from ``BEHIND_PROXY`` proxies (0: trust none, the default).

    Only then are the client's address (rate limits) and scheme (HSTS, secure URLs) taken
    from the proxy's headers; a direct client could otherwise forge them.
    """
    hops = int(app.config.get("BEHIND_PROXY") or 0)
    if hops > 0:
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops, x_port=hops, x_prefix=hops
        )


def _refuse_nul():
    """No database stores a NUL character and Postgres refuses one in a query (a 500): a NUL in a path's values is the 404 of a thing that does not exist, as SQLite
    answered, before any view runs. (Form and query fields are checked by their views, each
    with its own message; JSON bodies by app/web/answers.py.)"""
    if any("\x00" in str(v) for v in (request.view_args or {}).values()):
        abort(404)


def register(app: Flask) -> None:
    """Attach every blueprint and the JSON error handlers to ``app``."""
    from flask_wtf.csrf import CSRFProtect

    from app.researchers.sessions import configure_sessions
    from app.web import admin, api, assets, health, i18n, journey, pages, worker_api
    from app.web.limits import limiter

    worker_api.install(app)
    trust_proxy(app)
    app.config.setdefault("RATELIMIT_STORAGE_URI", "memory://")
    limiter.init_app(app)
    csrf = CSRFProtect(app)
    csrf.exempt(api.bp)  # token-authenticated JSON, no cookies involved
    csrf.exempt(journey.bp)  # worker forms: no cookies; the token or arrival is the proof
    csrf.exempt(pages.next_document)  # a worker form too: the token is the proof
    configure_sessions(app)
    app.before_request(_refuse_nul)
    app.register_blueprint(api.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(journey.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(health.bp)
    assets.register(app)
    i18n.init_app(app)

    @app.errorhandler(MarginaliaError)
    def _marginalia_error(exc: MarginaliaError):
        response = jsonify(error_body(exc))
        if exc.status == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="marginalia"'
        return response, exc.status

    @app.errorhandler(DBAPIError)
    def _database_gone(exc: DBAPIError):
        # A connection that broke while pooled (the database restarted): nothing was stored,
        # and SQLAlchemy has replaced the pool's older connections, so a retry goes through
        # (the annotate page's outbox retries every 5xx). Anything else stays a 500.
        if not exc.connection_invalidated:
            raise exc
        response = jsonify(error=LOST_DATABASE)
        response.headers["Retry-After"] = "1"
        return response, 503

    @app.errorhandler(RequestEntityTooLarge)
    def _too_large(_exc):
        # Upload endpoints raise their own limit for this request (admin/blueprint.py).
        limit = request.max_content_length or app.config["MAX_CONTENT_LENGTH"]
        return jsonify(error=too_large(limit)), 413

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        if request.path.startswith("/api/"):
            return jsonify(error=exc.description or exc.name), exc.code
        return exc

    @app.after_request
    def _security_headers(response):
        headers = response.headers
        # Pages a crowd platform must frame set their own CSP (frame-ancestors naming it).
        framed = "Content-Security-Policy" in headers
        for name, value in security_headers(request.is_secure):
            if not (framed and name in FRAMING_HEADERS):
                headers.setdefault(name, value)
        return response
