"""The annotation export as CSV (CONTRACT.md's columns), formatted by Postgres when it can."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from itertools import islice

from sqlalchemy.orm import Session

from app.formats.csv_postgres import postgres_csv_lines
from app.formats.rows import CHUNK_ROWS, CSV_COLUMNS, row_values
from app.formats.spreadsheet import safe_row
from app.models import Study

NAME = "csv"


def export(
    session: Session, study: Study, layer: str = "workers", extra_columns: tuple[str, ...] = ()
) -> Iterator[str]:
    """CSV text in chunks: a header, then one row per live annotation (CONTRACT columns, then
    any ``extra_columns``); text fields that a spreadsheet would read as a formula start with
    ``'``. The Postgres fast path serves the workers' layer with the default columns."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")  # writes None as an empty field
    writer.writerow((*CSV_COLUMNS, *extra_columns))
    fast = layer == "workers" and not extra_columns
    formatted = postgres_csv_lines(session, study) if fast else None
    if formatted is not None:
        yield buffer.getvalue()
        for lines in formatted:
            yield "\n".join(lines) + "\n"
        return
    rows = row_values(session, study, layer, extra_columns)
    while True:
        chunk = list(islice(rows, CHUNK_ROWS))
        writer.writerows(safe_row(row) for row in chunk)
        if len(chunk) < CHUNK_ROWS:
            break
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()
