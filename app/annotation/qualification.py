"""The qualification rule (the training phase's pass mark): which gold (practice) documents a
worker has submitted, their strict F1 against gold, and whether they may go on to real work.

``settings["qualification"] = {"min_f1": F, "attempts": K}``: a worker does at most K
qualification documents (gold, not practice: ``Document.is_practice`` documents teach and are
never graded) and qualifies once one of them reaches F1 >= F (docs/METRICS.md). A worker who
used all K without reaching it is *screened out*: :func:`screen_out` turns every training
assignment of theirs (practice and qualification documents) into ``screened_out`` (no
completion code), which counts as an attempt where it was one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.crowd.platforms import DEFAULT_QUALIFICATION_ATTEMPTS
from app.models import Assignment, Document, Study, changes
from app.rules.work import is_llm

# The statuses of a practice assignment that used an attempt.
ATTEMPTED = ("submitted", "screened_out")


@dataclass(frozen=True)
class Qualification:
    min_f1: float
    attempts: int


def qualification(study: Study) -> Qualification | None:
    """The study's qualification rule, or None when workers go straight to real documents."""
    rule = (study.settings or {}).get("qualification")
    if not rule:
        return None
    return Qualification(
        min_f1=float(rule["min_f1"]),
        attempts=int(rule.get("attempts", DEFAULT_QUALIFICATION_ATTEMPTS)),
    )


def qualifying(assignment: Assignment) -> bool:
    """Whether ``assignment`` is a qualification attempt: a gold document of a study with a
    pass mark (its submit gets no code; the done page scores it). An LLM annotator's never
    is: a model is no crowd worker, its gold documents are its calibration (app/llm/)."""
    return (
        qualification(assignment.study) is not None
        and assignment.document.is_gold
        and not is_llm(assignment.worker_id)
    )


def score_gold(session: Session, assignment: Assignment) -> dict[str, Any] | None:
    """P/R/F1 of a submitted assignment's live spans against its document's gold errors.

    Stored in ``assignment.scores["gold"]`` (computed once); None for non-gold documents
    and for assignments not yet submitted.
    """
    if assignment.status not in ATTEMPTED or not assignment.document.is_gold:
        return None
    scores = dict(assignment.scores or {})
    if (scores.get("gold") or {}).get("rule") == "strict":
        return scores["gold"]  # scores from before the one-to-one strict rule are redone
    from app.annotation.assignment_scores import score_against_gold

    result = score_against_gold(session, assignment)
    scores["gold"] = result
    assignment.scores = scores
    return result


@dataclass(frozen=True)
class QualificationState:
    qualified: bool
    attempts_used: int
    best_f1: float | None
    can_try_again: bool


def gold_f1s(
    session: Session, study: Study, worker_id: str, statuses: tuple[str, ...]
) -> list[float]:
    """The strict F1 of each of ``worker_id``'s graded gold documents (practice documents are
    never graded) whose assignment has one of ``statuses``, oldest first; scoring any unscored
    one first, an unscorable one counting 0. The qualification and the pause rule read it."""
    graded = session.scalars(
        select(Assignment)
        .join(Document, Document.id == Assignment.document_id)
        .where(
            Assignment.study_id == study.id,
            Assignment.worker_id == worker_id,
            Assignment.status.in_(statuses),
            Document.is_gold.is_(True),
            Document.is_practice.is_(False),
        )
        .order_by(Assignment.id)
    ).all()
    f1s = []
    for assignment in graded:
        f1 = ((score_gold(session, assignment) or {}).get("overall") or {}).get("f1")
        f1s.append(f1 if f1 is not None else 0.0)
    return f1s


def qualification_state(session: Session, study: Study, worker_id: str) -> QualificationState:
    """Whether ``worker_id`` has qualified (scoring any unscored gold submissions first)."""
    rule = qualification(study)
    if rule is None:
        return QualificationState(True, 0, None, False)
    f1s = gold_f1s(session, study, worker_id, ATTEMPTED)
    best = max(f1s) if f1s else None
    qualified = best is not None and best >= rule.min_f1
    return QualificationState(
        qualified=qualified,
        attempts_used=len(f1s),
        best_f1=best,
        can_try_again=not qualified and len(f1s) < rule.attempts,
    )


def screened_out(state: QualificationState) -> bool:
    """Whether a worker in ``state`` used every attempt without the pass mark."""
    return state.attempts_used > 0 and not state.qualified and not state.can_try_again


def screen_out(session: Session, study: Study, worker_id: str) -> bool:
    """Mark a worker who used every practice attempt without the pass mark: each of their
    submitted practice assignments becomes ``screened_out`` and loses any completion code
    (a screened-out worker gets the screen-out return, never a code). Returns whether the
    worker is screened out; an idempotent no-op for anyone else."""
    if qualification(study) is None:
        return False
    if not screened_out(qualification_state(session, study, worker_id)):
        return False
    practice = select(Document.id).where(Document.study_id == study.id, Document.is_gold)
    changes.mark(session, study.id, "screened out")  # a Core update: the flush sees none
    session.execute(
        update(Assignment)
        .where(
            Assignment.study_id == study.id,
            Assignment.worker_id == worker_id,
            Assignment.status == "submitted",
            Assignment.document_id.in_(practice),
        )
        .values(status="screened_out", completion_code=None)
        .execution_options(synchronize_session="fetch")
    )
    return True
