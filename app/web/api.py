"""The JSON API's researcher part: a script's arrival with the researcher's API key.

Every worker request (``/api/assignments…`` without ``Authorization``) is answered by the
worker API's entry before Flask (:mod:`app.web.worker_api`); shapes per CONTRACT.md.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request

from app.annotation import admission
from app.annotation.cache import segment_count
from app.annotation.connect import handle_of
from app.db import begin_write, get_session
from app.documents.studies import find_document
from app.errors import InvalidInput, MarginaliaError
from app.researchers import access, keys
from app.web.answers import NOT_JSON, parse_json
from app.web.limits import ARRIVALS, arrival_limit, limiter

bp = Blueprint("api", __name__, url_prefix="/api")


@bp.after_request
def _no_store(response):
    """Every API answer is about a token (or hands one out): never cache it."""
    response.headers["Cache-Control"] = "no-store"
    return response


def json_body() -> Any:
    """The request's JSON body, or a 400 naming what is wrong with it (app/web/answers.py)."""
    if not request.is_json:
        raise InvalidInput(NOT_JSON)
    return parse_json(request.get_data())


def _bearer() -> bool:
    """Calls with a researcher's key are not crowd arrivals (a bad key is 401 anyway)."""
    return request.headers.get("Authorization", "").startswith("Bearer ")


@bp.post("/assignments")
@limiter.shared_limit(arrival_limit, scope=ARRIVALS, exempt_when=_bearer)
def open_assignment():
    """A researcher's script (``Authorization: Bearer <key>``) opens the named document for a
    worker ID, without the policy's checks and the same token again
    (:func:`app.annotation.admission.open_for_document`): 401 for a bad key, 404 for a study
    the key's researcher may not see."""
    body = json_body()
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    session = begin_write(get_session())
    key_holder = keys.bearer_researcher(session, request.headers.get("Authorization"))
    if key_holder is None:  # the worker API's entry answers arrivals without a key
        raise MarginaliaError("send a researcher's API key as Authorization: Bearer <key>", 401)
    study_slug = body.get("study")
    if not isinstance(study_slug, str):
        raise InvalidInput("study must be the study's slug")
    study = access.study_for(session, key_holder, study_slug)
    document = find_document(session, study, body.get("document"))
    assignment, created = admission.open_for_document(
        session, study, document, body.get("worker_id")
    )
    token, resume = assignment.token, assignment.current_segment
    segments = segment_count(handle_of(session), document.id, document.created_at)
    session.commit()
    answer = {"token": token, "segments": segments, "resume_segment": resume}
    return jsonify(answer), 201 if created else 200
