"""The per-action writes (add, remove, position, heartbeat): one path for the web's fast
lane (``app/web/fast_lane.py``) and the API's routes (``app/web/api.py``), on a request's ORM
session, a bare connection or Postgres's driver alike, in as few round trips as durability
allows: prepared SQL (:mod:`app.annotation.hot_sql`), no ORM loads or flushes, no statement
building per request.

A token's fixed keys (assignment, document, study, their timestamps and the taxonomy's hash)
are cached per process after the first lookup, and so are the document's segment texts and
the study's categories, so an add's body is checked once, in Python, and then stored by two
statements: a **claim**, one ``UPDATE assignments … WHERE`` the token's assignment is live
(and, for an add or remove, the practice segment is not frozen) that locks the row and
stamps the worker's activity, and the **write**, whose ``WHERE`` carries the rest of the
rule (no live duplicate; the unique ``(assignment_id, client_id)`` decides a retry). Each
rule is decided there, in SQL, once. A multi-label mark (``categories``, issue 28) is one
row per category in the same transaction: the first row as any add, each other row by the
same insert (its own duplicate guard) with ``mark`` naming the first; a remove takes every
row of the mark. When a claim or a write finds nothing,
:mod:`app.annotation.refusals` reads its conditions back and raises the answer (404, 409,
or a retry's first annotation), in the order the API has always given them: unknown token,
frozen segment, assignment no longer active, then the body, then retry or duplicate.

The caller commits what an action returns, and rolls back on a refusal (which undoes the
claim's activity stamp too). On Postgres's fast lane an add (of one category) and a remove are
one round trip that commits as it runs (issue 31): the lock a claim takes (``LOCK``, writing
nothing), then the write, which stamps the activity only when it stored, so a refusal leaves
nothing to undo (a retry stamps it after: the same rows as the route's). Cache keys carry
the document's ``created_at`` and the taxonomy's hash, so a reused SQLite id cannot hit an
old entry; a token whose claim fails is dropped from the cache.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Engine, Row

from app.annotation import assignments as rules
from app.annotation import hint_events, hot_sql, refusals, timing, values
from app.annotation.hot_cache import Database, PerEngineLRU, engine_of, taxonomy_of, texts_of
from app.errors import InvalidInput, NotFound

CACHED_TOKENS = 65536
_tokens = PerEngineLRU(CACHED_TOKENS)  # token -> its fixed keys


def keys_of(db: Database, token: str) -> Row:
    """The token's assignment keys (id, document_id, study_id, created_at,
    document_created_at, taxonomy_hash), cached; 404 for a token no assignment has."""
    if not rules.TOKEN_PATTERN.match(token):
        raise NotFound(rules.NO_SUCH_TOKEN)
    engine = engine_of(db)
    keys = _tokens.get(engine, token)
    if keys is None:
        keys = hot_sql.execute(db, "keys", hot_sql.KEYS, {"token": token}).first()
        if keys is None:
            raise NotFound(rules.NO_SUCH_TOKEN)
        _tokens.put(engine, token, keys)
    return keys


def cached_keys(engine: Engine, token: str) -> Row | None:
    """The token's keys (:func:`keys_of`) when this process has them, without a query."""
    return _tokens.get(engine, token)


def _claimed(
    db: Database, name: str, keys: Row, token: str, alone: bool = False, **values: Any
) -> bool:
    """Run the claim ``hot_sql.<name>`` (on the driver with ``alone``: committed as it
    runs); False (and the token forgotten) when the assignment is not live."""
    params = {"assignment_id": keys.id, "token": token, "now": rules.now(), **values}
    statement = getattr(hot_sql, name)
    if isinstance(db, hot_sql.Driver) and alone:
        result = db.run(name.lower(), statement, params, alone=True)
    else:
        result = hot_sql.execute(db, name.lower(), statement, params)
    if result.rowcount == 1:
        return True
    _tokens.drop(engine_of(db), token)
    return False


# The actions: each stores what it was asked or raises the refusal, having stored nothing
# the caller's rollback would not undo.


def add(db: Database, token: str, body: Any) -> tuple[dict[str, Any], bool]:
    """Store a new mark: its JSON and True (``201``); a retry of a stored ``client_id``
    with the same content: the first mark's JSON and False (``200``). A multi-label mark's
    JSON lists its ``categories`` (the first is ``category``)."""
    keys = keys_of(db, token)
    texts = texts_of(db, keys.document_id, keys.document_created_at)
    categories, multi_label, _scopes = taxonomy_of(db, keys.study_id, keys.taxonomy_hash)
    try:
        row, client_id = values.annotation_values(body, texts, categories, multi_label)
        values.check_suggestion(db, keys.document_id, row["suggestion_id"])
    except InvalidInput:  # the assignment's state first, as the API always answered
        segment = body.get("segment") if isinstance(body, dict) else None
        refusals.refuse_unless_live(db, keys, token, segment=_index(segment, len(texts)))
        raise
    labels = row.pop("categories", None) or [row["category"]]
    moment = rules.now()
    row = {**row, "client_id": client_id, "created_at": moment, "removed_at": None}
    row.setdefault("attributes", None)
    row["mark"] = None
    params = _params(row, keys.id, token)
    dialect = engine_of(db).dialect.name
    alone = isinstance(db, hot_sql.Driver) and len(labels) == 1
    if alone:  # the lock and the stamping insert: one round trip that commits
        write = ("insert_stamped", hot_sql.insert_stamped())
        stored = db.claim_and_run(("lock", hot_sql.LOCK), write, params, alone=True).first()
    elif isinstance(db, hot_sql.Driver):  # a multi-label mark: claim and first row, one trip
        stored = db.claim_and_run(
            ("claim_for_add", hot_sql.CLAIM_FOR_ADD),
            ("insert_checked", hot_sql.insert_annotation("postgresql", checked=True)),
            params,
        ).first()
    elif _claimed(db, "CLAIM_FOR_ADD", keys, token, segment=row["segment"]):
        insert = hot_sql.insert_annotation(dialect)
        stored = hot_sql.execute(db, "insert_annotation", insert, params).first()
    else:
        stored = None
    if stored is not None:
        _add_labels(db, dialect, keys, row, labels, stored.id)
        return _mark_json(stored.id, keys.id, row, labels), True
    refusals.refuse_unless_live(db, keys, token, segment=row["segment"])
    earlier, labels = refusals.retry_or_duplicate(db, dialect, keys, client_id, row, labels)
    if alone:  # a retry stamps the activity, as the claim did elsewhere
        hot_sql.execute(db, "claim", hot_sql.CLAIM, params)
    return _mark_json(earlier["id"], keys.id, earlier, labels), False


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


def _add_labels(
    db: Database, dialect: str, keys: Row, row: dict[str, Any], labels: list[str], first: int
) -> None:
    """A multi-label mark's other rows, after its first (``first``, stored under the claim
    just taken): each by the add's insert, so each passes the duplicate guard; a duplicate
    is refused (409 naming the existing mark) and the caller's rollback drops the whole mark."""
    insert = hot_sql.insert_annotation(dialect)
    for n, label in enumerate(labels[1:], 1):
        other = {**row, "category": label, "mark": first, "client_id": f"~{first}.{n}"}
        params = _params(other, keys.id, "")
        if hot_sql.execute(db, "insert_annotation", insert, params).first() is None:
            refusals.refuse_duplicate(db, dialect, params)


def _mark_json(
    annotation_id: int, assignment_id: int, row: dict[str, Any], labels: list[str]
) -> dict[str, Any]:
    """The stored mark's JSON, as :func:`rules.marks_json` writes it."""
    stored = _Stored(**{**row, "id": annotation_id, "assignment_id": assignment_id})
    answer = rules.annotation_json(stored)
    if len(labels) > 1:
        answer["categories"] = list(labels)
    return answer


def remove(db: Database, token: str, annotation_id: int) -> None:
    """Mark one of the assignment's annotations removed (idempotent), in two statements (one
    round trip on the driver): every row of its mark, when it is part of a multi-label one."""
    keys = keys_of(db, token)
    known = 0 < annotation_id <= rules.MAX_ID
    if known and isinstance(db, hot_sql.Driver):  # one round trip that commits, as an add
        params = {"assignment_id": keys.id, "token": token, "annotation_id": annotation_id}
        write = ("remove_stamped", hot_sql.REMOVE_STAMPED)
        params["now"] = rules.now()
        if db.claim_and_run(("lock", hot_sql.LOCK), write, params, alone=True).scalar():
            return
    elif known and _claimed(db, "CLAIM_FOR_REMOVE", keys, token, annotation_id=annotation_id):
        params = {"annotation_id": annotation_id, "assignment_id": keys.id, "now": rules.now()}
        if hot_sql.execute(db, "remove", hot_sql.REMOVE, params).rowcount >= 1:
            return
    refusals.refuse_unless_live(db, keys, token, annotation_id=annotation_id if known else None)
    raise NotFound("this assignment has no such annotation")


def set_position(db: Database, token: str, body: Any) -> None:
    """Store the worker's segment, the segment seen, its active seconds (within the time
    budget, :func:`app.annotation.timing.budget`) and the suggestion events riding along
    (checked before any write; ids the worker is not shown are ignored). An assignment no
    longer active keeps its position: only the events are stored, as ``POST
    …/suggestions/events`` would (also once submitted)."""
    keys = keys_of(db, token)
    count = len(texts_of(db, keys.document_id, keys.document_created_at))
    try:
        if not isinstance(body, dict):
            raise InvalidInput("the body must be a JSON object")
        segment = values._int(body, "segment")
        if not 0 <= segment < count:
            raise InvalidInput(f"segment {segment} is out of range (0..{count - 1})")
        active = timing.parse_active(body.get("active"), count)
        events = _shown_events(db, keys, body)
    except InvalidInput:
        if refusals.status(db, keys, token) == "active":
            raise
        _store_events(db, keys, _shown_events(db, keys, body) if isinstance(body, dict) else {})
        return
    if _claimed(db, "CLAIM_POSITION", keys, token, segment=segment):
        moment = rules.now()
        timing.record(db, keys, segment, active, moment)
        hint_events.insert_fast(db, keys, events, moment)
    elif refusals.status(db, keys, token) == "active":
        raise refusals.TryAgain()
    else:
        _store_events(db, keys, events)


def heartbeat(db: Database, token: str) -> None:
    """Keep an active assignment's slot in one statement (any other: nothing to keep)."""
    keys = keys_of(db, token)
    if not _claimed(db, "CLAIM", keys, token, alone=True):
        refusals.status(db, keys, token)  # 404 when the assignment is gone


def _index(segment: Any, count: int) -> int | None:
    """``segment`` when it names one of the document's segments (only those can be frozen)."""
    return segment if type(segment) is int and 0 <= segment < count else None


def _shown_events(db: Database, keys: Row, body: dict[str, Any]) -> dict[str, list[int]]:
    """A position's ``events``, checked (400 for a malformed one) and narrowed to the
    suggestions the worker is shown (:func:`app.annotation.hint_events.shown_only`)."""
    return hint_events.shown_only(db, keys, hint_events.parse_events(body.get("events")))


def _store_events(db: Database, keys: Row, events: dict[str, list[int]]) -> None:
    hint_events.insert_fast(db, keys, events, rules.now())


class _Stored:
    """An annotation's fields, as :func:`rules.annotation_json` reads an annotation."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)
