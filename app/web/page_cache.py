"""The immutable part of the annotate page's payload, serialised once per process (issue 17).

A stored document never changes: its segments, its ``meta`` (the payload's ``sources``), its
entities and their mentions are written in the import's transaction and only ever deleted
with the document. A study's taxonomy snapshot never changes either (``taxonomy_hash`` is a
hash of its content). So ``GET /api/assignments/<token>`` serialises them once and keeps the
JSON text in a bounded per-process LRU cache:

* documents are keyed by ``(id, created_at)``: a deleted document's id that SQLite hands out
  again comes with another creation time, so a cached entry is never served for another
  document;
* taxonomies are keyed by ``(study id, taxonomy_hash)``.

Suggestions are not cached (the detector replaces them when it finishes), nor is anything of
the worker's. The texts are exactly what ``json.dumps(..., sort_keys=True, ensure_ascii=True,
separators=(",", ":"))`` gives for the same values, which is what Flask's ``jsonify`` writes
for them inside the whole payload (:mod:`app.web.assignment_read` splices them in).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from flask import Flask
from sqlalchemy import Connection, bindparam, func, select

from app.models import Document, Entity, EntityMention, Segment, Study
from app.web.assets import deflated_piece

MAX_DOCUMENTS = 2000
MAX_BYTES = 64 * 1024 * 1024  # of cached JSON text, documents and taxonomies together
EXTENSION = "page_cache"

Value = TypeVar("Value")


def dumps(value: Any) -> str:
    """JSON as Flask's ``jsonify`` writes it outside debug mode (sorted keys, ASCII, compact)."""
    return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class DocumentPart:
    """A document's share of the payload, as JSON text; ``share`` is its three keys as they
    stand together in the spliced payload (``"document":…,"entities":…,"mentions":…``) and
    ``deflated`` the same compressed once, for gzipped answers (issue 34: a book-length
    document's ~1 MB share is not compressed again for every worker who opens it)."""

    document: str  # the payload's "document": {"id", "segments", "sources"?}
    entities: str
    mentions: str
    segments: int  # how many segments the document has
    share: bytes = b""
    deflated: bytes = b""

    @property
    def size(self) -> int:
        return (
            len(self.document)
            + len(self.entities)
            + len(self.mentions)
            + len(self.share)
            + len(self.deflated)
        )


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

    def put(self, key: Any, value: Value, size: int) -> None:
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

    def __len__(self) -> int:
        return len(self._items)


_TAXONOMY = select(Study.taxonomy).where(Study.id == bindparam("study_id"))


class PageCache:
    """The app's caches of documents and taxonomy snapshots (one per process and app)."""

    def __init__(self, max_documents: int = MAX_DOCUMENTS, max_bytes: int = MAX_BYTES) -> None:
        self.documents: Bounded[DocumentPart] = Bounded(max_documents, max_bytes // 2)
        self.taxonomies: Bounded[str] = Bounded(max_documents, max_bytes // 2)

    def document(
        self, connection: Connection, document_id: int, created_at: datetime
    ) -> DocumentPart:
        """The document's part, read and serialised on the first call."""
        key = (document_id, created_at)
        part = self.documents.get(key)
        if part is None:
            part = read_document_part(connection, document_id)
            self.documents.put(key, part, part.size)
        return part

    def segment_count(self, connection: Connection, document_id: int, created_at: datetime) -> int:
        """The document's number of segments: its cached part's, else one indexed count (the
        part is left to the page's ``GET``, which needs it, in whichever process answers)."""
        part = self.documents.get((document_id, created_at))
        if part is not None:
            return part.segments
        return connection.scalar(_SEGMENT_COUNT, {"document_id": document_id}) or 0

    def taxonomy(self, connection: Connection, study_id: int, taxonomy_hash: str) -> str:
        """The study's taxonomy snapshot as JSON text, read on the first call."""
        key = (study_id, taxonomy_hash)
        text = self.taxonomies.get(key)
        if text is None:
            text = dumps(connection.scalar(_TAXONOMY, {"study_id": study_id}))
            self.taxonomies.put(key, text, len(text))
        return text


def cache_of(app: Flask) -> PageCache:
    """The app's page cache (made on first use)."""
    cache = app.extensions.get(EXTENSION)
    if cache is None:
        cache = app.extensions.setdefault(EXTENSION, PageCache())
    return cache


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
_SEGMENT_COUNT = (
    select(func.count()).select_from(Segment).where(Segment.document_id == bindparam("document_id"))
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


def read_document_part(connection: Connection, document_id: int) -> DocumentPart:
    """Read one document's segments, sources, entities and mentions (four queries)."""
    key = {"document_id": document_id}
    external_id, meta = connection.execute(_DOCUMENT, key).one()
    segments = [
        {"index": index, "text": text} for index, text in connection.execute(_SEGMENTS, key)
    ]
    entities = [
        {"id": row.id, "name": row.name, "label": row.label, "first_segment": row.first_segment}
        for row in connection.execute(_ENTITIES, key)
    ]
    mentions = [
        {"entity": row.entity_id, "segment": row.segment, "start": row.start, "end": row.end}
        for row in connection.execute(_MENTIONS, key)
    ]
    document: dict[str, Any] = {"id": external_id, "segments": segments}
    if sources := source_texts(meta):
        document["sources"] = sources
    texts = {"document": dumps(document), "entities": dumps(entities), "mentions": dumps(mentions)}
    share = ",".join(f'"{key}":{text}' for key, text in texts.items()).encode()
    return DocumentPart(
        **texts, segments=len(segments), share=share, deflated=deflated_piece(share)
    )
