"""An import of any size in two phases, for ``marginalia import`` and the upload's job alike.

1. **Prepare**, holding no lock and no transaction: the file's documents a batch at a time
   (:func:`app.formats.parse_document_batches`), each batch checked, its entity cues found
   (spaCy) and its rows built (:func:`app.documents.storing.prepare_import`), then written to
   a spill file on disk (a private temporary file, a batch a record) and dropped.
2. **Store**: one write transaction storing the spilled batches one after another
   (:func:`app.documents.storing.store_prepared`), the session flushed and cleared after
   each, so memory holds one batch whatever the file's size; all or nothing (an error in a
   late batch rolls the earlier ones back), and SQLite's write lock is held for the inserts
   only, never for spaCy.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from sqlalchemy.orm import Session

from app.db import begin_write
from app.documents.records import DocumentInput, checked
from app.documents.storing import ImportResult, PreparedImport, prepare_import, store_prepared
from app.documents.studies import analyse_entities
from app.models import Study

ENTITY_CHUNK = 50  # documents analysed between two progress reports


def _spill_file() -> IO[bytes]:
    """A private temporary file, gone when closed (:meth:`Spill.close`) or at exit."""
    return tempfile.TemporaryFile(prefix="import-")  # noqa: SIM115 - Spill closes it


@dataclass
class Spill:
    """The prepared batches of one import, on disk until stored."""

    file: IO[bytes] = field(default_factory=lambda: _spill_file())
    batches: int = 0
    documents: int = 0
    ner_available: bool = False

    def add(self, prepared: PreparedImport) -> None:
        pickle.dump(prepared, self.file, protocol=pickle.HIGHEST_PROTOCOL)
        self.batches += 1
        self.documents += len(prepared.documents)
        self.ner_available |= prepared.ner_available

    def __iter__(self) -> Iterator[PreparedImport]:
        self.file.seek(0)
        for _ in range(self.batches):
            yield pickle.load(self.file)  # noqa: S301 - our own file, written just before

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _entities(
    study: Study, documents: list[DocumentInput], nlp: Any, report: Callable[[int], None]
) -> list[Any]:
    """Entity cues of a batch, a chunk of documents at a time (``report``: documents done)."""
    found: list[Any] = []
    for start in range(0, len(documents), ENTITY_CHUNK):
        chunk = documents[start : start + ENTITY_CHUNK]
        found.extend(analyse_entities(study, chunk, nlp) or [None] * len(chunk))
        report(len(chunk))
    if all(result is None for result in found):
        return []
    from app.entities.results import DocumentEntities

    return [result if result is not None else DocumentEntities() for result in found]


def prepare(
    study: Study,
    batches: Iterable[list[DocumentInput]],
    *,
    gold: bool = False,
    checks: bool = False,
    practice: bool = False,
    nlp: Any = None,
    progress: Callable[[int], None] | None = None,
) -> Spill:
    """Phase 1: every batch checked, analysed and prepared into a :class:`Spill` (no
    database access). ``progress``: called with the documents done so far."""
    spill = Spill()
    done = 0

    def report(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None:
            progress(done)

    try:
        for documents in batches:
            documents = [checked(document) for document in documents]
            entities = _entities(study, documents, nlp, report)
            prepared = prepare_import(
                study, documents, gold=gold, entities=entities, checks=checks, practice=practice
            )
            prepared.ner_available = nlp is not None or bool(entities)
            spill.add(prepared)
    except BaseException:
        spill.close()
        raise
    return spill


def store(session: Session, study: Study, spill: Spill) -> ImportResult:
    """Phase 2: the spilled batches stored in ``session``'s write transaction, begun here
    (the caller commits, or rolls back on an error: nothing is stored then)."""
    begin_write(session)
    result: ImportResult | None = None
    for prepared in spill:
        stored = store_prepared(session, study, prepared)
        stored.ner_available = prepared.ner_available
        session.flush()
        session.expunge_all()  # the batch's objects go: memory holds one batch
        result = stored if result is None else result + stored
    if result is None:  # the readers refuse a file without documents before this
        raise ValueError("nothing was prepared")
    return result
