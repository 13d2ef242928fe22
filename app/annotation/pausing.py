"""The optional pause rule (docs/METRICS.md, "The pause rule"): a study setting that
stops new documents for a worker whose figures fall below a bar once they have done enough.

``settings["pause"] = {"after": K, "min_expected_f1": C, "min_gold_f1": G}`` (C or G may be
absent, not both): a worker with at least K submitted documents whose **expected F1** (the
figure that ranks workers, :mod:`app.quality.reliability`, as last computed by the figure
job) is below C, or whose **gold F1** (the mean strict F1 over their submitted gold
documents) is below G, is paused: blocked from new documents (``WorkerReview.blocked``,
which every arrival reads, :func:`app.annotation.reviews.refuse_blocked`) and logged as a
``pause`` worker action by ``pause rule`` with the figure in its detail. The rule pauses a
worker once: a researcher's unblock (or approve) stands.

It is checked for the submitting worker on every submit (:func:`check`, from
:func:`app.annotation.assignments.submit`) and for every worker when the figure job has
computed new figures (:mod:`app.quality.figure_jobs`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.errors import InvalidInput
from app.models import Assignment, Study, WorkerAction, WorkerReview
from app.rules.stored_figures import stored_reliability
from app.rules.work import is_llm

ACTOR = "pause rule"
MAX_AFTER = 10_000


@dataclass(frozen=True)
class PauseRule:
    after: int
    min_expected_f1: float | None
    min_gold_f1: float | None


def pause_rule(study: Study) -> PauseRule | None:
    """The study's pause rule, or None when it has none."""
    rule = (study.settings or {}).get("pause")
    if not rule:
        return None
    return PauseRule(int(rule["after"]), rule.get("min_expected_f1"), rule.get("min_gold_f1"))


def _bar(value: Any, what: str) -> float | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "off")):
        return None
    try:
        bar = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"the pause rule's {what} must be a number from 0 to 1") from None
    if not 0 < bar <= 1:
        raise InvalidInput(f"the pause rule's {what} must be more than 0 and at most 1")
    return bar


def configure_pause(study: Study, *, after: Any, min_expected_f1: Any, min_gold_f1: Any) -> None:
    """Set the rule from form or command-line values (both bars empty or 'off': no rule).
    Raises :class:`InvalidInput`, changing nothing, on a bad value."""
    competence, gold = _bar(min_expected_f1, "expected F1"), _bar(min_gold_f1, "gold F1")
    settings = dict(study.settings or {})
    if competence is None and gold is None:
        settings.pop("pause", None)
        study.settings = settings
        return
    try:
        count = int(str(after).strip())
    except (TypeError, ValueError):
        raise InvalidInput("the pause rule's document count must be a whole number") from None
    if not 1 <= count <= MAX_AFTER:
        raise InvalidInput(f"the pause rule's document count must be from 1 to {MAX_AFTER}")
    rule: dict[str, Any] = {"after": count}
    if competence is not None:
        rule["min_expected_f1"] = competence
    if gold is not None:
        rule["min_gold_f1"] = gold
    settings["pause"] = rule
    study.settings = settings


def _reason(
    session: Session,
    study: Study,
    rule: PauseRule,
    worker_id: str,
    models: Callable[[], dict[str, Any]],
) -> str:
    """Why the rule pauses this worker ('' when it does not); ``models`` reads the stored
    figures (only for a worker past K documents, under an expected-F1 bar)."""
    done = session.scalar(
        select(func.count(Assignment.id)).where(
            Assignment.study_id == study.id,
            Assignment.worker_id == worker_id,
            Assignment.status == "submitted",
        )
    )
    if (done or 0) < rule.after:
        return ""
    bar = rule.min_expected_f1
    expected = (models().get(worker_id) or {}).get("expected_f1") if bar is not None else None
    if bar is not None and expected is not None and expected < bar:
        return f"expected F1 {expected:.3f} < {bar:g} after {done} documents"
    if rule.min_gold_f1 is not None:
        gold = gold_f1(session, study, worker_id)
        if gold is not None and gold < rule.min_gold_f1:
            return f"gold F1 {gold:.3f} < {rule.min_gold_f1:g} after {done} documents"
    return ""


def gold_f1(session: Session, study: Study, worker_id: str) -> float | None:
    """The mean strict F1 over the worker's submitted gold documents (None: none, and in a
    study with a qualification rule, whose pass mark judges its gold documents)."""
    from app.annotation.qualification import gold_f1s, qualification

    if qualification(study) is not None:
        return None
    f1s = gold_f1s(session, study, worker_id, ("submitted",))
    return sum(f1s) / len(f1s) if f1s else None


def check(session: Session, study: Study, workers: Iterable[str] | None = None) -> list[str]:
    """Apply the rule to ``workers`` (default: every worker with submitted work); returns
    those it paused now. The caller commits."""
    rule = pause_rule(study)
    if rule is None:
        return []
    if workers is None:
        workers = session.scalars(
            select(Assignment.worker_id)
            .where(Assignment.study_id == study.id, Assignment.status == "submitted")
            .distinct()
        ).all()
    once = set(
        session.scalars(
            select(WorkerAction.worker_id).where(
                WorkerAction.study_id == study.id, WorkerAction.action == "pause"
            )
        )
    )
    stored: list[dict[str, Any]] = []

    def models() -> dict[str, Any]:  # the stored figures, read once and only when needed
        if not stored:
            stored.append(stored_reliability(session, study)[0])
        return stored[0]

    paused = []
    for worker_id in sorted(set(workers) - once):
        if is_llm(worker_id):  # a model is no crowd worker: nothing to pause (app/llm/)
            continue
        review = session.scalar(
            select(WorkerReview).where(
                WorkerReview.study_id == study.id, WorkerReview.worker_id == worker_id
            )
        )
        if review is not None and review.blocked:
            continue
        reason = _reason(session, study, rule, worker_id, models)
        if not reason:
            continue
        if review is None:
            review = WorkerReview(study_id=study.id, worker_id=worker_id, blocked=False, note="")
            session.add(review)
        review.blocked = True
        session.add(
            WorkerAction(
                study_id=study.id, worker_id=worker_id, action="pause", detail=reason, actor=ACTOR
            )
        )
        paused.append(worker_id)
    session.flush()
    return paused
