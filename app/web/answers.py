"""What the web answers, written once for the Flask app and the worker API's entry
(:mod:`app.web.worker_api`): a refusal's body, the messages for a body too large and a lost
database, and how a JSON request body is read and checked."""

from __future__ import annotations

import json
from typing import Any

from app.config import size_text
from app.documents.text import storable
from app.errors import InvalidInput, MarginaliaError

LOST_DATABASE = "the database connection was lost; nothing was stored, try again"
NOT_JSON = "send a JSON body with Content-Type: application/json"


def error_body(error: MarginaliaError) -> dict[str, Any]:
    """A refusal's JSON body: its message, with the details it carries (``existing_id`` …)."""
    return {**error.details, "error": str(error)}


def too_large(limit: int) -> str:
    """The 413's message for a body over ``limit`` bytes."""
    return f"request body is larger than the limit of {size_text(limit)} ({limit} bytes)"


def is_json_type(content_type: str) -> bool:
    """Whether a ``Content-Type`` names JSON (``application/json`` or ``application/*+json``),
    as Flask's ``request.is_json`` decides."""
    mimetype = content_type.split(";", 1)[0].strip().lower()
    return mimetype == "application/json" or (
        mimetype.startswith("application/") and mimetype.endswith("+json")
    )


def parse_json(raw: bytes) -> Any:
    """A request body's JSON, or a 400 naming what is wrong with it (not JSON, nested too
    deeply, text no database can store)."""
    try:
        body = json.loads(raw) if raw else None
    except RecursionError:
        raise InvalidInput("the JSON body is nested too deeply") from None
    except ValueError:  # not JSON, or not UTF-8/16/32
        body = None
    if body is None:
        raise InvalidInput("the body is not valid JSON")
    # NUL and lone surrogates can only come as \u escapes (or a raw NUL byte): a body with
    # neither needs no walk through its strings.
    if b"\\u" in raw or b"\x00" in raw:
        check_strings(body)
    return body


def check_strings(body: Any) -> None:
    """Refuse text no database can store: NUL characters and unpaired surrogates."""
    pending = [body]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str) and not storable(value):
            raise InvalidInput("text must not contain NUL characters or unpaired surrogates")
