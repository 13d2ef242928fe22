"""The per-action writes (add, remove, position, heartbeat) in as few round trips as
durability allows: prepared SQL (:mod:`app.annotation.hot_sql`), no ORM loads or flushes,
no statement building per request.

A token's fixed keys (assignment, document, study, their timestamps and the taxonomy's hash)
are cached per process after the first lookup, and so are the document's segment texts and
the study's categories, so an add is checked in Python and then stored by two statements:
a **claim**, one ``UPDATE assignments … WHERE`` the token's assignment is live (and, for an
add or remove, the practice segment is not frozen) that locks the row and stamps the worker's
activity, and the **write**, whose ``WHERE`` carries the rest of the rule (no live duplicate;
the unique ``(assignment_id, client_id)`` decides a retry). When either finds nothing (an
unknown, submitted or rejected token, a retry, a duplicate, a frozen segment, or a body the
checks refuse), the answer comes from :mod:`app.annotation.assignments`, so every status and
message reads the same as before.

The caller commits; on any refusal it must roll back (the request's session is closed
unbegun), which undoes the claim's activity stamp too. Cache keys carry the document's
``created_at`` and the taxonomy's hash, so a reused SQLite id cannot hit an old entry; a
token whose claim fails is dropped from the cache.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from typing import Any

from sqlalchemy import Connection, Engine, Row, select
from sqlalchemy.orm import Session

from app.annotation import assignments as rules
from app.annotation import hint_events, hot_sql, practice, timing
from app.documents.taxonomy import categories_by_id
from app.errors import InvalidInput
from app.models import Study

CACHED_DOCUMENTS = 4096
CACHED_TOKENS = 65536
# The short paths run on the request's ORM session or, in the web's fast lane
# (app/web/fast_lane.py), on a bare connection or Postgres's driver: all run the same statements.
Database = Session | Connection | hot_sql.Driver


class _Cache:
    """A small LRU per engine: ``key -> value``, shared by a process's threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.by_engine: weakref.WeakKeyDictionary[Engine, OrderedDict] = weakref.WeakKeyDictionary()

    def get(self, engine: Engine, key: Any) -> Any:
        with self.lock:
            entries = self.by_engine.get(engine)
            if entries is None or key not in entries:
                return None
            entries.move_to_end(key)
            return entries[key]

    def put(self, engine: Engine, key: Any, value: Any) -> None:
        with self.lock:
            entries = self.by_engine.setdefault(engine, OrderedDict())
            entries[key] = value
            while len(entries) > self.size:
                entries.popitem(last=False)

    def drop(self, engine: Engine, key: Any) -> None:
        with self.lock:
            entries = self.by_engine.get(engine)
            if entries is not None:
                entries.pop(key, None)


_tokens = _Cache(CACHED_TOKENS)
_texts = _Cache(CACHED_DOCUMENTS)
_categories = _Cache(256)


def _engine(db: Database) -> Engine:
    return db.get_bind() if isinstance(db, Session) else db.engine


def keys_of(db: Database, token: str) -> Row | None:
    """The token's assignment keys (id, document_id, study_id, created_at,
    document_created_at, taxonomy_hash), cached; None for a token no assignment has."""
    if not rules.TOKEN_PATTERN.match(token):
        return None
    engine = _engine(db)
    keys = _tokens.get(engine, token)
    if keys is None:
        keys = hot_sql.execute(db, "keys", hot_sql.KEYS, {"token": token}).first()
        if keys is not None:
            _tokens.put(engine, token, keys)
    return keys


def _claimed(db: Database, name: str, keys: Row, token: str, **values: Any) -> bool:
    """Run the claim ``hot_sql.<name>``; False (and the token forgotten) when the
    assignment is not live."""
    params = {"assignment_id": keys.id, "token": token, "now": rules.now(), **values}
    statement = getattr(hot_sql, name)
    if hot_sql.execute(db, name.lower(), statement, params).rowcount == 1:
        return True
    _tokens.drop(_engine(db), token)
    return False


def texts_of(db: Database, keys: Row) -> list[str]:
    """The document's segment texts, in order (cached)."""
    engine = _engine(db)
    key = (keys.document_id, keys.document_created_at)
    texts = _texts.get(engine, key)
    if texts is None:
        texts = rules.segment_texts(db, keys.document_id)
        _texts.put(engine, key, texts)
    return texts


def categories_of(db: Database, keys: Row) -> dict[str, dict[str, Any]]:
    """The study's categories by id, from its taxonomy snapshot (cached by its hash)."""
    engine = _engine(db)
    key = (keys.study_id, keys.taxonomy_hash)  # the hash is of the snapshot itself
    categories = _categories.get(engine, key)
    if categories is None:
        taxonomy = db.scalar(select(Study.taxonomy).where(Study.id == keys.study_id))
        categories = categories_by_id(taxonomy)
        _categories.put(engine, key, categories)
    return categories


# The short paths: each stores the action and answers, or returns None having stored
# nothing the caller's rollback would not undo (then the rules below give the answer).


def try_add(db: Database, token: str, body: Any) -> dict[str, Any] | None:
    """Store a new annotation in two statements (in one round trip on the driver): its JSON,
    or None."""
    if isinstance(body, dict) and "categories" in body:
        return None  # a multi-label mark (a row per category): the rules store it
    keys = keys_of(db, token)
    if keys is None:
        return None
    try:
        values, client_id = rules.annotation_values(
            body, texts_of(db, keys), categories_of(db, keys)
        )
        rules.check_suggestion(db, keys.document_id, values["suggestion_id"])
    except InvalidInput:  # the rules give the answer, in their order (status first)
        return None
    row = {**values, "client_id": client_id, "created_at": rules.now(), "removed_at": None}
    given = row.setdefault("attributes", None)
    params = {**row, "assignment_id": keys.id, "token": token, "now": row["created_at"]}
    params["attributes_json"] = None if given is None else json.dumps(given, ensure_ascii=False)
    if isinstance(db, hot_sql.Driver):  # claim and insert in one round trip
        stored = db.claim_and_run(
            ("claim_for_add", hot_sql.CLAIM_FOR_ADD),
            ("insert_checked", hot_sql.insert_annotation("postgresql", checked=True)),
            params,
        ).first()
        return None if stored is None else _json(stored.id, keys, row)
    if not _claimed(db, "CLAIM_FOR_ADD", keys, token, segment=values["segment"]):
        return None
    dialect = _engine(db).dialect.name
    stored = hot_sql.execute(
        db, "insert_annotation", hot_sql.insert_annotation(dialect), params
    ).first()
    if stored is None:  # a retry of a stored client_id, or a duplicate
        return None
    return _json(stored.id, keys, row)


def _json(annotation_id: int, keys: Row, row: dict[str, Any]) -> dict[str, Any]:
    return rules.annotation_json(_Stored(id=annotation_id, assignment_id=keys.id, **row))


def try_remove(db: Database, token: str, annotation_id: int) -> bool:
    """Mark one of the assignment's annotations removed in two statements (in one round trip
    on the driver): whether done."""
    keys = keys_of(db, token) if 0 < annotation_id <= rules.MAX_ID else None
    if keys is not None and isinstance(db, hot_sql.Driver):  # one round trip
        params = {"assignment_id": keys.id, "token": token, "annotation_id": annotation_id}
        claim = ("claim_for_remove", hot_sql.CLAIM_FOR_REMOVE)
        write = ("remove_checked", hot_sql.REMOVE_CHECKED)
        return db.claim_and_run(claim, write, {**params, "now": rules.now()}).rowcount >= 1
    return (
        keys is not None
        and _claimed(db, "CLAIM_FOR_REMOVE", keys, token, annotation_id=annotation_id)
        and hot_sql.execute(
            db,
            "remove",
            hot_sql.REMOVE,
            {"annotation_id": annotation_id, "assignment_id": keys.id, "now": rules.now()},
        ).rowcount
        >= 1
    )


def try_set_position(db: Database, token: str, body: Any) -> bool:
    """Store the worker's segment, the segment seen, its active seconds and the suggestion
    events riding along (every id checked before any write): whether done."""
    segment = body.get("segment") if isinstance(body, dict) else None
    keys = keys_of(db, token) if type(segment) is int else None
    if keys is None:
        return False
    count = len(texts_of(db, keys))
    try:
        active = timing.parse_active(body.get("active"), count)
        events = hint_events.parse_events(body.get("events"))
    except InvalidInput:
        return False
    if not (0 <= segment < count and hint_events.owned_fast(db, keys, events)):
        return False
    if _claimed(db, "CLAIM_POSITION", keys, token, segment=segment):
        moment = rules.now()
        timing.record_fast(db, keys, segment, active, moment)
        hint_events.insert_fast(db, keys, events, moment)
        return True
    return False


def try_heartbeat(db: Database, token: str) -> bool:
    """Keep the assignment's slot in one statement: whether done."""
    keys = keys_of(db, token)
    return keys is not None and _claimed(db, "CLAIM", keys, token)


class _Stored:
    """The stored row's fields, as :func:`rules.annotation_json` reads an annotation."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


# The whole actions, for the API's Flask routes: the short path, else the rules.


def add(session: Session, token: str, body: Any) -> tuple[dict[str, Any], bool]:
    """:func:`app.annotation.assignments.add_annotation` for a token: the stored
    annotation's JSON and whether it is new."""
    stored = try_add(session, token, body)
    if stored is not None:
        return stored, True
    assignment = rules.get_assignment(session, token, for_update=True)
    if isinstance(body, dict):
        practice.refuse_if_checked(session, assignment.id, segment=body.get("segment"))
    annotation, created = rules.add_annotation(session, assignment, body)
    return rules.mark_json(session, annotation), created


def remove(session: Session, token: str, annotation_id: int) -> None:
    """:func:`app.annotation.assignments.remove_annotation` for a token."""
    if try_remove(session, token, annotation_id):
        return
    assignment = rules.get_assignment(session, token, for_update=True, related=False)
    if 0 < annotation_id <= rules.MAX_ID:
        practice.refuse_if_checked(session, assignment.id, annotation_id=annotation_id)
    rules.remove_annotation(session, assignment, annotation_id)


def set_position(session: Session, token: str, body: Any) -> None:
    """:func:`app.annotation.assignments.set_position` for a token, and the suggestion
    events it carries (stored as ``POST …/suggestions/events`` would, even once submitted;
    an id the worker is not shown is ignored)."""
    if not try_set_position(session, token, body):
        assignment = rules.get_assignment(session, token, for_update=True, related=False)
        rules.set_position(session, assignment, body)
        events = hint_events.parse_events(body.get("events")) if isinstance(body, dict) else {}
        hint_events.record(session, assignment.id, assignment.document_id, events)


def heartbeat(session: Session, token: str) -> None:
    """:func:`app.annotation.assignments.heartbeat` for a token."""
    if not try_heartbeat(session, token):
        rules.heartbeat(rules.get_assignment(session, token, for_update=True, related=False))
