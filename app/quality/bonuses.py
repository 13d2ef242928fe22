"""Bonuses per document (``marginalia prolific bonus --per-document RATE --by gold-f1|
expected-f1``): each real document a Prolific worker submitted pays ``RATE`` times a figure
of its quality, summed per worker and Prolific study (docs/METRICS.md, "Sessions, time and
pay"):

* ``gold-f1``: the document's gold F1 (:func:`app.annotation.assignment_scores.gold_f1`, strict);
  a document without gold pays nothing;
* ``expected-f1``: the worker's expected F1 (the worker models as last computed,
  :func:`app.rules.stored_figures.stored_reliability`), the same for each of their documents; a
  worker the models did not cover gets nothing.

Training documents (practice and qualification) pay nothing here; rejected and screened-out
work neither: the counted-work rule (:func:`app.rules.work.assignment_filter`) leaves them
out, and nothing here decides it again. Each worker's sum is rounded to the cent (half up); a
worker whose sum is 0 is left out (Prolific takes no zero bonus). The command prints this
table and the total before anything is sent, and pays only when run again with ``--confirm
TOTAL`` naming that total.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation.assignment_scores import gold_documents, gold_f1
from app.errors import InvalidInput
from app.models import Assignment, Document
from app.rules.stored_figures import stored_reliability
from app.rules.work import Work, assignment_filter

FIGURES = ("gold-f1", "expected-f1")
CENT = Decimal("0.01")


@dataclass
class Bonus:
    """One worker's bonus in one Prolific study, and the figure of each document it pays."""

    worker_id: str
    prolific_study: str
    figures: list[float | None] = field(default_factory=list)
    amount: Decimal = Decimal(0)


def document_bonuses(
    session: Session, study: Any, rate: Decimal, by: str, workers: list[str] | None = None
) -> list[Bonus]:
    """Every Prolific worker's bonus (or the named ones'), by worker ID, zero ones left out."""
    if by not in FIGURES:
        raise InvalidInput(f"--by must be one of {', '.join(FIGURES)}")
    query = (
        select(Assignment)
        .join(Document, Document.id == Assignment.document_id)
        .where(
            Assignment.platform == "prolific",
            *assignment_filter(study, Work()),  # the real documents submitted: no training one
        )
        .order_by(Assignment.worker_id, Assignment.id)
    )
    if workers:
        query = query.where(Assignment.worker_id.in_(workers))
    gold = gold_documents(session, study)
    models, _ = stored_reliability(session, study)
    found: dict[tuple[str, str], Bonus] = {}
    sums: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for assignment in session.scalars(query).all():
        where = (assignment.worker_id, (assignment.platform_data or {}).get("study_id") or "")
        if by == "gold-f1":
            figure = gold_f1(session, assignment, gold)
        else:
            figure = (models.get(assignment.worker_id) or {}).get("expected_f1")
        found.setdefault(where, Bonus(*where)).figures.append(figure)
        if figure is not None:
            sums[where] += rate * Decimal(str(figure))
    bonuses = []
    for where, bonus in found.items():
        bonus.amount = sums[where].quantize(CENT, rounding=ROUND_HALF_UP)
        if bonus.amount > 0:
            bonuses.append(bonus)
    return bonuses


def total(bonuses: list[Bonus]) -> Decimal:
    return sum((b.amount for b in bonuses), Decimal(0)).quantize(CENT)
