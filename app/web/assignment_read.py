"""``GET /api/assignments/<token>``: the annotate page's whole payload, lean (issue 17).

The payload (CONTRACT.md) is the document (segments, sources, entities, mentions) and the
study's taxonomy, which never change once stored and come as JSON text from
:mod:`app.web.page_cache`, plus what is this worker's or may change: the assignment's status
and position, the study's title and suggestion mode, the suggestions shown, the worker's live
annotations, a practice document's checked segments. Those are read with Core queries (no ORM
objects): one for the assignment with its study and document, one for the annotations, one for
the suggestions when they are shown, one for the practice checks on practice documents.

The answer is byte for byte what ``jsonify`` gives for the whole payload as a dict
(``tests/test_assignment_read.py`` compares it with the former route on the same data): the
top-level keys in sorted order, each value serialised as ``jsonify`` would.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

from flask import Flask, Response, request
from sqlalchemy import Connection, bindparam, select

from app.annotation.assignments import TOKEN_PATTERN, marks_json
from app.annotation.hint_events import pick_shown
from app.annotation.qualification import qualification
from app.crowd.platforms import hint_limits
from app.errors import NotFound
from app.models import Annotation, Assignment, Document, PracticeCheck, Study, Suggestion
from app.web.assets import gzip_pieces
from app.web.page_cache import DocumentPart, cache_of, dumps

_assignments = Assignment.__table__.c
_studies = Study.__table__.c
_documents = Document.__table__.c
_annotations_t = Annotation.__table__.c
_suggestions_t = Suggestion.__table__.c
_checks = PracticeCheck.__table__.c

# Built once: Core statements on the tables (no ORM entities), parameters bound per request.
ASSIGNMENT = (
    select(
        _assignments.id,
        _assignments.token,
        _assignments.status,
        _assignments.current_segment,
        _assignments.completion_code,
        _assignments.condition,
        _assignments.document_id,
        _studies.id.label("study_id"),
        _studies.slug,
        _studies.title,
        _studies.suggestions,
        _studies.settings,
        _studies.taxonomy_hash,
        _documents.created_at.label("document_created_at"),
        _documents.is_gold,
        _documents.is_practice,
    )
    .join_from(Assignment.__table__, Study.__table__, _studies.id == _assignments.study_id)
    .join(Document.__table__, _documents.id == _assignments.document_id)
    .where(_assignments.token == bindparam("token"))
)
ANNOTATIONS = (
    select(
        _annotations_t.id,
        _annotations_t.segment,
        _annotations_t.start_offset.label("start"),
        _annotations_t.end_offset.label("end"),
        _annotations_t.text,
        _annotations_t.category,
        _annotations_t.paired_segment,
        _annotations_t.paired_start,
        _annotations_t.paired_end,
        _annotations_t.paired_text,
        _annotations_t.paired_end_segment,
        _annotations_t.comment,
        _annotations_t.client_id,
        _annotations_t.suggestion_id,
        _annotations_t.created_at,
        _annotations_t.attributes,
        _annotations_t.mark,
    )
    .where(
        _annotations_t.assignment_id == bindparam("assignment_id"),
        _annotations_t.removed_at.is_(None),
    )
    .order_by(_annotations_t.id)
)
SUGGESTIONS = (
    select(
        _suggestions_t.id,
        _suggestions_t.segment,
        _suggestions_t.start_offset.label("start"),
        _suggestions_t.end_offset.label("end"),
        _suggestions_t.text,
        _suggestions_t.category,
        _suggestions_t.score,
        _suggestions_t.reason,
        _suggestions_t.paired_segment,
        _suggestions_t.paired_start,
        _suggestions_t.paired_end,
        _suggestions_t.paired_text,
    )
    .where(
        _suggestions_t.document_id == bindparam("document_id"),
        _suggestions_t.score >= bindparam("lowest"),
    )
    .order_by(
        _suggestions_t.segment,
        _suggestions_t.score.desc(),
        _suggestions_t.start_offset,
        _suggestions_t.id,
    )
)
PRACTICE_CHECKS = (
    select(_checks.segment, _checks.feedback)
    .where(_checks.assignment_id == bindparam("assignment_id"))
    .order_by(_checks.segment)
)


def _annotations(connection: Connection, assignment_id: int) -> list[dict[str, Any]]:
    rows = connection.execute(ANNOTATIONS, {"assignment_id": assignment_id})
    return marks_json(rows)  # rows read like Annotation objects


def _suggestions(connection: Connection, row: Any, study: Study) -> list[dict[str, Any]]:
    """The suggestions shown: at most the study's hints per segment, best first, then by
    place (:func:`app.annotation.hint_events.pick_shown`, which also decides which
    suggestion events are stored)."""
    if row.suggestions != "shown" or row.condition == "unassisted":
        return []
    most, lowest = hint_limits(study)
    rows = connection.execute(SUGGESTIONS, {"document_id": row.document_id, "lowest": lowest})
    kept = pick_shown(rows, most)
    kept.sort(key=lambda s: (s.segment, s.start, s.id))
    return [
        {
            "id": s.id,
            "segment": s.segment,
            "start": s.start,
            "end": s.end,
            "text": s.text,
            "category": s.category,
            "score": s.score,
            "reason": s.reason or "",
            "paired": None
            if s.paired_segment is None
            else {
                "segment": s.paired_segment,
                "start": s.paired_start,
                "end": s.paired_end,
                "text": s.paired_text,
            },
        }
        for s in kept
    ]


def _practice(connection: Connection, row: Any, study: Study) -> dict[str, Any] | None:
    """The ``practice`` entry on practice documents (gold practice documents of a study with a
    pass mark), else None (:func:`app.annotation.practice.payload`)."""
    if qualification(study) is None or not (row.is_gold and row.is_practice):
        return None
    return {
        "checked": {
            str(segment): feedback
            for segment, feedback in connection.execute(PRACTICE_CHECKS, {"assignment_id": row.id})
        }
    }


def payload_parts(app: Flask, connection: Connection, token: str) -> dict[str, str]:
    """The payload's top-level keys, each with its value as JSON text; 404 for no such token."""
    return _parts(app, connection, token)[0]


def _parts(app: Flask, connection: Connection, token: str) -> tuple[dict[str, str], DocumentPart]:
    """:func:`payload_parts` and the document's cached part they came from."""
    if not TOKEN_PATTERN.match(token):
        raise NotFound("no assignment with this token")
    row = connection.execute(ASSIGNMENT, {"token": token}).first()
    if row is None:
        raise NotFound("no assignment with this token")
    cache = cache_of(app)
    document = cache.document(connection, row.document_id, row.document_created_at)
    # hint_limits and qualification read nothing but the settings
    study = cast(Study, SimpleNamespace(settings=row.settings))
    parts = {
        "token": dumps(row.token),
        "status": dumps(row.status),
        "read_only": dumps(row.status != "active"),
        "study": dumps({"slug": row.slug, "title": row.title, "suggestions": row.suggestions}),
        "document": document.document,
        "taxonomy": cache.taxonomy(connection, row.study_id, row.taxonomy_hash),
        "current_segment": dumps(row.current_segment),
        "completion_code": dumps(row.completion_code),
        "entities": document.entities,
        "mentions": document.mentions,
        "suggestions": dumps(_suggestions(connection, row, study)),
        "annotations": dumps(_annotations(connection, row.id)),
    }
    practice = _practice(connection, row, study)
    if practice is not None:
        parts["practice"] = dumps(practice)
    return parts, document


SHARED_KEYS = ("document", "entities", "mentions")  # adjacent in sorted order: one piece


def payload_body(
    app: Flask, connection: Connection, token: str, accept_encoding: str
) -> tuple[bytes, bool]:
    """The spliced payload (:func:`splice`), gzipped when the client takes gzip: the
    document's share comes deflated from the page cache, only the rest is compressed per
    request (a 2,000-segment document's ~1 MB share cost ~40-160 ms of compression on every
    read, issue 34). Returns the body and whether it is gzipped."""
    parts, document = _parts(app, connection, token)
    if "gzip" not in accept_encoding.lower():
        return splice(parts), False
    keys = sorted(parts)
    at = keys.index(SHARED_KEYS[0])
    assert tuple(keys[at : at + len(SHARED_KEYS)]) == SHARED_KEYS
    before = "{" + "".join(f'"{key}":{parts[key]},' for key in keys[:at])
    after = "".join(f',"{key}":{parts[key]}' for key in keys[at + len(SHARED_KEYS) :]) + "}\n"
    pieces = [(before.encode(), None), (document.share, document.deflated), (after.encode(), None)]
    return gzip_pieces(pieces), True


def spliceable(app: Flask) -> bool:
    """Whether the app writes JSON as :func:`app.web.page_cache.dumps` does (compact, sorted
    keys, ASCII: always outside debug mode), so the parts' texts can be spliced."""
    provider = app.json
    compact = getattr(provider, "compact", None)
    return (
        not ((compact is None and app.debug) or compact is False)
        and getattr(provider, "sort_keys", False) is True
        and getattr(provider, "ensure_ascii", False) is True
    )


def splice(parts: dict[str, str]) -> bytes:
    """The whole payload's JSON (as ``jsonify`` writes it) from its top-level parts."""
    body = ",".join(f'"{key}":{parts[key]}' for key in sorted(parts))
    return f"{{{body}}}\n".encode()


def payload_response(app: Flask, connection: Connection, token: str) -> Response:
    """The payload as ``jsonify`` would answer it: spliced from the parts' JSON texts when
    the app writes compact JSON, else through ``jsonify``."""
    if not spliceable(app):
        parts = payload_parts(app, connection, token)
        return app.json.response({key: json.loads(text) for key, text in parts.items()})
    body, packed = payload_body(app, connection, token, request.headers.get("Accept-Encoding", ""))
    response = app.response_class(body, mimetype=app.json.mimetype)  # type: ignore[attr-defined]
    if packed:
        response.headers["Content-Encoding"] = "gzip"
        response.vary.add("Accept-Encoding")
    return response
