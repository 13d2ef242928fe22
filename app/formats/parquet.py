"""A Hugging Face dataset folder: ``data/annotations.parquet`` (one row per counted
annotation, app/rules/work.py), ``data/documents.parquet`` and a ``README.md`` dataset card.

Readable by ``datasets.load_dataset("parquet", data_files=...)`` or by the card's
``configs``. Needs pyarrow, a runtime dependency (``pyproject.toml``): ``make run`` installs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from app.documents.attributes import attribute_ids
from app.errors import InvalidInput
from app.formats.annotated import AnnotatedDocument, annotated_documents
from app.formats.dataset_card import Tally, dataset_card
from app.models import Study
from app.rules.work import Work

NAME = "parquet"
MIMETYPE, DOWNLOAD_AS, TITLE = "application/zip", "hf-dataset.zip", "Hugging Face dataset (zip)"
WRITES_FILES = True
ANNOTATION_COLUMNS = (
    ("document", "string"),
    ("worker_id", "string"),
    ("segment", "int32"),
    ("start", "int32"),
    ("end", "int32"),
    ("text", "string"),
    ("category", "string"),
    ("paired_segment", "int32"),
    ("paired_start", "int32"),
    ("paired_end", "int32"),
    ("paired_text", "string"),
    ("paired_end_segment", "int32"),
    ("comment", "string"),
    ("document_start", "int32"),
    ("document_end", "int32"),
    ("paired_document_start", "int32"),
    ("paired_document_end", "int32"),
    ("created_at", "string"),
)
ROLE_COLUMN = ("role", "string")  # with the practice documents included
# with a multi_label taxonomy: the id a mark's rows share; with attributes: their JSON text
MARK_COLUMN, ATTRIBUTES_COLUMN = ("mark", "int64"), ("attributes", "string")


def check() -> None:
    """InvalidInput without pyarrow (before a download starts)."""
    _pyarrow()


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InvalidInput(
            "the parquet export needs pyarrow, which this installation lacks: "
            "reinstall Marginalia (pip install -e . or make run)"
        ) from None
    return pyarrow


BATCH_ROWS = 20_000  # a row group: the documents whose rows reach about this many
TEXT_WEIGHT = 500  # characters of a row's text that weigh as much as one more row


@dataclass
class _Sink:
    """Where pyarrow writes a file: its bytes are taken a row group at a time."""

    parts: list[bytes] = field(default_factory=list)
    position: int = 0
    closed: bool = False

    def write(self, data: Any) -> int:
        self.parts.append(bytes(data))
        self.position += len(self.parts[-1])
        return len(self.parts[-1])

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def _document_row(document: AnnotatedDocument) -> dict[str, Any]:
    return {
        "document": document.external_id,
        "text": document.layout.text,
        "segments": document.segments,
        "is_gold": document.is_gold,
        "role": document.role,
        "workers": list(document.workers),
        "meta": json.dumps(document.meta, ensure_ascii=False, sort_keys=True),
    }


def _annotation_rows(document: AnnotatedDocument, work: Work) -> Iterator[dict[str, Any]]:
    layout = document.layout
    for mark in document.marks:
        paired = mark.paired_range(layout)
        row = {
            "document": document.external_id,
            "worker_id": mark.worker_id,
            "segment": mark.segment,
            "start": mark.start,
            "end": mark.end,
            "text": mark.text,
            "category": mark.category,
            "paired_segment": mark.paired_segment,
            "paired_start": mark.paired_start,
            "paired_end": mark.paired_end,
            "paired_text": mark.paired_text,
            "paired_end_segment": mark.paired_to,
            "comment": mark.comment,
            "document_start": layout.to_whole(mark.segment, mark.start),
            "document_end": layout.to_whole(mark.segment, mark.end),
            "paired_document_start": paired[0] if paired else None,
            "paired_document_end": paired[1] if paired else None,
            "created_at": mark.created_at,
        }
        if work.include_practice:
            row["role"] = document.role
        row["mark"] = mark.id if mark.mark is None else mark.mark
        row["attributes"] = json.dumps(mark.attributes, sort_keys=True) if mark.attributes else None
        yield row


def _table_file(pa: Any, schema: Any, batches: Iterator[list[dict[str, Any]]]) -> Iterator[bytes]:
    """A Parquet file's bytes, a row group (one batch of rows) at a time."""
    sink = _Sink()
    writer = pa.parquet.ParquetWriter(sink, schema)
    try:
        for rows in batches:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
            yield sink.take()
    finally:
        writer.close()
    yield sink.take()


def _batches(
    documents: Iterator[AnnotatedDocument], rows: Any, limit: int
) -> Iterator[list[dict[str, Any]]]:
    """The rows of whole documents, in lists of about ``limit`` rows, a row counting one
    and one more per :data:`TEXT_WEIGHT` characters of its texts (a documents' batch of long
    texts stays small)."""
    batch: list[dict[str, Any]] = []
    size = 0
    for document in documents:
        for row in rows(document):
            batch.append(row)
            size += 1 + sum(len(v) for v in row.values() if isinstance(v, str)) // TEXT_WEIGHT
        if size >= limit:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def export_files(
    session: Session, study: Study, work: Work | None = None, *, batch_rows: int = BATCH_ROWS
) -> Iterator[tuple[str, Iterator[bytes] | bytes]]:
    """The two tables, each written a row group (about ``batch_rows`` rows of whole
    documents) at a time as the counted work is read (app/formats/annotated.py, twice: once
    per table), and the card from what the first pass counted: bounded memory."""
    work = work or Work()
    pa = _pyarrow()
    names = ANNOTATION_COLUMNS + ((ROLE_COLUMN,) if work.include_practice else ())
    names += (MARK_COLUMN,) if study.taxonomy.get("multi_label") else ()
    names += (ATTRIBUTES_COLUMN,) if attribute_ids(study.taxonomy) else ()
    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in names])
    document_schema = pa.schema(
        [
            ("document", pa.string()),
            ("text", pa.string()),
            ("segments", pa.list_(pa.string())),
            ("is_gold", pa.bool_()),
            ("role", pa.string()),
            ("workers", pa.list_(pa.string())),
            ("meta", pa.string()),
        ]
    )
    tally = Tally()

    def counted(document: AnnotatedDocument) -> Iterator[dict[str, Any]]:
        tally.add(document)
        return _annotation_rows(document, work)

    documents = annotated_documents(session, study, work)
    yield (
        "data/annotations.parquet",
        _table_file(pa, schema, _batches(documents, counted, batch_rows)),
    )
    documents = annotated_documents(session, study, work)
    yield (
        "data/documents.parquet",
        _table_file(
            pa, document_schema, _batches(documents, lambda d: [_document_row(d)], batch_rows)
        ),
    )
    yield "README.md", dataset_card(session, study, tally, work).encode("utf-8")
