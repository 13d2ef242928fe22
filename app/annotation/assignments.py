"""What the worker actions share about an assignment: its token and completion code, a
worker ID's check, a new row's columns, the refusal of a change to one no longer active, and
an annotation's JSON. The actions themselves are one module each (:mod:`app.annotation.add`,
``remove``, ``position``, ``edit``, ``submit``, ``arrive``, ``read``, ``practice_check``,
``hint_events``); :func:`open_assignment` is a researcher's open of a named (document, worker)
(:func:`app.annotation.admission.open_for_document`), outside the policy.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, joinedload, make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value

from app.annotation.arrival_sql import INSERT_IF_NEW
from app.annotation.values import MAX_ID as MAX_ID
from app.documents.text import identifier_problem, storable
from app.errors import Conflict, InvalidInput, NotFound
from app.models import (
    Annotation,
    Assignment,
    Document,
    Study,
    isoformat,
    paired_columns,
    span_columns,
    span_place,
)
from app.rules.work import LLM_PREFIX, is_llm

MAX_WORKER_ID_CHARS = 200
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def now() -> datetime:
    return datetime.now(UTC)


def new_token() -> str:
    """An unguessable token; never starting with ``-``, which a spreadsheet reads as a
    formula (the CSV export would have to prefix it with ``'``)."""
    while (token := secrets.token_urlsafe(18)).startswith("-"):
        pass
    return token


def new_completion_code() -> str:
    body = "".join(secrets.choice(CODE_ALPHABET) for _ in range(10))
    return f"MG-{body[:5]}-{body[5:]}"


def get_assignment(
    session: Session, token: str, *, for_update: bool = False, related: bool = True
) -> Assignment:
    # With ``related`` the study and document come in the same round trip (most calls need
    # them; position and remove do not); only the assignment's row is locked.
    if not TOKEN_PATTERN.match(token):
        raise NotFound(NO_SUCH_TOKEN)
    query = select(Assignment).where(Assignment.token == token)
    if related:
        query = query.options(joinedload(Assignment.study), joinedload(Assignment.document))
    if for_update:
        query = query.with_for_update(of=Assignment)
    assignment = session.scalar(query)
    if assignment is None:
        raise NotFound(NO_SUCH_TOKEN)
    return assignment


def worker_id_from(value: Any) -> str:
    """A worker ID as given by a link or a request body, checked and stripped; never an LLM
    annotator's (``llm:``, app/llm/), whose work stays out of the humans' figures."""
    worker_id = _worker_id(value)
    if is_llm(worker_id):
        raise InvalidInput(f"worker IDs starting with {LLM_PREFIX} are kept for LLM annotators")
    return worker_id


def _worker_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("worker_id must be non-empty text")
    if len(value) > MAX_WORKER_ID_CHARS:
        raise InvalidInput(f"worker_id is longer than {MAX_WORKER_ID_CHARS} characters")
    if not storable(value):
        raise InvalidInput("worker_id must not contain NUL characters or unpaired surrogates")
    problem = identifier_problem(value)
    if problem:  # a lone CR would split the worker's CSV rows; U+202E would reorder a page
        raise InvalidInput(f"worker_id {problem}")
    return value.strip()


def new_row(
    study_id: int,
    document_id: int,
    worker_id: str,
    platform: str = "generic",
    platform_data: dict[str, Any] | None = None,
    condition: str | None = None,
    session_id: int | None = None,
) -> dict[str, Any]:
    """A new assignment's every column but its id (a checked ``worker_id``)."""
    moment = now()
    return {
        "token": new_token(),
        "study_id": study_id,
        "document_id": document_id,
        "worker_id": worker_id,
        "session_id": session_id,
        "platform": platform,
        "platform_data": platform_data or {},
        "condition": condition,
        "status": "active",
        "current_segment": 0,
        "completion_code": None,
        "scores": {},
        "created_at": moment,
        "last_seen_at": moment,
        "engaged_at": None,
        "submitted_at": None,
    }


def open_assignment(
    session: Session,
    study: Study,
    document: Document,
    worker_id: str,
    *,
    platform: str = "generic",
    platform_data: dict[str, Any] | None = None,
    condition: str | None = None,
) -> tuple[Assignment, bool]:
    """The assignment of ``worker_id`` to ``document``, created on first call (with
    ``condition``).

    Returns ``(assignment, created)``; the same (study, document, worker) always gets the
    same token, also when two requests race.
    """
    worker_id = _worker_id(worker_id)
    query = select(Assignment).where(
        Assignment.study_id == study.id,
        Assignment.document_id == document.id,
        Assignment.worker_id == worker_id,
    )
    row = new_row(study.id, document.id, worker_id, platform, platform_data, condition)
    dialect = session.get_bind().dialect.name
    if dialect in INSERT_IF_NEW:
        # One round trip (an arrival runs this under the study's lock): the unique
        # (study, document, worker) constraint decides; an existing row is read back below.
        # A Core statement built once: every column is known here but the id, so the object
        # is made from the row and put in the session as stored (no ORM insert machinery).
        new_id = session.execute(_INSERT_IF_NEW[dialect], row).scalar()
        if new_id is not None:
            created = Assignment(id=new_id, **row)
            make_transient_to_detached(created)
            session.add(created)
            # as loaded, no change to flush: the caller reads them without a query (the
            # session's identity map holds objects weakly, so the document may be gone)
            set_committed_value(created, "study", study)
            set_committed_value(created, "document", document)
            return created, True
        existing = session.scalar(query)
        if existing is None:
            raise Conflict("the assignment could not be stored; try again")
        return existing, False
    existing = session.scalar(query)
    if existing is not None:
        return existing, False
    assignment = Assignment(**row)
    try:
        with session.begin_nested():
            session.add(assignment)
    except IntegrityError:
        existing = session.scalar(query)
        if existing is None:
            raise
        return existing, False
    return assignment, True


_INSERT_IF_NEW = {
    dialect: insert(Assignment.__table__)
    .on_conflict_do_nothing(index_elements=["study_id", "document_id", "worker_id"])
    .returning(Assignment.__table__.c.id)
    for dialect, insert in INSERT_IF_NEW.items()
}


NO_SUCH_TOKEN = "no assignment with this token"


def require_active(status: str) -> None:
    """Refuse a change to an assignment that is not active (409 naming its status)."""
    if status == "submitted":
        raise Conflict("this assignment has been submitted and can no longer be changed")
    if status != "active":
        raise Conflict(f"this assignment is {status} and can no longer be changed")


_marks = Annotation.__table__.c
# What :func:`annotation_json` and :func:`marks_json` read of a live mark, for the Core
# selects that read marks back (the page's payload, an edit).
MARK_COLUMNS = (
    _marks.id,
    *span_columns(_marks),
    *paired_columns(_marks),
    _marks.paired_end_segment,
    _marks.comment,
    _marks.client_id,
    _marks.suggestion_id,
    _marks.created_at,
    _marks.attributes,
    _marks.mark,
)


def annotation_json(annotation: Annotation) -> dict[str, Any]:
    paired = None
    if annotation.paired_segment is not None:
        paired = {
            "segment": annotation.paired_segment,
            "start": annotation.paired_start,
            "end": annotation.paired_end,
            "text": annotation.paired_text,
        }
        if annotation.paired_end_segment is not None:
            paired["end_segment"] = annotation.paired_end_segment
    out = {
        "id": annotation.id,
        **span_place(annotation),
        "paired": paired,
        "comment": annotation.comment,
        "client_id": annotation.client_id,
        "suggestion_id": annotation.suggestion_id,
        "created_at": isoformat(annotation.created_at),
    }
    attributes = getattr(annotation, "attributes", None)
    if attributes:  # only when set: other studies' payloads stay as they were
        out["attributes"] = attributes
    return out


def marks_json(rows: Any) -> list[dict[str, Any]]:
    """Live rows (in id order) as the page's marks: a multi-label mark's rows folded into
    its first row's JSON, ``categories`` listing them all (docs/CONTRACT.md)."""
    out: list[dict[str, Any]] = []
    first: dict[int, dict[str, Any]] = {}
    for row in rows:
        mark = getattr(row, "mark", None)
        if mark is None:
            out.append(first.setdefault(row.id, annotation_json(row)))
        elif mark in first:
            head = first[mark]
            head.setdefault("categories", [head["category"]]).append(row.category)
    return out
