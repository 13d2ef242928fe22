"""The per-action writes (add, remove, position, heartbeat) in as few round trips as
durability allows: SQLAlchemy Core statements, no ORM loads or flushes.

Each call starts with :func:`claim`: one ``UPDATE assignments … RETURNING`` that finds the
token's live assignment, locks its row (so two racing adds cannot both pass the duplicate
guard), and notes the worker's activity (``last_seen_at``, ``engaged_at``). An add then
stores its row with one ``INSERT … SELECT … WHERE NOT EXISTS (duplicate) ON CONFLICT
(assignment_id, client_id) DO NOTHING RETURNING``. The rules are those of
:mod:`app.annotation.assignments` (the same checks, messages and answers); when the short path
finds nothing, the answer comes from those functions, so every refusal reads the same.

The caller commits; on any refusal it must roll back (the request's session is closed
unbegun), which undoes the claim's activity stamp too. A document's segment texts and a
study's categories are cached per engine (they never change once stored; a document's key
carries its ``created_at`` and a study's its taxonomy's hash, so a reused SQLite id cannot hit
an old entry).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Engine, Row, and_, cast, exists, func, literal, null, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.annotation import assignments as rules
from app.annotation import timing
from app.annotation.duplicates import DUPLICATE_KEYS
from app.documents.taxonomy import categories_by_id
from app.errors import InvalidInput
from app.models import Annotation, Assignment, Document, Segment, Study

ASSIGNMENTS = Assignment.__table__
ANNOTATIONS = Annotation.__table__
STUDIES = Study.__table__
DOCUMENTS = Document.__table__
SEGMENTS = Segment.__table__
INSERT = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}
CACHED_DOCUMENTS = 4096
# Model attribute -> the annotations table's column (``start`` is ``start_offset``).
COLUMNS = {attr.key: attr.columns[0].name for attr in Annotation.__mapper__.column_attrs}


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


_texts = _Cache(CACHED_DOCUMENTS)
_categories = _Cache(256)


def live_conditions(token: str) -> list[Any]:
    """What makes a token's assignment writable, on the assignments table: one place to add a
    condition (another table's through a subquery, e.g. ``study_id.in_(select(...))``)."""
    return [ASSIGNMENTS.c.token == token, ASSIGNMENTS.c.status == "active"]


# Returned with the claim (SQLite's RETURNING names only the updated table: subqueries).
DOCUMENT_CREATED = (
    select(DOCUMENTS.c.created_at)
    .where(DOCUMENTS.c.id == ASSIGNMENTS.c.document_id)
    .scalar_subquery()
    .label("document_created_at")
)
TAXONOMY_HASH = (
    select(STUDIES.c.taxonomy_hash)
    .where(STUDIES.c.id == ASSIGNMENTS.c.study_id)
    .scalar_subquery()
    .label("taxonomy_hash")
)


def claim(session: Session, token: str, **changes: Any) -> Row | None:
    """Lock ``token``'s live assignment, stamp the worker's activity and apply ``changes``,
    in one statement; the row's keys, or None when no live assignment has this token."""
    if not rules.TOKEN_PATTERN.match(token):
        return None
    stamp = literal(rules.now(), ASSIGNMENTS.c.last_seen_at.type)
    statement = (
        update(ASSIGNMENTS)
        .where(*live_conditions(token))
        .values(
            last_seen_at=stamp,
            engaged_at=func.coalesce(ASSIGNMENTS.c.engaged_at, stamp),
            **changes,
        )
        .returning(
            ASSIGNMENTS.c.id,
            ASSIGNMENTS.c.document_id,
            ASSIGNMENTS.c.study_id,
            ASSIGNMENTS.c.created_at,
            DOCUMENT_CREATED,
            TAXONOMY_HASH,
        )
    )
    return session.execute(statement).first()


def texts_of(session: Session, keys: Row) -> list[str]:
    """The document's segment texts, in order (cached)."""
    engine = session.get_bind()
    key = (keys.document_id, keys.document_created_at)
    texts = _texts.get(engine, key)
    if texts is None:
        texts = rules.segment_texts(session, keys.document_id)
        _texts.put(engine, key, texts)
    return texts


def categories_of(session: Session, keys: Row) -> dict[str, dict[str, Any]]:
    """The study's categories by id, from its taxonomy snapshot (cached by its hash)."""
    engine = session.get_bind()
    key = (keys.study_id, keys.taxonomy_hash)  # the hash is of the snapshot itself
    categories = _categories.get(engine, key)
    if categories is None:
        taxonomy = session.scalar(select(Study.taxonomy).where(Study.id == keys.study_id))
        categories = categories_by_id(taxonomy)
        _categories.put(engine, key, categories)
    return categories


def _not_duplicate(assignment_id: int, client_id: str, values: dict[str, Any]):
    """No other live annotation of the assignment with the same span, category and pair."""
    same = [
        ANNOTATIONS.c[COLUMNS[key]].is_(None)
        if values[key] is None
        else ANNOTATIONS.c[COLUMNS[key]] == values[key]
        for key in DUPLICATE_KEYS
    ]
    return ~exists().where(
        ANNOTATIONS.c.assignment_id == assignment_id,
        ANNOTATIONS.c.removed_at.is_(None),
        ANNOTATIONS.c.client_id != client_id,
        and_(*same),
    )


def add(session: Session, token: str, body: Any) -> tuple[dict[str, Any], bool]:
    """:func:`app.annotation.assignments.add_annotation` for a token: the stored
    annotation's JSON and whether it is new. Two statements when all is well."""
    keys = claim(session, token)
    if keys is None:  # unknown or no longer active: the ORM path gives the answer
        return _add_by_rules(session, token, body)
    values, client_id = rules.annotation_values(
        body, texts_of(session, keys), categories_of(session, keys)
    )
    rules.check_suggestion(session, keys.document_id, values["suggestion_id"])
    row = {
        "assignment_id": keys.id,
        "client_id": client_id,
        "created_at": rules.now(),
        "removed_at": None,
        **values,
    }
    names = [COLUMNS[key] for key in row]
    chosen = select(
        *(_value(ANNOTATIONS.c[n], value) for n, value in zip(names, row.values(), strict=True))
    ).where(_not_duplicate(keys.id, client_id, values))
    statement = (
        INSERT[session.get_bind().dialect.name](ANNOTATIONS)
        .from_select(names, chosen)
        .on_conflict_do_nothing(index_elements=["assignment_id", "client_id"])
        .returning(*ANNOTATIONS.c)
    )
    stored = session.execute(statement).first()
    if stored is None:  # a retry of a stored client_id, or a duplicate
        return _add_by_rules(session, token, body)
    fields = stored._mapping
    return rules.annotation_json(
        SimpleNamespace(**{k: fields[c] for k, c in COLUMNS.items()})
    ), True


def _value(target: Any, value: Any) -> Any:
    """A bound value of an INSERT … SELECT: a NULL is cast to its column's type (Postgres
    would read an untyped one as text)."""
    if value is None:
        return cast(null(), target.type)
    return literal(value, target.type)


def _add_by_rules(session: Session, token: str, body: Any) -> tuple[dict[str, Any], bool]:
    assignment = rules.get_assignment(session, token, for_update=True)
    annotation, created = rules.add_annotation(session, assignment, body)
    return rules.annotation_json(annotation), created


def remove(session: Session, token: str, annotation_id: int) -> None:
    """:func:`app.annotation.assignments.remove_annotation` for a token: two statements."""
    keys = claim(session, token) if 0 < annotation_id <= rules.MAX_ID else None
    if keys is not None:
        stamp = literal(rules.now(), ANNOTATIONS.c.removed_at.type)
        found = session.execute(
            update(ANNOTATIONS)
            .where(ANNOTATIONS.c.id == annotation_id, ANNOTATIONS.c.assignment_id == keys.id)
            .values(removed_at=func.coalesce(ANNOTATIONS.c.removed_at, stamp))
            .returning(ANNOTATIONS.c.id)
        ).first()
        if found is not None:
            return
    assignment = rules.get_assignment(session, token, for_update=True, related=False)
    rules.remove_annotation(session, assignment, annotation_id)


def set_position(session: Session, token: str, body: Any) -> None:
    """:func:`app.annotation.assignments.set_position` for a token: one statement (a
    segment past the end is refused after it, and the caller's rollback undoes it)."""
    segment = body.get("segment") if isinstance(body, dict) else None
    if type(segment) is int and 0 <= segment <= rules.MAX_ID:
        keys = claim(session, token, current_segment=segment)
        if keys is not None:
            count = len(texts_of(session, keys))
            if segment >= count:
                raise InvalidInput(f"segment {segment} is out of range (0..{count - 1})")
            # The segment is seen; the active seconds measured since the last report are
            # added (app/annotation/timing.py): one query and the changed rows.
            active = timing.parse_active(body.get("active"), count)
            owner = SimpleNamespace(id=keys.id, created_at=keys.created_at)
            timing.record(session, owner, segment, active, rules.now())
            return
    assignment = rules.get_assignment(session, token, for_update=True, related=False)
    rules.set_position(session, assignment, body)


def heartbeat(session: Session, token: str) -> None:
    """:func:`app.annotation.assignments.heartbeat` for a token: one statement."""
    if claim(session, token) is None:
        rules.heartbeat(rules.get_assignment(session, token, for_update=True, related=False))
