"""The worker API's one entry: every ``/api/assignments…`` request of a worker's browser,
answered here, in front of Flask (a plain WSGI dispatcher: no Flask request context, session,
hooks or error machinery, which cost more than an add's statements).

Each path runs its action's one function (:mod:`app.annotation`'s ``arrive``, ``read``,
``add``, ``remove``, ``edit``, ``position``, ``submit``, ``practice_check``, ``hint_events``)
on a handle of its own (:func:`app.annotation.handle.open_handle`): committed when the action
answers, rolled back when it refuses. Every outcome is answered here, once:

* the action's answer (201/200/204, ``GET``'s payload gzipped when the client takes it, the
  document's share compressed once per process);
* a refusal (:class:`~app.errors.MarginaliaError`): its status and body
  (:func:`app.web.answers.error_body`, the Flask app's too);
* a body it cannot read: 400 naming the problem (not JSON, nested too deeply, NUL or lone
  surrogates), 413 over ``MAX_CONTENT_LENGTH``;
* a limit exceeded (arrivals, practice checks; :func:`app.web.limits.count`, flask-limiter's
  buckets): 429;
* the database lost (or busy past its timeouts): 503 with ``Retry-After`` (the page's outbox
  retries), nothing stored;
* anything else: a logged 500.

Answers carry the Flask app's headers (``Cache-Control: no-store``, the security headers of
:func:`app.csp.security_headers`). Only a researcher's arrival (``POST /api/assignments`` with
an ``Authorization`` header: ``admission.open_for_document``) and paths that are no worker
action go on to Flask. After an arrival's answer has gone out, the study's stale holds are
released when this process is due (:func:`app.annotation.arrive.release_stale`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from flask import Flask
from werkzeug.exceptions import InternalServerError, MethodNotAllowed
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wsgi import ClosingIterator

from app.annotation import hint_events, position, practice_check
from app.annotation.add import add
from app.annotation.arrive import arrive, release_stale, resolve
from app.annotation.cache import segment_count
from app.annotation.connect import open_handle
from app.annotation.consent import Proof
from app.annotation.edit import edit
from app.annotation.handle import Handle, lost_connection
from app.annotation.read import payload_parts
from app.annotation.remove import remove
from app.annotation.sessions import Open
from app.annotation.submit import submit
from app.annotation.values import MAX_ID
from app.csp import security_headers
from app.documents.numbers import MAX_DIGITS
from app.errors import InvalidInput, MarginaliaError, NotFound
from app.web.answers import (
    LOST_DATABASE,
    NOT_JSON,
    error_body,
    is_json_type,
    parse_json,
    too_large,
)
from app.web.assets import deflated_piece, gzip_pieces
from app.web.limits import ARRIVALS, PRACTICE, arrival_limit_of, count, practice_limit_of

log = logging.getLogger(__name__)

PREFIX = "/api/assignments"
PATH = re.compile(r"^/api/assignments(?:/(?P<token>[^/]+)(?P<rest>/.*)?)?$")
NUMBER = r"([0-9]+)"
Answer = tuple[int, Any]  # status, JSON value (None: no body)


@dataclass(frozen=True)
class Route:
    method: str
    action: str
    json: bool = False  # reads a JSON body


ROUTES: tuple[tuple[re.Pattern, Route], ...] = tuple(
    (re.compile(f"^{pattern}$"), route)
    for pattern, route in (
        ("", Route("GET", "read")),  # a live assignment's read stamps the activity
        ("/annotations", Route("POST", "add", json=True)),
        (f"/annotations/{NUMBER}", Route("DELETE", "remove")),
        (f"/annotations/{NUMBER}/edit", Route("POST", "edit", json=True)),
        ("/position", Route("POST", "position", json=True)),
        ("/heartbeat", Route("POST", "heartbeat", json=True)),
        ("/submit", Route("POST", "submit")),
        (f"/practice/{NUMBER}", Route("POST", "practice", json=True)),
        (f"/suggestions/{NUMBER}/events", Route("POST", "event", json=True)),
        ("/suggestions/events", Route("POST", "events", json=True)),
    )
)
ARRIVAL = Route("POST", "arrive", json=True)


class WorkerApi:
    """WSGI middleware in front of the Flask app (see the module's docstring)."""

    def __init__(self, app: Flask, wsgi_app: Callable) -> None:
        self.app = app
        self.wsgi_app = wsgi_app

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if not path.startswith(PREFIX):
            return self.wsgi_app(environ, start_response)
        found = PATH.match(path)
        if found is None:
            return self.wsgi_app(environ, start_response)
        token, rest = found["token"], found["rest"] or ""
        method = environ.get("REQUEST_METHOD", "GET")
        if token is None:  # POST /api/assignments: an arrival
            if "HTTP_AUTHORIZATION" in environ:  # a researcher's script: the Flask route
                return self.wsgi_app(environ, start_response)
            return self._serve(environ, start_response, ARRIVAL, method, None, None)
        for pattern, route in ROUTES:
            matched = pattern.match(rest)
            if matched is not None:
                number = path_number(matched[1]) if matched.groups() else None
                return self._serve(environ, start_response, route, method, token, number)
        return self.wsgi_app(environ, start_response)  # no such path: Flask's 404

    def _serve(
        self,
        environ: dict[str, Any],
        start_response: Callable,
        route: Route,
        method: str,
        token: str | None,
        number: int | None,
    ) -> Iterable[bytes]:
        head = method == "HEAD" and route.method == "GET"
        if method == "OPTIONS" or (method != route.method and not head):
            return self._not_allowed(environ, start_response, route, method)
        after: list[Callable[[], None]] = []
        answer = self._answer_for(environ, route, token, number, after)
        written = self._write(environ, start_response, route, answer, head)
        return ClosingIterator(written, after) if after else written

    def _answer_for(
        self,
        environ: dict[str, Any],
        route: Route,
        token: str | None,
        number: int | None,
        after: list[Callable[[], None]],
    ) -> Answer:
        config = self.app.config
        limit = None
        if route.action == "arrive":
            limit = count(environ, arrival_limit_of(config), ARRIVALS)
        elif route.action == "practice":
            limit = count(environ, practice_limit_of(config), PRACTICE)
        if limit is not None:  # flask-limiter's 429, as the Flask app words it
            return 429, {"error": limit}
        try:
            if route.action == "event" and not 0 < (number or 0) <= MAX_ID:
                raise NotFound("no such suggestion")  # a path naming no possible suggestion
            body = self._body(environ) if route.json else None
            action = _action(route.action, token, number, body, after, self.app.secret_key)
        except MarginaliaError as refusal:
            return refusal.status, error_body(refusal)
        return self._run(route, action)

    def _body(self, environ: dict[str, Any]) -> Any:
        """The request's JSON body, or the refusal naming what is wrong with it."""
        if not is_json_type(environ.get("CONTENT_TYPE", "")):
            raise InvalidInput(NOT_JSON)
        limit = self.app.config["MAX_CONTENT_LENGTH"]
        stream = environ["wsgi.input"]
        try:
            length = int(environ.get("CONTENT_LENGTH") or -1)
        except ValueError:
            length = -1
        if length > limit:
            raise MarginaliaError(too_large(limit), status=413)
        if length >= 0:
            raw = stream.read(length)
        elif environ.get("wsgi.input_terminated"):  # no length: read to the end, bounded
            raw = stream.read(limit + 1)
            if len(raw) > limit:
                raise MarginaliaError(too_large(limit), status=413)
        else:
            raw = b""
        return parse_json(raw)

    def _run(self, route: Route, action: Callable[[Handle], Answer]) -> Answer:
        """``action`` on a handle of its own: committed when it answers, rolled back when it
        refuses; a lost database is a 503, anything else a logged 500."""
        db = None
        try:
            db = open_handle(self.app.extensions["db_engine"])
            try:
                answer = action(db)
            except MarginaliaError as refusal:
                db.rollback()
                db.close()
                return refusal.status, error_body(refusal)
            db.commit()
            db.close()
            return answer
        except Exception as error:  # noqa: BLE001 - answered here, never handed on
            if db is not None:
                try:
                    db.fail(error)
                except Exception:  # noqa: BLE001 - the connection is gone either way
                    log.debug("dropping the connection failed", exc_info=True)
            if lost_connection(error):
                log.warning("worker API: the database failed: %s", error)
                return 503, {"error": LOST_DATABASE}
            log.exception("worker API: %s failed", route.action)
            return 500, {"error": InternalServerError.description}

    def _write(
        self,
        environ: dict[str, Any],
        start_response: Callable,
        route: Route,
        answer: Answer,
        head: bool,
    ) -> list[bytes]:
        status, value = answer
        headers = [("Cache-Control", "no-store")]
        if isinstance(value, _Payload):
            payload, packed = value.body(environ.get("HTTP_ACCEPT_ENCODING", ""))
            headers.append(("Content-Type", "application/json"))
            if packed:
                headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
        elif value is None:
            payload = b""
        else:
            payload = dumps(value)
            headers.append(("Content-Type", "application/json"))
        if payload:
            headers.append(("Content-Length", str(len(payload))))
        if status == 503:
            headers.append(("Retry-After", "1"))
        headers += security_headers(environ.get("wsgi.url_scheme") == "https")
        start_response(f"{status} {HTTP_STATUS_CODES[status].upper()}", headers)
        return [b""] if head else [payload]

    def _not_allowed(
        self, environ: dict[str, Any], start_response: Callable, route: Route, method: str
    ) -> list[bytes]:
        """405 for another method on a worker path (200 with ``Allow`` for ``OPTIONS``), as
        Flask answers them."""
        allowed = sorted({route.method, "OPTIONS"} | ({"HEAD"} if route.method == "GET" else set()))
        headers = [("Allow", ", ".join(allowed))]
        if method == "OPTIONS":
            headers += [("Content-Length", "0"), *security_headers(_https(environ))]
            start_response("200 OK", headers)
            return [b""]
        payload = dumps({"error": MethodNotAllowed.description})
        headers += [
            ("Cache-Control", "no-store"),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(payload))),
            *security_headers(_https(environ)),
        ]
        start_response("405 METHOD NOT ALLOWED", headers)
        return [payload]


def path_number(digits: str) -> int:
    """A path's id or segment number: one too long for any id (``int`` refuses more than
    4,300 digits) is past every id's range, so its action answers it as any unknown id."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= MAX_DIGITS else MAX_ID + 1


def _https(environ: dict[str, Any]) -> bool:
    return environ.get("wsgi.url_scheme") == "https"


def dumps(value: Any) -> bytes:
    """``value`` as Flask's ``jsonify`` writes it (sorted keys, ASCII, compact, a newline)."""
    text = json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return (text + "\n").encode()


class _Payload:
    """The read's answer: its parts spliced in sorted order, gzipped when the client takes
    it (the document's share compressed once per process, kept in the cache's part)."""

    SHARED = ("document", "entities", "mentions")  # adjacent in sorted order: one piece

    def __init__(self, parts: dict[str, str], document: Any) -> None:
        self.parts, self.document = parts, document

    def body(self, accept_encoding: str) -> tuple[bytes, bool]:
        parts = self.parts
        keys = sorted(parts)
        if "gzip" not in accept_encoding.lower():
            return ("{" + ",".join(f'"{key}":{parts[key]}' for key in keys) + "}\n").encode(), False
        at = keys.index(self.SHARED[0])
        assert tuple(keys[at : at + len(self.SHARED)]) == self.SHARED
        before = "{" + "".join(f'"{key}":{parts[key]},' for key in keys[:at])
        after = "".join(f',"{key}":{parts[key]}' for key in keys[at + len(self.SHARED) :]) + "}\n"
        document = self.document
        if document.deflated is None:
            document.deflated = deflated_piece(document.share)
        pieces = [(before.encode(), None), (document.share, document.deflated)]
        return gzip_pieces([*pieces, (after.encode(), None)]), True


def _action(
    name: str,
    token: str | None,
    number: int | None,
    body: Any,
    after: list[Callable[[], None]],
    key: Any = None,
) -> Callable[[Handle], Answer]:
    """The route's action as a function of the handle, answering (status, JSON value);
    ``key``: the app's secret key, which signed an arrival's consent proof."""
    assert name == "arrive" or token is not None
    tok = token or ""
    if name == "read":
        return lambda db: (200, _Payload(*payload_parts(db, tok)))
    if name == "add":
        return lambda db: _added(add(db, tok, body))
    if name == "remove":
        return lambda db: _done(remove(db, tok, number or 0))
    if name == "edit":
        return lambda db: _added(edit(db, tok, number or 0, body))
    if name == "position":
        return lambda db: _done(position.set_position(db, tok, body))
    if name == "heartbeat":
        return lambda db: _done(position.heartbeat(db, tok))
    if name == "submit":
        return lambda db: (200, submit(db, tok))
    if name == "practice":
        return lambda db: (200, practice_check.check(db, tok, number or 0))
    if name in ("event", "events"):
        event, ids = _events(name, number, body)
        return lambda db: _done(hint_events.record(db, tok, event, ids))
    return partial(_arrive, body=body, after=after, key=key)


def _done(_nothing: None) -> Answer:
    return 204, None


def _added(stored: tuple[dict[str, Any], bool]) -> Answer:
    annotation, created = stored
    return (201 if created else 200), annotation


def _events(name: str, number: int | None, body: Any) -> tuple[str, list[int]]:
    """A suggestion-event post's event and ids, checked (400 naming the problem)."""
    if name == "event":
        event = hint_events.parse_event(body.get("event") if isinstance(body, dict) else None)
        return event, hint_events.parse_ids([number])
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    event = hint_events.parse_event(body.get("event"))
    return event, hint_events.parse_ids(body.get("suggestions"))


def _arrive(db: Handle, *, body: Any, after: list[Callable[[], None]], key: Any) -> Answer:
    """``POST /api/assignments``: new work under the study's policy, never an existing token
    (CONTRACT.md); ``document`` optional, checked against the policy when given; ``consent``:
    the consent form's signed answer, where the study asks for consent."""
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    if not isinstance(body.get("study"), str):
        raise InvalidInput("study must be the study's slug")
    study, worker_id, target = resolve(
        db, body["study"], body.get("worker_id"), body.get("document")
    )
    visit = Open(Proof(body.get("consent"), key), always=False)
    arrived = arrive(db, study, worker_id, document=target, session=visit)
    document = arrived.document
    segments = document.segments
    if segments is None:
        segments = segment_count(db, document.id, document.created_at)
    if arrived.release is not None:  # stale holds due: released once the answer is out
        after.append(partial(release_stale, db.engine, arrived.release))
    return 201, {"token": arrived.token, "segments": segments, "resume_segment": 0}


def install(app: Flask) -> None:
    """Put the worker API's entry in front of ``app`` (inside any proxy fix added later)."""
    app.wsgi_app = WorkerApi(app, app.wsgi_app)  # type: ignore[method-assign]
