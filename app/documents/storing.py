"""Storing parsed documents in bulk: executemany inserts of plain rows, in one transaction.

Everything that costs CPU (gold spans located, entity rows built) is done before the write
transaction starts, by :func:`prepare_import`; :func:`store_prepared` then only inserts.
On SQLite that keeps the write lock for seconds even for 300,000 segments (see
``bench/import_lock.py``); the import stays one transaction, so it is all or nothing.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from app.documents.imported_work import check_spans, store_imported_work
from app.documents.locating import Placement, locate
from app.documents.records import DocumentInput, GoldSpan
from app.errors import InvalidInput
from app.models import (
    DetectionJob,
    Document,
    Entity,
    EntityMention,
    GoldError,
    Segment,
    Study,
    changes,
)

CHUNK_ROWS = 5000


@dataclass
class ImportResult:
    documents: int
    segments: int
    gold_errors: int
    entities: int
    unlocated_gold: int
    detection_jobs: int
    ner_available: bool
    lock_seconds: float = 0.0
    ambiguous_gold: int = 0
    mid_word_gold: int = 0
    imported_annotations: int = 0  # annotations inside the file, kept as imported workers'
    imported_assignments: int = 0
    imported_suggestions: int = 0
    dropped_annotations: int = 0  # in the file, not stored (no --gold, --checks or --as-work)
    unplaced_annotations: int = 0  # --as-work spans not found in their segment
    check_documents: int = 0  # documents carrying attention checks (--checks)
    skipped_pairs: int = 0  # imported edits whose pair breaks the API's rule, left out

    def __add__(self, other: ImportResult) -> ImportResult:
        """Two batches of one import (app/formats/streamed.py): counts summed, NER either's."""
        both = {
            name: (getattr(self, name) or getattr(other, name))
            if isinstance(getattr(self, name), bool)
            else getattr(self, name) + getattr(other, name)
            for name in self.__dataclass_fields__
        }
        return ImportResult(**both)


SKIPPED_PAIRS = (
    "left out: their paired span does not come before their span (the API's rule; the edits "
    "are kept in the document's metadata and written back on export)"
)


@dataclass
class PreparedImport:
    """Rows of one import without database ids yet: built outside any transaction."""

    documents: list[DocumentInput]
    gold: bool
    # the file's errors are attention checks in real documents (``import --checks``)
    checks: bool = False
    # gold documents that teach, never graded (``import --practice``, app/annotation/practice.py)
    practice: bool = False
    gold_rows: list[list[dict[str, Any]]] = field(default_factory=list)
    entity_rows: list[list[dict[str, Any]]] = field(default_factory=list)
    mention_rows: list[list[dict[str, Any]]] = field(default_factory=list)
    ner_available: bool = False
    placed: Counter[str] = field(default_factory=Counter)


def _chunks(rows: list[dict[str, Any]], size: int = CHUNK_ROWS) -> Iterator[list[dict[str, Any]]]:
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield chunk


def _given(text: str, span: GoldSpan) -> Placement | None:
    """The file's own offsets, when it gives some that hold the span's text."""
    if span.offsets is None:
        return None
    start, end = span.offsets
    if 0 <= start < end <= len(text) and text[start:end] == span.text:
        return Placement(start, end, "unique")
    return None


def _gold_rows(
    segments: list[str], gold: list[GoldSpan], outcomes: Counter[str]
) -> list[dict[str, Any]]:
    """Gold rows placed by :func:`app.documents.locating.locate` (entries repeating a span
    text and category in a segment at successive occurrences); ``outcomes`` counts how
    each was placed."""
    rows = []
    taken: dict[tuple[int, str, str], set[tuple[int, int]]] = defaultdict(set)
    for span in gold:
        used = taken[(span.segment, span.text.strip(), span.category)]
        where = _given(segments[span.segment], span) or locate(
            segments[span.segment], span.text, taken=used
        )
        outcomes[where.outcome] += 1
        if where.found:
            used.add((where.start, where.end))  # type: ignore[arg-type]
        rows.append(
            {
                "segment": span.segment,
                "start": where.start,
                "end": where.end,
                "text": span.text,
                "category": span.category,
                "votes": span.votes,
                "antecedents": span.antecedents,
            }
        )
    return rows


def check_gold_categories(study: Study, documents: list[DocumentInput]) -> None:
    known = {c["id"] for c in study.taxonomy["categories"]}
    for document in documents:
        for span in document.gold:
            if span.category not in known:
                raise InvalidInput(
                    f"document {document.external_id!r}: gold error type {span.category!r} "
                    f"is not a category of study {study.slug!r}"
                )


def prepare_import(
    study: Study,
    documents: list[DocumentInput],
    *,
    gold: bool,
    entities: list[Any],
    checks: bool = False,
    practice: bool = False,
) -> PreparedImport:
    """Check gold categories and imported work, and build every row but the ids (no
    database access). ``checks``: the file's errors are attention checks planted in real
    documents (stored as gold errors with ``is_check``; the documents stay real work).
    ``practice``: gold documents that teach and are never graded."""
    gold = gold or checks or practice
    if gold:
        check_gold_categories(study, documents)
    for document in documents:
        check_spans(study, document)  # annotations and hints that came inside the file
    prepared = PreparedImport(
        documents=documents,
        gold=gold,
        checks=checks,
        practice=practice and not checks,
        ner_available=bool(entities),
    )
    for document in documents:
        rows = _gold_rows(document.segments, document.gold, prepared.placed) if gold else []
        prepared.gold_rows.append([{**row, "is_check": checks} for row in rows])
    for result in entities:
        prepared.entity_rows.append(
            [
                {
                    "full_key": ent.key,
                    "key": ent.key[:100],
                    "name": ent.name[:300],
                    "label": ent.label[:30],
                    "first_segment": ent.first_segment,
                }
                for ent in result.entities
            ]
        )
        keys = {ent.key for ent in result.entities}
        prepared.mention_rows.append(
            [
                {
                    "entity": m.entity,
                    "segment": m.segment,
                    "start": m.start,
                    "end": m.end,
                    "label": m.label[:30],
                }
                for m in result.mentions
                if m.entity in keys
            ]
        )
    return prepared


def _refuse_clashes(session: Session, study: Study, documents: list[DocumentInput]) -> None:
    existing = set(
        session.scalars(select(Document.external_id).where(Document.study_id == study.id))
    )
    clashes = [d.external_id for d in documents if d.external_id in existing]
    if clashes:
        raise InvalidInput(
            f"study {study.slug!r} already has document {clashes[0]!r}"
            + (f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else "")
        )


def _insert_documents(session: Session, study: Study, prepared: PreparedImport) -> list[int]:
    position = session.scalar(
        select(func.coalesce(func.max(Document.position), -1)).where(Document.study_id == study.id)
    )
    ids: list[int] = []
    rows = [
        {
            "study_id": study.id,
            "external_id": document.external_id,
            "source": document.source[:100],
            "meta": document.meta,
            "is_gold": prepared.gold and not prepared.checks,
            "is_practice": prepared.practice,
            "position": position + offset,
        }
        for offset, document in enumerate(prepared.documents, start=1)
    ]
    statement = insert(Document).returning(Document.id, sort_by_parameter_order=True)
    for chunk in _chunks(rows):
        ids.extend(session.scalars(statement, chunk))
    return ids


def _insert_entities(session: Session, ids: list[int], prepared: PreparedImport) -> int:
    if not prepared.entity_rows:
        return 0
    rows = [
        {"document_id": doc_id, **{k: v for k, v in row.items() if k != "full_key"}}
        for doc_id, entity_rows in zip(ids, prepared.entity_rows, strict=True)
        for row in entity_rows
    ]
    entity_ids: list[int] = []
    statement = insert(Entity).returning(Entity.id, sort_by_parameter_order=True)
    for chunk in _chunks(rows):
        entity_ids.extend(session.scalars(statement, chunk))
    # Keyed by the full key (the stored one is cut at 100 characters and need not be unique).
    keys = [
        (doc_id, ent["full_key"])
        for doc_id, entity_rows in zip(ids, prepared.entity_rows, strict=True)
        for ent in entity_rows
    ]
    by_key = dict(zip(keys, entity_ids, strict=True))
    mentions = [
        {
            "document_id": doc_id,
            "entity_id": by_key[(doc_id, m["entity"])],
            "segment": m["segment"],
            "start": m["start"],
            "end": m["end"],
            "label": m["label"],
        }
        for doc_id, mention_rows in zip(ids, prepared.mention_rows, strict=True)
        for m in mention_rows
    ]
    for chunk in _chunks(mentions):
        session.execute(insert(EntityMention), chunk)  # ORM: start/end → *_offset
    return len(rows)


def store_prepared(session: Session, study: Study, prepared: PreparedImport) -> ImportResult:
    """Insert a prepared import in ``session``'s transaction (the caller commits or rolls back).

    Refuses external ids the study already has, so a second run of the same file stores
    nothing twice.
    """
    started = time.perf_counter()
    _refuse_clashes(session, study, prepared.documents)
    ids = _insert_documents(session, study, prepared)
    if ids:
        changes.mark(session, study.id, "import")  # Core inserts: the flush does not see them
    # Segments, the bulk of the rows, go through plain Core executemany (no ORM work per row).
    connection = session.connection()
    segments = [
        {"document_id": doc_id, "index": i, "text": text}
        for doc_id, document in zip(ids, prepared.documents, strict=True)
        for i, text in enumerate(document.segments)
    ]
    for chunk in _chunks(segments):
        connection.execute(insert(Segment.__table__), chunk)
    gold = [
        {"document_id": doc_id, **row}
        for doc_id, rows in zip(ids, prepared.gold_rows, strict=True)
        for row in rows
    ]
    for chunk in _chunks(gold):  # ORM insert: maps start/end to start_offset/end_offset
        session.execute(insert(GoldError), chunk)
    entity_count = _insert_entities(session, ids, prepared)
    work = store_imported_work(session, study, ids, prepared.documents)
    jobs = 0
    if study.suggestions != "off" and ids:
        for chunk in _chunks([{"document_id": doc_id} for doc_id in ids]):
            session.execute(insert(DetectionJob), chunk)  # ORM: fills the Python defaults
        jobs = len(ids)
    return ImportResult(
        documents=len(ids),
        segments=len(segments),
        gold_errors=len(gold),
        entities=entity_count,
        unlocated_gold=sum(1 for g in gold if g["start"] is None),
        detection_jobs=jobs,
        ner_available=prepared.ner_available,
        ambiguous_gold=prepared.placed["ambiguous"],
        mid_word_gold=prepared.placed["mid_word"],
        imported_annotations=work.annotations,
        imported_assignments=work.assignments,
        imported_suggestions=work.suggestions,
        dropped_annotations=sum(d.dropped for d in prepared.documents),
        unplaced_annotations=sum(d.unplaced for d in prepared.documents),
        check_documents=sum(1 for rows in prepared.gold_rows if rows) if prepared.checks else 0,
        skipped_pairs=sum(d.skipped_pairs for d in prepared.documents),
        lock_seconds=time.perf_counter() - started,
    )
