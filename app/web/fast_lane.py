"""The fast lane: the annotate page's most frequent writes answered before Flask (issue 17).

Adds, removes, position updates and heartbeats are most of a document's requests. This WSGI
middleware takes such a request when it is well formed (the route, a JSON body under the
size limit whose text a database can store), runs :mod:`app.annotation.fast`'s action on a
pooled connection in one transaction, commits and answers; Flask's request context,
session, hooks and error machinery cost more than the statements themselves.

The action is the route's own (``app/web/api.py`` calls the same functions), so the lane
gives the API's one answer for refusals too (an unknown or submitted token, a duplicate, a
frozen practice segment, a body the checks refuse): the refusal's :class:`MarginaliaError`,
rolled back and written as the route's error handler writes it (``app/web/__init__.py``).
A body it cannot read (not JSON, too large, not storable text) or a database error is
rolled back and handed to the Flask route unchanged, body included. Its answers carry the
same headers as Flask's (``app.csp.security_headers``, ``Cache-Control: no-store``);
``FAST_LANE = False`` in the config turns it off.

The page's read, ``GET /api/assignments/<token>``, is answered here too
(:mod:`app.web.assignment_read`, gzipped as :func:`app.web.assets.compress` would); an
unknown token or any error goes to the route the same way. So are the submit
(on Postgres the common one in two round trips, :mod:`app.annotation.fast_submit`; any
other through :func:`app.web.api.submitted`, the route's own, on a session of the app's
factory; a refusal answered, any other error to the route) and the common arrival
(:mod:`app.web.fast_arrival`, issue 31).
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from flask import Flask
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wsgi import ClosingIterator

from app.annotation import fast, fast_submit, hot_sql
from app.annotation.named_arrival import release_stale
from app.csp import security_headers
from app.db import begin_write
from app.errors import MarginaliaError, NotFound
from app.web import fast_arrival
from app.web.api import NAMED_DECLINED, check_strings, submitted
from app.web.assignment_read import payload_body, spliceable
from app.web.limits import COUNTED, count_arrival

log = logging.getLogger(__name__)

ROUTE = re.compile(
    r"^/api/assignments/(?P<token>[^/]+)/(?:(?P<annotations>annotations)(?:/(?P<id>[0-9]{1,10}))?"
    r"|(?P<position>position)|(?P<heartbeat>heartbeat)|(?P<submit>submit))$"
)
TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
READ_ROUTE = re.compile(r"^/api/assignments/(?P<token>[A-Za-z0-9_-]{1,64})$")
JSON_TYPES = ("application/json",)

Answer = tuple[str, bytes]  # status line, body


class FastLane:
    """WSGI middleware in front of the Flask app (see the module's docstring)."""

    def __init__(self, app: Flask, wsgi_app: Callable) -> None:
        self.app = app
        self.wsgi_app = wsgi_app

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        match = ROUTE.match(path)
        if match is None or not self.app.config.get("FAST_LANE", True):
            if environ.get("REQUEST_METHOD") == "GET" and READ_ROUTE.match(path):
                return self._read(environ, start_response, path.rsplit("/", 1)[1])
            if path == fast_arrival.PATH and environ.get("REQUEST_METHOD") == "POST":
                return self._arrive(environ, start_response)
            return self.wsgi_app(environ, start_response)
        method = environ.get("REQUEST_METHOD")
        token = match["token"]
        raw: bytes | None = None
        if method == "POST" and match["submit"]:  # no body read (the route reads none)
            if not TOKEN.match(token):  # the route's 404 (a NUL in the path included)
                return self.wsgi_app(environ, start_response)
            answer = self._submit(token)
            if answer is None:  # not the common submit (or an error): the route's own
                answer = self._in_session(lambda session: _json(200, submitted(session, token)))
            if answer is None:
                return self.wsgi_app(environ, start_response)
            return self._answer(environ, start_response, answer)
        if method == "POST" and match["id"] is None:
            raw, body = self._json(environ)
            if body is None:
                return self._hand_over(environ, start_response, raw)
            if match["annotations"]:
                action = lambda db: _added(*fast.add(db, token, body))  # noqa: E731
            elif match["position"]:
                action = lambda db: _done(fast.set_position(db, token, body))  # noqa: E731
            else:
                action = lambda db: _done(fast.heartbeat(db, token))  # noqa: E731
        elif method == "DELETE" and match["id"] is not None:
            annotation_id = int(match["id"])
            action = lambda db: _done(fast.remove(db, token, annotation_id))  # noqa: E731
        else:
            return self.wsgi_app(environ, start_response)
        answer = self._run(action)
        if answer is None:
            return self._hand_over(environ, start_response, raw)
        return self._answer(environ, start_response, answer)

    def _arrive(self, environ: dict[str, Any], start_response: Callable):
        """``POST /api/assignments``: the common arrival (:mod:`app.web.fast_arrival`) when
        the lane is on and the body is one; anything else to the route, the body put back."""
        if not self.app.config.get("FAST_LANE", True):
            return self.wsgi_app(environ, start_response)
        raw, body = self._json(environ)
        if not fast_arrival.takes(environ, body):
            return self._hand_over(environ, start_response, raw)
        counted, refusal = count_arrival(self.app.config, environ)
        if not counted:
            return self._hand_over(environ, start_response, raw)
        if refusal is not None:  # flask-limiter's 429, as the API's error handler writes it
            return self._answer(environ, start_response, _json(429, {"error": refusal}))
        if self.app.extensions["db_engine"].dialect.name == "postgresql":
            opened = self._run(lambda driver: fast_arrival.open_on_driver(driver, body))
        else:
            opened = fast_arrival.open_in_session(self.app, body)
        if opened is None:  # declined or failed, nothing written: the route, not counted again
            environ[COUNTED] = environ[NAMED_DECLINED] = True
            return self._hand_over(environ, start_response, raw)
        answer, release = opened
        written = self._answer(environ, start_response, _json(201, answer))
        if release is None:
            return written
        # stale holds due: released once the answer is out (the server calls close after)
        factory = self.app.extensions["db_sessionmaker"]
        return ClosingIterator(written, [partial(release_stale, factory, release)])

    def _answer(self, environ: dict[str, Any], start_response: Callable, answer: Answer):
        """``answer`` with the headers Flask's answer would carry."""
        status, payload = answer
        headers = [("Cache-Control", "no-store")]
        if payload:
            headers += [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
        headers += security_headers(environ.get("wsgi.url_scheme") == "https")
        start_response(status, headers)
        return [payload]

    def _read(self, environ: dict[str, Any], start_response: Callable, token: str):
        """``GET /api/assignments/<token>`` (:mod:`app.web.assignment_read`) on a pooled
        connection, gzipped when the client takes it (the document's share compressed once,
        :func:`app.web.assignment_read.payload_body`); an unknown token, debug mode or any
        error goes to the route."""
        if not self.app.config.get("FAST_LANE", True) or not spliceable(self.app):
            return self.wsgi_app(environ, start_response)
        try:
            with self.app.extensions["db_engine"].connect() as connection:
                accept = environ.get("HTTP_ACCEPT_ENCODING", "")
                body, packed = payload_body(self.app, connection, token, accept)
        except NotFound:  # the route gives the 404
            return self.wsgi_app(environ, start_response)
        except Exception:  # noqa: BLE001 - the route answers (503, ...)
            log.warning("fast lane: handing the read to the route", exc_info=True)
            return self.wsgi_app(environ, start_response)
        headers = [("Cache-Control", "no-store"), ("Content-Type", "application/json")]
        if packed:
            headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
        headers.append(("Content-Length", str(len(body))))
        headers += security_headers(environ.get("wsgi.url_scheme") == "https")
        start_response("200 OK", headers)
        return [body]

    def _json(self, environ: dict[str, Any]) -> tuple[bytes | None, Any]:
        """The body read (None: left unread), and its JSON when the route's checks would
        take it (else None)."""
        mimetype = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        try:
            length = int(environ.get("CONTENT_LENGTH") or -1)
        except ValueError:
            return None, None
        if mimetype not in JSON_TYPES or not 0 < length <= self.app.config["MAX_CONTENT_LENGTH"]:
            return None, None
        raw = environ["wsgi.input"].read(length)
        try:
            body = json.loads(raw)
            # NUL and lone surrogates can only come as \u escapes (or a raw NUL byte): a
            # body with neither needs no walk through its strings.
            if b"\\u" in raw or b"\x00" in raw:
                check_strings(body)
        except Exception:  # noqa: BLE001 - the route gives the message
            return raw, None
        return raw, body

    def _run(self, action: Callable[[Any], Answer]) -> Answer | None:
        """``action`` in one transaction: committed when it answers, rolled back when it
        refuses (the refusal is the answer); None (rolled back: the route answers) on any
        other error. On Postgres through the driver (:class:`app.annotation.hot_sql.Driver`),
        elsewhere through a SQLAlchemy connection."""
        engine = self.app.extensions["db_engine"]
        try:
            driver = hot_sql.driver_for(engine)
        except Exception:  # noqa: BLE001 - no connection: the route answers (503)
            log.warning("fast lane: no connection, handing the request to the route", exc_info=True)
            return None
        if driver is None:
            return self._run_on_connection(engine, action)
        try:
            answer = _transaction(action, driver, driver.commit, driver.rollback)
        except Exception as error:  # noqa: BLE001 - the Flask route answers
            log.warning("fast lane: handing the request to the route", exc_info=True)
            driver.fail(error)
            return None
        driver.close()
        return answer

    def _submit(self, token: str) -> Answer | None:
        """The common submit in two round trips on Postgres (:mod:`app.annotation.fast_submit`);
        None, nothing written, for any other submit, an error, or another database."""
        if self.app.extensions["db_engine"].dialect.name != "postgresql":
            return None
        # each statement commits as it runs (``alone``): _run's commit has nothing to send
        return self._run(lambda driver: _maybe(fast_submit.submit(driver, token)))

    def _run_on_connection(self, engine, action: Callable[[Any], Answer]) -> Answer | None:
        try:
            with engine.connect() as connection:
                if engine.dialect.name == "sqlite":
                    connection.execution_options(sqlite_begin="IMMEDIATE")
                transaction = connection.begin()
                return _transaction(action, connection, transaction.commit, transaction.rollback)
        except Exception:  # noqa: BLE001 - the Flask route answers (503 for a lost database)
            log.warning("fast lane: handing the request to the route", exc_info=True)
            return None

    def _in_session(self, action: Callable[[Any], Answer]) -> Answer | None:
        """``action`` on a session of the app's factory, as a route runs it (``BEGIN
        IMMEDIATE`` on SQLite): committed when it answers, rolled back when it refuses (the
        refusal is the answer); None (rolled back: the route answers) on any other error."""
        session = self.app.extensions["db_sessionmaker"]()
        try:
            begin_write(session)
            return _transaction(action, session, session.commit, session.rollback)
        except Exception:  # noqa: BLE001 - the Flask route answers (503 for a lost database)
            log.warning("fast lane: handing the request to the route", exc_info=True)
            return None
        finally:
            session.close()

    def _hand_over(self, environ: dict[str, Any], start_response: Callable, raw: bytes | None):
        """The request as it came (the body, if read, put back) to the Flask app."""
        if raw is not None:
            environ["wsgi.input"] = io.BytesIO(raw)
        return self.wsgi_app(environ, start_response)


def _transaction(
    action: Callable[[Any], Answer], db: Any, commit: Callable, rollback: Callable
) -> Answer:
    """``action(db)``, committed when it answers, rolled back when it refuses (the refusal,
    written as the API's error handler writes it, is the answer); any other error raised."""
    try:
        answer = action(db)
    except MarginaliaError as refusal:
        rollback()
        return _refused(refusal)
    commit()
    return answer


def _json(status: int, value: Any) -> Answer:
    """``value`` as Flask's ``jsonify`` writes it (sorted keys, ASCII, compact, a newline)."""
    text = json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return f"{status} {HTTP_STATUS_CODES[status].upper()}", (text + "\n").encode()


def _maybe(value: Any) -> Answer | None:
    return None if value is None else _json(200, value)


def _added(annotation: dict[str, Any], created: bool) -> Answer:
    return _json(201 if created else 200, annotation)


def _done(_nothing: None = None) -> Answer:
    return "204 NO CONTENT", b""


def _refused(refusal: MarginaliaError) -> Answer:
    """The answer of the API's error handler for ``refusal`` (``app/web/__init__.py``)."""
    return _json(refusal.status, {**refusal.details, "error": str(refusal)})


def install(app: Flask) -> None:
    """Put the fast lane in front of ``app`` (inside any proxy fix added later)."""
    app.wsgi_app = FastLane(app, app.wsgi_app)  # type: ignore[method-assign]
