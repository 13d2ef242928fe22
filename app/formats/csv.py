"""The annotation export as CSV (CONTRACT.md's columns), formatted by Postgres when it can."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from itertools import islice

from sqlalchemy.orm import Session

from app.formats.csv_postgres import postgres_csv_lines
from app.formats.rows import column_names, row_values
from app.formats.spreadsheet import safe_row
from app.models import Study
from app.rules.work import CHUNK_ROWS, Work

NAME = "csv"
MIMETYPE, DOWNLOAD_AS, TITLE = "text/csv", "csv", "CSV"


def export(
    session: Session, study: Study, work: Work | None = None, extra_columns: tuple[str, ...] = ()
) -> Iterator[str]:
    """CSV text in chunks: a header, then one row per counted annotation (CONTRACT columns,
    then any ``extra_columns``, ``role``, ``review_status``); text fields that a spreadsheet
    would read as a formula start with ``'``. On Postgres the server formats the lines."""
    work = work or Work()
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")  # writes None as an empty field
    writer.writerow(column_names(work, extra_columns, study))
    formatted = postgres_csv_lines(session, study, work, extra_columns)
    if formatted is not None:
        yield buffer.getvalue()
        for lines in formatted:
            yield "\n".join(lines) + "\n"
        return
    rows = row_values(session, study, work, extra_columns)
    while True:
        chunk = list(islice(rows, CHUNK_ROWS))
        writer.writerows(safe_row(row) for row in chunk)
        if len(chunk) < CHUNK_ROWS:
            break
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()
