"""What the worker actions keep per process: one cache per engine (a process's pool to one
database), bounded, read through the action's :class:`~app.annotation.handle.Handle`.

It holds only what never changes once stored, keyed so that a changed thing is a new key:

* a token's fixed keys (assignment, document, study, their times, the taxonomy's hash), by
  token: a token whose assignment is gone or no longer active is refused by the claim's
  SQL whatever is cached here, and an action whose claim fails drops it;
* a document, by ``(id, created_at)`` (a replaced document is a new key; a deleted
  document's id that SQLite hands out again comes with another creation time): its segment
  texts (an add's checks, the submit's scoring, the practice check) and, once the page has
  read it, its share of ``GET /api/assignments/<token>`` as JSON text
  (:class:`DocumentPart`: segments, sources, entities, mentions);
* a taxonomy snapshot, by ``(study id, taxonomy_hash)`` (the hash is of the snapshot): its
  categories by id, whether a mark may carry several, each category's scope (the scoring's),
  and its JSON text (the read's).

Suggestions and anything of the worker's are never cached. ``tests/multinode/`` proves that
two processes with their own caches never serve each other's stale rows.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from sqlalchemy import Engine, bindparam, func, select

from app.annotation import hot_sql
from app.annotation.handle import Handle
from app.documents.taxonomy import categories_by_id
from app.models import Document, Entity, EntityMention, Segment, Study
from app.rules.scoring import scopes_from_taxonomy

MAX_TOKENS = 65536
MAX_DOCUMENTS = 4096
MAX_TAXONOMIES = 512
MAX_BYTES = 64 * 1024 * 1024  # of cached text, documents and taxonomies together

Value = TypeVar("Value")


def dumps(value: Any) -> str:
    """JSON as the worker API writes it (sorted keys, ASCII, compact): what Flask's
    ``jsonify`` writes outside debug mode, so cached texts splice into any answer."""
    return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


class Bounded(Generic[Value]):
    """A thread-safe LRU map bounded by entries and by the total size of its values."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._items: OrderedDict[Any, tuple[Value, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Any) -> Value | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: Any, value: Value, size: int = 1) -> None:
        if size > self.max_bytes:
            return
        with self._lock:
            previous = self._items.pop(key, None)
            if previous is not None:
                self._bytes -= previous[1]
            self._items[key] = (value, size)
            self._bytes += size
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def get_or_load(self, key: Any, load: Callable[[], tuple[Value, int]]) -> Value:
        """The value under ``key``, or the one ``load()`` reads (with its size), put there:
        the read-through of every cache here. Two racing misses both load; the later put
        stays (the same value)."""
        found = self.get(key)
        if found is None:
            found, size = load()
            self.put(key, found, size)
        return found

    def drop(self, key: Any) -> None:
        with self._lock:
            found = self._items.pop(key, None)
            if found is not None:
                self._bytes -= found[1]

    def values(self) -> list[Value]:
        with self._lock:
            return [value for value, _size in self._items.values()]

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class DocumentPart:
    """A document's share of the read's payload, as JSON text; ``share`` is its three keys as
    they stand together in the payload (``"document":…,"entities":…,"mentions":…``) and
    ``deflated`` the same compressed once, filled by the web entry on the first gzipped
    answer (a book-length document's ~1 MB share is not compressed for every worker)."""

    document: str  # the payload's "document": {"id", "segments", "sources"?}
    entities: str
    mentions: str
    share: bytes
    deflated: bytes | None = None

    @property
    def size(self) -> int:
        return 2 * len(self.share) + len(self.document) + len(self.entities) + len(self.mentions)


@dataclass
class DocumentEntry:
    texts: list[str]  # the segment texts, in order
    part: DocumentPart | None = None

    @property
    def size(self) -> int:
        return sum(len(text) for text in self.texts) + (self.part.size if self.part else 0)


class Taxonomy(NamedTuple):
    """What the actions read of a study's taxonomy snapshot."""

    categories: dict[str, dict[str, Any]]  # by id
    multi_label: bool  # whether a mark may carry several categories
    scopes: dict[str, str]  # category id -> "span" or "sentence" (the scoring's)
    json: str  # the snapshot as JSON text (the read's)


class Cache:
    """One engine's cache (see the module)."""

    def __init__(self) -> None:
        self.tokens: Bounded[Any] = Bounded(MAX_TOKENS, MAX_TOKENS)
        self.documents: Bounded[DocumentEntry] = Bounded(MAX_DOCUMENTS, MAX_BYTES // 2)
        self.taxonomies: Bounded[Taxonomy] = Bounded(MAX_TAXONOMIES, MAX_BYTES // 2)


_caches: weakref.WeakKeyDictionary[Engine, Cache] = weakref.WeakKeyDictionary()
_made = threading.Lock()


def cache_of(engine: Engine) -> Cache:
    """``engine``'s cache (made on first use)."""
    found = _caches.get(engine)
    if found is None:
        with _made:
            found = _caches.setdefault(engine, Cache())
    return found


def keys_of(db: Handle, token: str) -> Any:
    """The token's fixed keys (``hot_sql.KEYS``: id, document_id, study_id, created_at,
    document_created_at, taxonomy_hash), cached; None for a token no assignment has."""
    tokens = cache_of(db.engine).tokens
    keys = tokens.get(token)
    if keys is None:
        keys = db.run(hot_sql.KEYS, {"token": token}, alone=True).first()
        if keys is not None:
            tokens.put(token, keys)
    return keys


def forget_token(db: Handle, token: str) -> None:
    """Drop a token whose claim failed (its assignment may be gone)."""
    cache_of(db.engine).tokens.drop(token)


_SEGMENT_TEXTS = (
    select(Segment.text)
    .where(Segment.document_id == bindparam("document_id"))
    .order_by(Segment.index)
)
_SEGMENT_COUNT = (
    select(func.count()).select_from(Segment).where(Segment.document_id == bindparam("document_id"))
)


def segment_texts(session: Any, document_id: int) -> list[str]:
    """A document's segment texts, in order, read now on an ORM session (the detection worker,
    the adjudicated layer)."""
    return list(session.scalars(_SEGMENT_TEXTS, {"document_id": document_id}))


def _entry(db: Handle, document_id: int, created_at: Any) -> DocumentEntry:
    def load() -> tuple[DocumentEntry, int]:
        rows = db.run(_SEGMENT_TEXTS, {"document_id": document_id}, alone=True).all()
        entry = DocumentEntry([text for (text,) in rows])
        return entry, entry.size

    return cache_of(db.engine).documents.get_or_load((document_id, created_at), load)


def texts_of(db: Handle, document_id: int, created_at: Any) -> list[str]:
    """The document's segment texts, in order (cached per document version)."""
    return _entry(db, document_id, created_at).texts


def segment_count(db: Handle, document_id: int, created_at: Any) -> int:
    """The document's number of segments: from the cache when it holds the document, else
    one indexed count (the texts are left to whichever process reads them)."""
    entry = cache_of(db.engine).documents.get((document_id, created_at))
    if entry is not None:
        return len(entry.texts)
    return db.run(_SEGMENT_COUNT, {"document_id": document_id}, alone=True).scalar() or 0


def document_part(db: Handle, document_id: int, created_at: Any) -> DocumentPart:
    """The document's share of the read's payload, read and serialised once per version."""
    documents = cache_of(db.engine).documents
    key = (document_id, created_at)
    entry = documents.get(key)
    if entry is not None and entry.part is not None:
        return entry.part
    texts, part = _read_part(db, document_id)
    entry = DocumentEntry(texts, part)
    documents.put(key, entry, entry.size)
    return part


_TAXONOMY = select(Study.taxonomy).where(Study.id == bindparam("study_id"))


def taxonomy_of(db: Handle, study_id: int, taxonomy_hash: str) -> Taxonomy:
    """The study's taxonomy snapshot as the actions read it (cached by its hash)."""

    def load() -> tuple[Taxonomy, int]:
        taxonomy = db.run(_TAXONOMY, {"study_id": study_id}, alone=True).scalar()
        text = dumps(taxonomy)
        known = Taxonomy(
            categories_by_id(taxonomy),
            bool(taxonomy.get("multi_label")),
            scopes_from_taxonomy(taxonomy),
            text,
        )
        return known, 2 * len(text)

    return cache_of(db.engine).taxonomies.get_or_load((study_id, taxonomy_hash), load)


# --- a document's share of the read ---------------------------------------------------------

SOURCE_LABELS = (("context", "Context"), ("source", "Source"))


def source_texts(meta: dict[str, Any] | None) -> list[dict[str, str]]:
    """Texts the generated one was made from (Thresh's ``context`` and ``source``), for the
    annotate page's collapsible panel: ``[{"label", "text"}]`` (the payload's
    ``document.sources``, present only when there are some)."""
    kept = (meta or {}).get("thresh") or {}
    return [
        {"label": label, "text": kept[key]}
        for key, label in SOURCE_LABELS
        if isinstance(kept.get(key), str) and kept[key].strip()
    ]


_DOCUMENT = select(Document.external_id, Document.meta).where(
    Document.id == bindparam("document_id")
)
_SEGMENTS = (
    select(Segment.index, Segment.text)
    .where(Segment.document_id == bindparam("document_id"))
    .order_by(Segment.index)
)
_ENTITIES = (
    select(Entity.id, Entity.name, Entity.label, Entity.first_segment)
    .where(Entity.document_id == bindparam("document_id"))
    .order_by(Entity.first_segment, Entity.id)
)
_MENTIONS = (
    select(
        EntityMention.entity_id,
        EntityMention.segment,
        EntityMention.start.label("start"),
        EntityMention.end.label("end"),
    )
    .where(EntityMention.document_id == bindparam("document_id"))
    .order_by(EntityMention.segment, EntityMention.start, EntityMention.id)
)


def _read_part(db: Handle, document_id: int) -> tuple[list[str], DocumentPart]:
    """One document's segments, sources, entities and mentions (four reads)."""
    key = {"document_id": document_id}
    external_id, meta = db.run(_DOCUMENT, key, alone=True).first()
    if isinstance(meta, str):  # JSON text where the driver does not decode it
        meta = json.loads(meta)
    segments = [
        {"index": index, "text": text} for index, text in db.run(_SEGMENTS, key, alone=True).all()
    ]
    entities = [
        {"id": row.id, "name": row.name, "label": row.label, "first_segment": row.first_segment}
        for row in db.run(_ENTITIES, key, alone=True).all()
    ]
    mentions = [
        {"entity": row.entity_id, "segment": row.segment, "start": row.start, "end": row.end}
        for row in db.run(_MENTIONS, key, alone=True).all()
    ]
    document: dict[str, Any] = {"id": external_id, "segments": segments}
    if sources := source_texts(meta):
        document["sources"] = sources
    texts = {"document": dumps(document), "entities": dumps(entities), "mentions": dumps(mentions)}
    share = ",".join(f'"{name}":{text}' for name, text in texts.items()).encode()
    return [segment["text"] for segment in segments], DocumentPart(**texts, share=share)
