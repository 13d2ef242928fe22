"""A Hugging Face dataset folder: ``data/annotations.parquet`` (one row per counted
annotation, app/quality/work.py), ``data/documents.parquet`` and a ``README.md`` dataset card.

Readable by ``datasets.load_dataset("parquet", data_files=...)`` or by the card's
``configs``. Needs pyarrow, a runtime dependency (``pyproject.toml``): ``make run`` installs it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy.orm import Session

from app.documents.attributes import attribute_ids
from app.errors import InvalidInput
from app.formats.annotated import annotated_documents
from app.formats.dataset_card import dataset_card
from app.models import Study
from app.quality.work import Work

NAME = "parquet"
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


def tables(
    session: Session, study: Study, work: Work | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of the two tables: annotations and documents."""
    work = work or Work()
    annotations: list[dict[str, Any]] = []
    documents: list[dict[str, Any]] = []
    for document in annotated_documents(session, study, work):
        layout = document.layout
        documents.append(
            {
                "document": document.external_id,
                "text": layout.text,
                "segments": document.segments,
                "is_gold": document.is_gold,
                "role": document.role,
                "workers": list(document.workers),
                "meta": json.dumps(document.meta, ensure_ascii=False, sort_keys=True),
            }
        )
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
            row["attributes"] = (
                json.dumps(mark.attributes, sort_keys=True) if mark.attributes else None
            )
            annotations.append(row)
    return annotations, documents


def _parquet(pa: Any, table: Any) -> bytes:
    buffer = io.BytesIO()
    pa.parquet.write_table(table, buffer)
    return buffer.getvalue()


def export_files(
    session: Session, study: Study, work: Work | None = None
) -> Iterator[tuple[str, bytes]]:
    work = work or Work()
    pa = _pyarrow()
    annotations, documents = tables(session, study, work)
    names = ANNOTATION_COLUMNS + ((ROLE_COLUMN,) if work.include_practice else ())
    names += (MARK_COLUMN,) if study.taxonomy.get("multi_label") else ()
    names += (ATTRIBUTES_COLUMN,) if attribute_ids(study.taxonomy) else ()
    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in names])
    annotation_table = pa.Table.from_pylist(annotations, schema=schema)
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
    document_table = pa.Table.from_pylist(documents, schema=document_schema)
    yield "data/annotations.parquet", _parquet(pa, annotation_table)
    yield "data/documents.parquet", _parquet(pa, document_table)
    card = dataset_card(session, study, annotations, documents, work)
    yield "README.md", card.encode("utf-8")
