"""The assignment-level export as JSON Lines: one typed object per assignment."""

from __future__ import annotations

import json
from collections.abc import Iterator

from sqlalchemy.orm import Session

from app.formats.assignment_rows import assignment_rows, columns
from app.models import Study

NAME = "assignments-jsonl"
MIMETYPE, DOWNLOAD_AS, TITLE = (
    "application/x-ndjson; charset=utf-8",
    "assignments.jsonl",
    "Assignments JSONL",
)


def export(session: Session, study: Study) -> Iterator[str]:
    names = columns()
    lines = [
        json.dumps({name: row[name] for name in names}, ensure_ascii=False)
        for row in assignment_rows(session, study)
    ]
    yield "".join(line + "\n" for line in lines)
