"""The assignment-level export as CSV: one row per assignment (CONTRACT.md's columns);
``segment_seconds`` and other structured values as compact JSON; spreadsheet-safe."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy.orm import Session

from app.formats.assignment_rows import assignment_rows, columns
from app.formats.spreadsheet import safe_row
from app.models import Study

NAME = "assignments-csv"
MIMETYPE, DOWNLOAD_AS, TITLE = "text/csv", "assignments.csv", "Assignments CSV"


def _cell(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def export(session: Session, study: Study) -> Iterator[str]:
    names = columns()
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    for row in assignment_rows(session, study):
        writer.writerow(safe_row(_cell(row[name]) for name in names))
    yield buffer.getvalue()
