"""Every way into a study: a proven return resumes its own assignment; anything else starts
new work under the study's policy (:func:`app.annotation.assigning.assign`).

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

from app.annotation.assigning import assign, condition_for, lock_document, slot_is_free
from app.annotation.assignments import TOKEN_PATTERN, now, open_assignment
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
) -> Assignment:
    """Continue a proven visit: active goes on, submitted stays as it is, abandoned is
    reopened while its slot is still free (else the worker gets new work)."""
    if visit.status == "abandoned":
        lock_document(session, visit.document)  # its slots counted exactly (Postgres)
        if not slot_is_free(session, study, visit.document):
            return assign(
                session,
                study,
                visit.worker_id,
                platform=visit.platform,
                platform_data={**(visit.platform_data or {}), **(platform_data or {})},
            )
        visit.status = "active"
    if visit.status == "active":
        visit.last_seen_at = now()
        if platform_data:  # MTurk hands out a new assignmentId when a worker accepts again
            visit.platform_data = {**(visit.platform_data or {}), **platform_data}
    return visit


def open_for_document(
    session: Session,
    study: Study,
    document: Document,
    worker_id: str,
    *,
    platform: str = "generic",
    platform_data: dict[str, Any] | None = None,
) -> tuple[Assignment, bool]:
    """The (study, document, worker) assignment, opened without the policy's checks and the
    same token on every call: only for callers holding a researcher's API key of the study.

    Returns ``(assignment, created)``; a new assignment gets the worker's condition.
    """
    assignment, created = open_assignment(
        session, study, document, worker_id, platform=platform, platform_data=platform_data
    )
    if created:
        assignment.condition = condition_for(session, study, assignment.worker_id)
    return assignment, created
