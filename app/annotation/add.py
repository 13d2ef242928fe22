"""Add: a worker's new mark, stored once (``POST /api/assignments/<token>/annotations``).

The body is checked once, in Python, against the document's segment texts and the study's
categories (:mod:`app.annotation.values`, both from the per-process cache); then one pair of
statements (:func:`app.annotation.hot_sql.add_statements`): the claim (the assignment live,
the segment not a checked practice segment: the row locked) and the insert, whose ``WHERE``
carries the rest of the rule (no live duplicate of the span, category and pair; the unique
``(assignment_id, client_id)`` decides a retry). Each rule is decided there, in SQL, once. A
mark of one category is that one pair, run ``alone`` (on Postgres one round trip the server
commits). A multi-label mark (``categories``) is one row per category in one transaction:
the first row by the pair, each other row by the same insert (its own duplicate guard) with
``mark`` naming the first; a duplicate among them refuses the whole mark.

When the pair stores nothing, :mod:`app.annotation.refusals` reads its conditions back and
raises the answer, in the order the API has always given them: unknown token (404), frozen
segment or assignment no longer active (409), then the body (400), then a retry (the first
mark, 200) or a duplicate (409 with ``existing_id``).
"""

from __future__ import annotations

import json
from typing import Any

from app.annotation import assignments, hot_sql, refusals, values
from app.annotation.assignments import annotation_json
from app.annotation.cache import taxonomy_of, texts_of
from app.annotation.claims import keys_for
from app.annotation.handle import Handle
from app.annotation.hint_events import shown_ids
from app.errors import InvalidInput


def add(
    db: Handle, token: str, body: Any, *, kept_suggestion: int | None = None
) -> tuple[dict[str, Any], bool]:
    """Store a new mark: its JSON and True (``201``); a retry of a stored ``client_id`` with
    the same content: the first mark's JSON and False (``200``). A multi-label mark's JSON
    lists its ``categories`` (the first is ``category``). ``kept_suggestion``: an edit's
    mark's own suggestion, kept as it was stored (:func:`shown_suggestion`)."""
    keys = keys_for(db, token)
    texts = texts_of(db, keys.document_id, keys.document_created_at)
    taxonomy = taxonomy_of(db, keys.study_id, keys.taxonomy_hash)
    try:
        row, client_id = values.annotation_values(
            body, texts, taxonomy.categories, taxonomy.multi_label
        )
    except InvalidInput:  # the assignment's state first, as the API always answered
        segment = body.get("segment") if isinstance(body, dict) else None
        refusals.refuse_unless_live(db, keys, token, segment=_index(segment, len(texts)))
        raise
    if row["suggestion_id"] != kept_suggestion:
        row["suggestion_id"] = shown_suggestion(db, keys, row["suggestion_id"])
    labels = row.pop("categories", None) or [row["category"]]
    row = {
        **row,
        "client_id": client_id,
        "created_at": assignments.now(),
        "removed_at": None,
        "mark": None,
    }
    row.setdefault("attributes", None)
    params = _params(row, keys.id, token)
    claim, insert = hot_sql.add_statements(db.dialect)
    stored = db.pair(claim, insert, params, alone=len(labels) == 1).first()
    if stored is not None:
        _add_labels(db, keys, row, labels, stored.id)
        return _mark_json(stored.id, keys.id, row, labels), True
    refusals.refuse_unless_live(db, keys, token, segment=row["segment"])
    earlier, labels = refusals.retry_or_duplicate(db, keys, client_id, row, labels)
    db.run(hot_sql.CLAIM, params, alone=True)  # a retry stamps the activity, as a claim does
    return _mark_json(earlier["id"], keys.id, earlier, labels), False


def shown_suggestion(db: Handle, keys: Any, suggestion_id: int | None) -> int | None:
    """The suggestion a mark is stored as coming from: ``suggestion_id`` when this worker is
    shown it (:func:`app.annotation.hint_events.shown_ids`, the payload's own rule), else
    None, as for a mark made without one. An id that does not exist, another document's and
    one hidden from this worker (a hidden study, the unassisted condition, past the hint
    limits) are the same to the answer, so an add cannot tell which ids a document hides,
    and no mark claims a suggestion its worker never saw (docs/SECURITY.md)."""
    if suggestion_id is None:
        return None
    return suggestion_id if suggestion_id in shown_ids(db, keys.id, keys.document_id) else None


def _params(row: dict[str, Any], assignment_id: int, token: str) -> dict[str, Any]:
    """An add's statement parameters: the row's values, its attributes as JSON text."""
    attributes = row["attributes"]
    return {
        **row,
        "attributes_json": None if attributes is None else json.dumps(attributes),
        "assignment_id": assignment_id,
        "token": token,
        "now": row["created_at"],
    }


def _add_labels(db: Handle, keys: Any, row: dict[str, Any], labels: list[str], first: int) -> None:
    """A multi-label mark's other rows, after its first (``first``, stored under the claim
    just taken): each by the add's insert, so each passes the duplicate guard; a duplicate
    is refused (409 naming the existing mark) and the caller's rollback drops the whole mark."""
    insert = hot_sql.insert_annotation(db.dialect)
    for n, label in enumerate(labels[1:], 1):
        other = {**row, "category": label, "mark": first, "client_id": f"~{first}.{n}"}
        params = _params(other, keys.id, "")
        if db.run(insert, params).first() is None:
            refusals.refuse_duplicate(db, params)


def _mark_json(
    annotation_id: int, assignment_id: int, row: dict[str, Any], labels: list[str]
) -> dict[str, Any]:
    """The stored mark's JSON, as :func:`app.annotation.assignments.marks_json` writes it."""
    stored = _Stored(**{**row, "id": annotation_id, "assignment_id": assignment_id})
    answer = annotation_json(stored)  # type: ignore[arg-type]
    if len(labels) > 1:
        answer["categories"] = list(labels)
    return answer


def _index(segment: Any, count: int) -> int | None:
    """``segment`` when it names one of the document's segments (only those can be frozen)."""
    return segment if type(segment) is int and 0 <= segment < count else None


class _Stored:
    """An annotation's fields, as :func:`app.annotation.assignments.annotation_json` reads
    an annotation."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)
