"""What the hot path keeps per process (issue 17, issue 31): a small LRU per engine, and the
two caches the actions of :mod:`app.annotation.fast` and the submit's scoring
(:func:`app.quality.assignment_scores.score_against_suggestions`) share: a document's segment
texts, keyed by the document's ``created_at`` (a replaced document is a new key), and what the
hot path reads of a study's taxonomy snapshot, keyed by the snapshot's hash. Both are read on
a request's ORM session, a bare connection or Postgres's driver alike.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, NamedTuple

from sqlalchemy import Connection, Engine, select
from sqlalchemy.orm import Session

from app.annotation import hot_sql
from app.documents.taxonomy import categories_by_id
from app.models import Segment, Study
from app.quality.scoring import scopes_from_taxonomy

CACHED_DOCUMENTS = 4096
CACHED_TAXONOMIES = 256
# A request's ORM session, a bare connection or Postgres's driver: all run the same statements.
Database = Session | Connection | hot_sql.Driver


class PerEngineLRU:
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


def engine_of(db: Database) -> Engine:
    """The engine (a process's pool to one database) whose cache entries ``db`` reads."""
    return db.get_bind() if isinstance(db, Session) else db.engine


def segment_texts(db: Any, document_id: int) -> list[str]:
    """The document's segment texts, in order (read, not cached)."""
    return list(
        db.scalars(
            select(Segment.text).where(Segment.document_id == document_id).order_by(Segment.index)
        )
    )


_texts = PerEngineLRU(CACHED_DOCUMENTS)
_taxonomies = PerEngineLRU(CACHED_TAXONOMIES)


def texts_of(db: Database, document_id: int, document_created_at: Any) -> list[str]:
    """The document's segment texts, in order (cached per document version)."""
    engine = engine_of(db)
    key = (document_id, document_created_at)
    texts = _texts.get(engine, key)
    if texts is None:
        texts = segment_texts(db, document_id)
        _texts.put(engine, key, texts)
    return texts


class Taxonomy(NamedTuple):
    """What the hot path reads of a study's taxonomy snapshot."""

    categories: dict[str, dict[str, Any]]  # by id
    multi_label: bool  # whether a mark may carry several categories
    scopes: dict[str, str]  # category id -> "span" or "sentence" (the submit's scoring)


def taxonomy_of(db: Database, study_id: int, taxonomy_hash: str) -> Taxonomy:
    """The study's taxonomy snapshot as the hot path reads it (cached by its hash)."""
    engine = engine_of(db)
    key = (study_id, taxonomy_hash)  # the hash is of the snapshot itself
    known = _taxonomies.get(engine, key)
    if known is None:
        taxonomy = db.scalar(select(Study.taxonomy).where(Study.id == study_id))
        known = Taxonomy(
            categories_by_id(taxonomy),
            bool(taxonomy.get("multi_label")),
            scopes_from_taxonomy(taxonomy),
        )
        _taxonomies.put(engine, key, known)
    return known
