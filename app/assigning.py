"""Which document a worker arriving at a study gets next."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.errors import Conflict
from app.models import Assignment, Document, Study


def next_assignment_document(session: Session, study: Study, worker_id: str) -> Document:
    """The worker's unfinished document if any, else the first one still needing annotators.

    Never the same document twice to one worker. Raises :class:`Conflict` when there is
    nothing left for this worker.
    """
    unfinished = session.scalar(
        select(Document)
        .join(Assignment, Assignment.document_id == Document.id)
        .where(
            Assignment.study_id == study.id,
            Assignment.worker_id == worker_id,
            Assignment.status == "active",
        )
        .order_by(Assignment.id)
        .limit(1)
    )
    if unfinished is not None:
        return unfinished
    taken = (
        select(Assignment.document_id, func.count().label("n"))
        .where(Assignment.study_id == study.id, Assignment.status.in_(("active", "submitted")))
        .group_by(Assignment.document_id)
        .subquery()
    )
    done_by_worker = select(Assignment.document_id).where(
        Assignment.study_id == study.id, Assignment.worker_id == worker_id
    )
    candidate = session.scalar(
        select(Document)
        .outerjoin(taken, taken.c.document_id == Document.id)
        .where(
            Document.study_id == study.id,
            func.coalesce(taken.c.n, 0) < study.annotators_per_doc,
            Document.id.not_in(done_by_worker),
        )
        .order_by(func.coalesce(taken.c.n, 0), Document.position)
        .limit(1)
    )
    if candidate is None:
        raise Conflict("there are no more documents for you in this study — thank you!")
    return candidate
