"""JSON Lines, both ways: documents in (``{"id", "segments", "meta"}`` per line) and the
annotation export out (one object per row with CONTRACT's columns, typed, nulls for empty)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from sqlalchemy.orm import Session

from app.errors import InvalidInput
from app.formats.records import (
    DocumentInput,
    Problem,
    document_id,
    document_meta,
    parse_json,
    segment_list,
)
from app.formats.rows import annotation_rows
from app.models import Study
from app.quality.work import CHUNK_ROWS, Work

NAME = "jsonl"
MIMETYPE, DOWNLOAD_AS, TITLE = "application/x-ndjson; charset=utf-8", "jsonl", "JSONL"


def parse_text(text: str, problem: Problem) -> list[DocumentInput]:
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = parse_json(line, problem, number)
        if not isinstance(record, dict):
            raise InvalidInput(f"{problem.source}:{number}: each line must be a JSON object")
        doc = document_id(record.get("id"), problem)
        meta = document_meta(record.get("meta") or {}, problem, doc)
        documents.append(
            DocumentInput(doc, segment_list(record.get("segments"), problem, doc), meta)
        )
    return documents


def export(
    session: Session, study: Study, work: Work | None = None, extra_columns: tuple[str, ...] = ()
) -> Iterator[str]:
    """One JSON object per line with the CSV's columns, typed (nulls for empty fields)."""
    lines: list[str] = []
    for row in annotation_rows(session, study, work, extra_columns):
        lines.append(json.dumps(row, ensure_ascii=False))
        if len(lines) >= CHUNK_ROWS:
            yield "\n".join(lines) + "\n"
            lines = []
    if lines:
        yield "\n".join(lines) + "\n"
