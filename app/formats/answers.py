"""Questionnaire answers out: one row per assignment that answered, CSV or JSONL.

Columns: ``worker_id``, ``document_id``, ``assignment_status``, then one column per
question as ``document.ID`` (after each document) and ``study.ID`` (once per worker).
Answers are untrusted text: the CSV puts ``'`` before formula-like fields
(:mod:`app.formats.spreadsheet`); JSONL keeps them as given.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.documents.journey import answer_columns, answers_by_assignment
from app.formats.spreadsheet import safe_row
from app.models import Assignment, Document, Study

FIXED = ("worker_id", "document_id", "assignment_status")


def answer_rows(session: Session, study: Study) -> tuple[list[str], list[dict[str, str]]]:
    """(columns, rows) of the study's answers, in assignment order."""
    answers = answers_by_assignment(session, study)
    columns = answer_columns(study)
    for values in answers.values():  # questions since removed from the YAML stay exported
        columns += [key for key in values if key not in columns]
    rows = []
    if answers:
        for assignment_id, worker, document, status in session.execute(
            select(Assignment.id, Assignment.worker_id, Document.external_id, Assignment.status)
            .join(Document, Document.id == Assignment.document_id)
            .where(Assignment.id.in_(list(answers)))
            .order_by(Assignment.id)
        ):
            row = {"worker_id": worker, "document_id": document, "assignment_status": status}
            rows.append({**row, **answers[assignment_id]})
    return [*FIXED, *columns], rows


def iter_answers(session: Session, study: Study, fmt: str = "csv") -> Iterator[str]:
    columns, rows = answer_rows(session, study)
    if fmt == "jsonl":
        for row in rows:
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow(safe_row(row.get(column, "") for column in columns))
    yield buffer.getvalue()
