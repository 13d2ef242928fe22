"""JSON Lines, both ways: documents in (``{"id", "segments", "meta"}`` per line) and the
annotation export out (one object per row with CONTRACT's columns, typed, nulls for empty)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator

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
from app.rules.work import CHUNK_ROWS, Work

NAME = "jsonl"
MIMETYPE, DOWNLOAD_AS, TITLE = "application/x-ndjson; charset=utf-8", "jsonl", "JSONL"


def parse_text(text: str, problem: Problem) -> list[DocumentInput]:
    """A whole file's text (:func:`parse_lines` of its lines)."""
    return list(parse_lines(enumerate(io.StringIO(text, newline=None), start=1), problem))


def parse_lines(lines: Iterable[tuple[int, str]], problem: Problem) -> Iterator[DocumentInput]:
    """The documents of ``(line number, line)`` pairs, one line at a time (a big file is
    read so, app/formats/streamed.py); lines end at LF, CR or CRLF only (a JSON string may
    hold U+2028)."""
    for number, line in lines:
        if not line.strip():
            continue
        record = parse_json(line, problem, number)
        if not isinstance(record, dict):
            raise InvalidInput(f"{problem.source}:{number}: each line must be a JSON object")
        doc = document_id(record.get("id"), problem)
        meta = document_meta(record.get("meta") or {}, problem, doc)
        yield DocumentInput(doc, segment_list(record.get("segments"), problem, doc), meta)


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
