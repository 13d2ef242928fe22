"""Every way into a study: a proven return resumes its own assignment; anything else starts
new work under the study's policy (:func:`app.annotation.arrive.arrive`).

A worker ID alone proves nothing. Proof is what only the worker's own visit has: the
assignment's token (kept in ``localStorage`` by the browser that opened it and presented on
arrival), Prolific's ``SESSION_ID`` or MTurk's ``assignmentId`` (matched by
:func:`app.crowd.platforms.find_visit`), or a researcher's API key
(:func:`open_for_document`, for scripts).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation import arrival_sql
from app.annotation.arrival_choice import cap_of, condition_for
from app.annotation.arrive import Arrived, arrive
from app.annotation.assignments import TOKEN_PATTERN, now, open_assignment, worker_id_from
from app.annotation.connect import handle_of
from app.models import Assignment, Document, Study


def visit_by_token(session: Session, study: Study, worker_id: str, token: str) -> Assignment | None:
    """The assignment ``token`` opens, if it is ``worker_id``'s in ``study``; else None."""
    if not TOKEN_PATTERN.match(token):
        return None
    return session.scalar(
        select(Assignment).where(
            Assignment.token == token,
            Assignment.study_id == study.id,
            Assignment.worker_id == worker_id,
        )
    )


def resume(
    session: Session,
    study: Study,
    visit: Assignment,
    *,
    platform_data: dict[str, Any] | None = None,
) -> Assignment | Arrived:
    """Continue a proven visit: active goes on, submitted stays as it is, abandoned is
    reopened while its document has a free slot (after the document's lock, so its slots are
    counted exactly), else the worker gets new work under the policy."""
    data = {**(visit.platform_data or {}), **(platform_data or {})}
    if visit.status == "abandoned":
        db = handle_of(session)
        params = {
            "assignment_id": visit.id,
            "document_id": visit.document_id,  # the document's lock
            "of_document": visit.document_id,
            "cap": cap_of(study, visit.document.is_gold),
        }
        lock = arrival_sql.locks(db.dialect)["document"]
        if db.pair(lock, arrival_sql.REOPEN, params).scalar() is None:
            return arrive(db, study, visit.worker_id, platform=visit.platform, platform_data=data)
        session.refresh(visit)
    if visit.status == "active":
        visit.last_seen_at = now()
        if platform_data:  # MTurk hands out a new assignmentId when a worker accepts again
            visit.platform_data = data
    return visit


def open_for_document(
    session: Session, study: Study, document: Document, worker_id: str
) -> tuple[Assignment, bool]:
    """The (study, document, worker) assignment, opened without the policy's checks and the
    same token on every call: only for callers holding a researcher's API key of the study.
    Never an LLM annotator's worker ID (``worker_id_from``): only its run opens its work.
    A script's assignment comes from no crowd platform: its platform is ``generic``.

    Returns ``(assignment, created)``; a new assignment gets the worker's condition.
    """
    assignment, created = open_assignment(session, study, document, worker_id_from(worker_id))
    if created:
        assignment.condition = condition_for(handle_of(session), study, assignment.worker_id)
    return assignment, created
