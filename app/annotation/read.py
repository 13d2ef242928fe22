"""Read: everything the annotate page needs, one answer (``GET /api/assignments/<token>``).

The payload (CONTRACT.md) is the document (segments, sources, entities, mentions) and the
study's taxonomy, which never change once stored and come as JSON text from the actions'
per-process cache (:mod:`app.annotation.cache`), plus what is this worker's or may change: the
assignment's status and position, the study's title and suggestion mode, the suggestions shown,
the worker's live annotations, a practice document's checked segments. Those are read with
prebuilt Core statements on the handle, each alone (no transaction to open or close): one for
the assignment with its study and document, one for the annotations, one for the suggestions
when they are shown, one for the practice checks on practice documents.

The page's load is the worker's first sign of presence: reading a live assignment stamps the
worker's activity (``last_seen_at``, and ``engaged_at`` the first time: the hold rule's "a
loaded page engages the slot", :mod:`app.annotation.assigning`) with the heartbeat's own
claim (:data:`app.annotation.hot_sql.CLAIM`), sent with the handle's commit, so the page sends
no heartbeat of its own on load. The web entry opens a writer's handle for it (SQLite's
``BEGIN IMMEDIATE``: the stamp after the reads cannot fail half-way).

:func:`payload_parts` gives each top-level key with its value as JSON text, as ``jsonify``
would write the value inside the whole payload; the web entry splices them in sorted order
(``tests/test_assignment_read.py`` compares the answer with a reference built from the ORM).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from sqlalchemy import bindparam, select

from app.annotation import hot_sql
from app.annotation.assignments import MARK_COLUMNS, NO_SUCH_TOKEN, TOKEN_PATTERN, marks_json, now
from app.annotation.cache import DocumentPart, document_part, dumps, taxonomy_of
from app.annotation.handle import Handle
from app.annotation.hint_events import pick_shown
from app.annotation.qualification import qualification
from app.crowd.platforms import hint_limits
from app.errors import NotFound
from app.models import (
    Annotation,
    Assignment,
    Document,
    PracticeCheck,
    Study,
    Suggestion,
    paired_columns,
    span_columns,
    span_place,
)

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
    select(*MARK_COLUMNS)
    .where(
        _annotations_t.assignment_id == bindparam("assignment_id"),
        _annotations_t.removed_at.is_(None),
    )
    .order_by(_annotations_t.id)
)
SUGGESTIONS = (
    select(
        _suggestions_t.id,
        *span_columns(_suggestions_t),
        _suggestions_t.score,
        _suggestions_t.reason,
        *paired_columns(_suggestions_t),
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


def _annotations(db: Handle, assignment_id: int) -> list[dict[str, Any]]:
    rows = db.run(ANNOTATIONS, {"assignment_id": assignment_id}, alone=True).all()
    return marks_json(rows)  # rows read like Annotation objects


def _suggestions(db: Handle, row: Any, study: Study) -> list[dict[str, Any]]:
    """The suggestions shown: at most the study's hints per segment, best first, then by
    place (:func:`app.annotation.hint_events.pick_shown`, which also decides which
    suggestion events are stored)."""
    if row.suggestions != "shown" or row.condition == "unassisted":
        return []
    most, lowest = hint_limits(study)
    params = {"document_id": row.document_id, "lowest": lowest}
    kept = pick_shown(db.run(SUGGESTIONS, params, alone=True).all(), most)
    kept.sort(key=lambda s: (s.segment, s.start, s.id))
    return [
        {
            "id": s.id,
            **span_place(s),
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


def _practice(db: Handle, row: Any, study: Study) -> dict[str, Any] | None:
    """The ``practice`` entry on practice documents (gold practice documents of a study with a
    pass mark), else None (:func:`app.annotation.practice.is_practice`'s rule)."""
    if qualification(study) is None or not (row.is_gold and row.is_practice):
        return None
    checks = db.run(PRACTICE_CHECKS, {"assignment_id": row.id}, alone=True).all()
    return {"checked": {str(segment): feedback for segment, feedback in checks}}


def payload_parts(db: Handle, token: str) -> tuple[dict[str, str], DocumentPart]:
    """The payload's top-level keys, each with its value as JSON text, and the document's
    cached part they came from; 404 for no such token."""
    if not TOKEN_PATTERN.match(token):
        raise NotFound(NO_SUCH_TOKEN)
    row = db.run(ASSIGNMENT, {"token": token}, alone=True).first()
    if row is None:
        raise NotFound(NO_SUCH_TOKEN)
    document = document_part(db, row.document_id, row.document_created_at)
    # hint_limits and qualification read nothing but the settings
    study = cast(Study, SimpleNamespace(settings=row.settings))
    parts = {
        "token": dumps(row.token),
        "status": dumps(row.status),
        "read_only": dumps(row.status != "active"),
        "study": dumps({"slug": row.slug, "title": row.title, "suggestions": row.suggestions}),
        "document": document.document,
        "taxonomy": taxonomy_of(db, row.study_id, row.taxonomy_hash).json,
        "current_segment": dumps(row.current_segment),
        "completion_code": dumps(row.completion_code),
        "entities": document.entities,
        "mentions": document.mentions,
        "suggestions": dumps(_suggestions(db, row, study)),
        "annotations": dumps(_annotations(db, row.id)),
    }
    practice = _practice(db, row, study)
    if practice is not None:
        parts["practice"] = dumps(practice)
    if row.status == "active":  # the page's load: the worker is here (see the module)
        params = {"assignment_id": row.id, "token": token, "now": now()}
        db.later(hot_sql.CLAIM, params)
    return parts, document
