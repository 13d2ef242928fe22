"""An LLM annotator's marks stored through the same rules as a human's, by the worker actions'
one functions on a handle of the job's session (:func:`app.annotation.connect.handle_of`, in
its transaction): each mark by the add action (:func:`app.annotation.add.add`: the body
checks, the pairing rule, attributes, the duplicate guard), the assignment submitted by the
submit action (:func:`app.annotation.submit.submit`: the all-segments-seen rule, the score).
Nothing here writes an annotation row or an assignment's status itself.

The assignment is opened as a researcher's key opens a named (document, worker) pair
(:func:`app.annotation.assignments.open_assignment`, under
:func:`app.annotation.admission.open_for_document`), outside the arrival policy, so it takes
no human's slot (a taken slot is a human's: ``arrival_sql.takes_slot``), and in no
experimental condition: the model never sees the detector's hints. Only this module opens an
``llm:`` worker ID: every arrival and a researcher's key refuse one
(:func:`app.annotation.assignments.worker_id_from`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.annotation import add, position, submit, timing
from app.annotation.assignments import open_assignment
from app.annotation.connect import handle_of
from app.errors import Conflict, InvalidInput
from app.models import Assignment, Document, Study

PLATFORM = "llm"


def open_llm_assignment(
    session: Session, study: Study, document: Document, worker_id: str
) -> Assignment:
    """The annotator's assignment of ``document`` (the same one on every call), in no
    condition."""
    assignment, _created = open_assignment(session, study, document, worker_id, platform=PLATFORM)
    return assignment


def store_marks(session: Session, token: str, marks: list[dict[str, Any]]) -> list[dict]:
    """Add each mark (a body of the add action, without ``client_id``) to the assignment
    ``token`` opens, each in a savepoint (a multi-label mark refused half-way leaves nothing);
    the marks the rules refuse are returned with the reason, having stored nothing."""
    db = handle_of(session)
    refused = []
    for number, mark in enumerate(marks, 1):
        try:
            with session.begin_nested():
                add.add(db, token, {**mark, "client_id": f"llm-{number}"})
        except (InvalidInput, Conflict) as exc:
            refused.append(
                {
                    "segment": mark["segment"],
                    "quote": mark["text"][:200],
                    "category": mark["category"],
                    "why": f"refused: {exc}"[:300],
                }
            )
    return refused


def submit_llm_assignment(session: Session, assignment: Assignment, segments: int) -> None:
    """Submit by the submit action; a study that wants every segment seen has each one
    reached first, by the position action (no active seconds: a model reads no clock)."""
    db = handle_of(session)
    if timing.requires_all_seen(assignment.study):
        for index in range(segments):
            position.set_position(db, assignment.token, {"segment": index})
    submit.submit(db, assignment.token)
