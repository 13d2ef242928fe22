"""Worker management: a researcher's verdict on a worker in one study, and its log.

Actions (each logged in ``worker_actions`` with who and when):

* ``approve``: review status ``approved``; assignments an earlier reject took away come back
  (``submitted`` if they were, else ``abandoned``), and the block that reject set is lifted
  unless the worker was blocked on their own (a ``block`` not undone by an ``unblock``);
* ``reject``: review status ``rejected`` and blocked; every ``active`` or ``submitted``
  assignment of the worker becomes ``rejected``: its annotations leave every export and the
  agreement figures (they count ``submitted`` work only) and its slot is free for the next
  worker (:data:`app.annotation.assigning.TAKEN` does not count it);
* ``block`` / ``unblock``: a blocked worker gets no new document in the study
  (:func:`refuse_blocked`, called on every arrival);
* ``note``: the researcher's note on the worker, replaced.

The study's pause rule (:mod:`app.annotation.pausing`) blocks a worker too, logged as a
``pause`` action by ``pause rule``; ``unblock`` or ``approve`` lifts it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.documents.text import normalise_newlines, storable, text_problem
from app.errors import Conflict, InvalidInput, NotFound
from app.models import Assignment, Study, WorkerAction, WorkerReview, changes

ACTIONS = ("approve", "reject", "block", "unblock", "note")
# A worker's state in a study, from their assignments' statuses (:func:`worker_state`).
STATES = ("rejected", "screened_out", "active", "submitted", "abandoned")
MAX_NOTE_CHARS = 2000


class Blocked(Conflict):
    """The arriving worker was blocked from this study by a researcher."""

    def __init__(self) -> None:
        super().__init__("you cannot take part in this study any more")


class Paused(Blocked):
    """The arriving worker was paused by the study's pause rule (app/annotation/pausing.py)."""

    def __init__(self) -> None:
        Conflict.__init__(
            self,
            "your work in this study is paused: your answers fell below the study's quality "
            "bar, and the researchers will look at them; no new document for now",
        )


def refuse_blocked(session: Session, study: Study, worker_id: str) -> None:
    """One cheap query: raise :class:`Blocked` when the worker is blocked from the study
    (:class:`Paused` when the last action that set it was the pause rule's)."""
    blocked = session.scalar(
        select(WorkerReview.blocked).where(
            WorkerReview.study_id == study.id, WorkerReview.worker_id == worker_id
        )
    )
    if blocked:
        last = session.scalar(
            select(WorkerAction.action)
            .where(
                WorkerAction.study_id == study.id,
                WorkerAction.worker_id == worker_id,
                WorkerAction.action.in_(("block", "reject", "pause")),
            )
            .order_by(WorkerAction.id.desc())
            .limit(1)
        )
        raise Paused() if last == "pause" else Blocked()


def worker_state(statuses: Iterable[str]) -> str:
    """One word for what became of a worker in a study, from their assignments' statuses:
    ``rejected`` (by a researcher), ``screened_out`` (out of practice attempts), ``active``
    (working now), ``submitted`` (done), else ``abandoned``; the first that applies."""
    seen = set(statuses)
    return next((state for state in STATES[:-1] if state in seen), "abandoned")


def worker_states(session: Session, study: Study) -> dict[str, str]:
    """Every worker of the study: :func:`worker_state` of all their assignments."""
    statuses: dict[str, list[str]] = {}
    for worker, status in session.execute(
        select(Assignment.worker_id, Assignment.status).where(Assignment.study_id == study.id)
    ):
        statuses.setdefault(worker, []).append(status)
    return {worker: worker_state(found) for worker, found in statuses.items()}


def blocked_on_their_own(session: Session, study: Study, worker_id: str) -> bool:
    """Whether the worker's latest ``block`` / ``unblock`` action is a ``block``: a block
    the researcher set themselves, which an approve after a reject keeps."""
    last = session.scalar(
        select(WorkerAction.action)
        .where(
            WorkerAction.study_id == study.id,
            WorkerAction.worker_id == worker_id,
            WorkerAction.action.in_(("block", "unblock")),
        )
        .order_by(WorkerAction.id.desc())
        .limit(1)
    )
    return last == "block"


def reviews(session: Session, study: Study) -> dict[str, WorkerReview]:
    """Every reviewed worker of the study: worker ID -> review row."""
    return {
        row.worker_id: row
        for row in session.scalars(select(WorkerReview).where(WorkerReview.study_id == study.id))
    }


def review_status(session: Session, study: Study) -> dict[str, str]:
    """The export column hook: worker ID -> ``approved`` / ``rejected`` (absent: not reviewed)."""
    return {w: r.status for w, r in reviews(session, study).items() if r.status}


def action_log(session: Session, study: Study, worker_id: str) -> list[WorkerAction]:
    return list(
        session.scalars(
            select(WorkerAction)
            .where(WorkerAction.study_id == study.id, WorkerAction.worker_id == worker_id)
            .order_by(WorkerAction.id.desc())
        )
    )


def _note(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInput("the note must be text")
    if len(value) > MAX_NOTE_CHARS:
        raise InvalidInput(f"the note is longer than {MAX_NOTE_CHARS} characters")
    value = normalise_newlines(value)
    if not storable(value) or text_problem(value, allow="\n\t"):
        raise InvalidInput("the note must not contain control characters")
    return value.strip()


def act(
    session: Session, study: Study, worker_id: str, action: str, actor: str, note: object = ""
) -> WorkerReview:
    """Apply one action to a worker who has work in the study, and log it."""
    if action not in ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(ACTIONS)}")
    known = "\x00" not in worker_id and session.scalar(  # no stored ID has a NUL (Postgres
        select(Assignment.id)  # refuses one in a query: it was a 500)
        .where(Assignment.study_id == study.id, Assignment.worker_id == worker_id)
        .limit(1)
    )
    if not known:
        raise NotFound("no worker with this ID in this study")
    detail = _note(note) if action == "note" else ""
    review = session.scalar(
        select(WorkerReview).where(
            WorkerReview.study_id == study.id, WorkerReview.worker_id == worker_id
        )
    )
    if review is None:
        review = WorkerReview(study_id=study.id, worker_id=worker_id, blocked=False, note="")
        session.add(review)
    mine = (Assignment.study_id == study.id) & (Assignment.worker_id == worker_id)
    if action in ("reject", "approve"):  # Core updates of the assignments: the flush sees none
        changes.mark(session, study.id, f"worker {action}")
    if action == "reject":
        review.status, review.blocked = "rejected", True
        session.execute(
            update(Assignment)
            .where(mine, Assignment.status.in_(("active", "submitted")))
            .values(status="rejected")
        )
    elif action == "approve":
        review.status = "approved"
        review.blocked = blocked_on_their_own(session, study, worker_id)
        for restored, had_submitted in (("submitted", True), ("abandoned", False)):
            session.execute(
                update(Assignment)
                .where(
                    mine,
                    Assignment.status == "rejected",
                    Assignment.submitted_at.is_not(None)
                    if had_submitted
                    else Assignment.submitted_at.is_(None),
                )
                .values(status=restored)
            )
    elif action in ("block", "unblock"):
        review.blocked = action == "block"
    else:
        review.note = detail
    review.updated_at = datetime.now(UTC)
    session.add(
        WorkerAction(
            study_id=study.id, worker_id=worker_id, action=action, detail=detail, actor=actor
        )
    )
    session.flush()
    return review
