"""An LLM annotator's marks stored through the same rules as a human's: its assignment is
opened the way a researcher's key opens one (no arrival policy, so it takes no human's slot:
the slot count is humans' only, app/quality/work.py), each mark goes through the add action
(the body checks, the pairing rule, attributes, the duplicate guard), and the assignment is
submitted by the submit rule. Nothing here writes an annotation row itself.

Each of the three calls lives in one small function, so that a change of the actions'
names is a one-line change here.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.annotation import admission, fast, timing
from app.annotation import assignments as rules
from app.errors import Conflict, InvalidInput
from app.models import Assignment, Document, Study

PLATFORM = "llm"


def open_llm_assignment(
    session: Session, study: Study, document: Document, worker_id: str
) -> Assignment:
    """The annotator's assignment of ``document`` (the same one on every call). It is in no
    experimental condition: it never sees the detector's hints."""
    assignment, created = admission.open_for_document(
        session, study, document, worker_id, platform=PLATFORM
    )
    if created:
        assignment.condition = None
    return assignment


def store_marks(session: Session, token: str, marks: list[dict[str, Any]]) -> list[dict]:
    """Add each mark (a body of the add action, without ``client_id``) to the assignment
    ``token`` opens, each in a savepoint; the marks the rules refuse are returned with the
    reason, having stored nothing."""
    refused = []
    for number, mark in enumerate(marks, 1):
        try:
            with session.begin_nested():
                fast.add(session, token, {**mark, "client_id": f"llm-{number}"})
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
    """Submit by the submit rule; a study that wants every segment seen has each one
    reached first, by the position action (no active seconds: a model reads no clock)."""
    if timing.requires_all_seen(assignment.study):
        for index in range(segments):
            fast.set_position(session, assignment.token, {"segment": index})
    rules.submit(session, assignment)
