"""Attention checks: gold errors planted in real documents (``marginalia import --checks``)
and each worker's catch rate of them (``docs/METRICS.md``, *Attention checks*).

A check is **caught** by an assignment when one of the worker's live spans matches it under
the strict rule of :mod:`app.rules.matching` (same segment and category, token IoU >= 0.5,
one-to-one). A worker's **catch rate** = checks caught / checks met, over the checks of the
documents of their *submitted* assignments (the worker pages and the assignment export also
count *rejected* ones, as they do for time: a rejected worker's catch rate stays in view);
None when they met none. With the study setting
``settings["attention"] = {"min_catch_rate": T}`` a worker whose catch rate is below T is
**flagged**. Checks are never shown to workers as anything special: they are not
suggestions, not in the assignment payload, and not in gold scores.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Assignment, Document, GoldError, Segment, Study
from app.rules.matching import match
from app.rules.scoring import Span, TextKey, scopes_from_taxonomy
from app.rules.work import Work, columns, select_work

# The work a catch rate reads (app/rules/work.py): the submitted work on any document (a
# check sits in real work); a rejected worker's work leaves every figure, but the pages about
# them keep their rate.
SUBMITTED_WORK = Work(include_practice=True)
WITH_REJECTED = Work(include_practice=True, rejected=True)


@dataclass(frozen=True)
class CatchRate:
    """One worker's attention checks: how many they met and caught, and whether flagged."""

    checks: int
    caught: int
    flagged: bool

    @property
    def rate(self) -> float | None:
        return self.caught / self.checks if self.checks else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "checks": self.checks,
            "caught": self.caught,
            "catch_rate": self.rate,
            "flagged": self.flagged,
        }


def min_catch_rate(study: Study) -> float | None:
    """The study's flagging threshold, or None (no worker is flagged)."""
    rule = (study.settings or {}).get("attention") or {}
    value = rule.get("min_catch_rate")
    return None if value is None else float(value)


def study_gold(session: Session, study: Study, *, checks: bool) -> Any:
    """The study's gold errors in id order: its attention checks (``checks``) or the gold
    errors that score workers; the two never mix (docs/METRICS.md)."""
    return session.scalars(
        select(GoldError)
        .join(Document, GoldError.document_id == Document.id)
        .where(Document.study_id == study.id, GoldError.is_check.is_(checks))
        .order_by(GoldError.id)
    )


def _check_spans(session: Session, study: Study) -> dict[int, list[Span]]:
    """The study's attention checks by document id."""
    checks: dict[int, list[Span]] = defaultdict(list)
    for err in study_gold(session, study, checks=True):
        key = str(err.document_id)
        checks[err.document_id].append(
            Span(key, err.segment, err.start, err.end, err.category, "check", err.text, err.id)
        )
    return checks


def caught_per_assignment(
    session: Session,
    study: Study,
    *,
    worker_id: str | None = None,
    checks: dict[int, list[Span]] | None = None,
    work: Work = SUBMITTED_WORK,
) -> dict[int, tuple[str, int, int]]:
    """{assignment id: (worker id, checks met, checks caught)} for the study's assignments of
    ``work`` (:mod:`app.rules.work`: submitted, or with :data:`WITH_REJECTED` rejected too)
    on documents carrying checks (one worker's, with ``worker_id``): the hook for
    per-assignment rows (the assignment export)."""
    if checks is None:
        checks = _check_spans(session, study)
    if not checks:
        return {}
    sql = columns(study, work)
    query = select_work(
        study,
        work,
        *(sql[name].label(name) for name in ("assignment_id", "worker_id", "document_id")),
        *(sql[name].label(name) for name in ("id", "segment", "start", "end", "category")),
    ).where(Document.id.in_(checks))
    if worker_id is not None:
        query = query.where(Assignment.worker_id == worker_id)
    rows = session.execute(query).all()
    if not rows:
        return {}
    texts: dict[TextKey, str] = {
        (str(doc_id), index): text
        for doc_id, index, text in session.execute(
            select(Segment.document_id, Segment.index, Segment.text).where(
                Segment.document_id.in_(checks)
            )
        )
    }
    marks: dict[int, list[Span]] = defaultdict(list)
    owners: dict[int, tuple[str, int]] = {}
    # in the order the marks were made; an assignment without a live mark is one empty row
    for row in sorted(rows, key=lambda row: row.id or 0):
        owners[row.assignment_id] = (row.worker_id, row.document_id)
        if row.id is not None:
            key = str(row.document_id)
            marks[row.assignment_id].append(
                Span(key, row.segment, row.start, row.end, row.category)
            )
    scopes = scopes_from_taxonomy(study.taxonomy or {})
    result = {}
    for assignment_id in sorted(owners):
        worker, document_id = owners[assignment_id]
        planted = checks[document_id]
        pairs = match(marks[assignment_id], planted, "strict", texts=texts, scopes=scopes)
        result[assignment_id] = (worker, len(planted), len(pairs))
    return result


def catch_rates(
    session: Session,
    study: Study,
    *,
    worker_id: str | None = None,
    checks: dict[int, list[Span]] | None = None,
    work: Work = SUBMITTED_WORK,
) -> dict[str, CatchRate]:
    """{worker id: :class:`CatchRate`} for every worker who met a check (or one worker), over
    their assignments of ``work``: the submitted ones for the report and the dashboard;
    :data:`WITH_REJECTED` for the worker pages and the assignment export."""
    threshold = min_catch_rate(study)
    met: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_assignment = caught_per_assignment(
        session, study, worker_id=worker_id, checks=checks, work=work
    )
    for worker, planted, caught in per_assignment.values():
        met[worker][0] += planted
        met[worker][1] += caught
    return {
        worker: CatchRate(
            checks, caught, threshold is not None and checks > 0 and caught / checks < threshold
        )
        for worker, (checks, caught) in sorted(met.items())
    }


def attention_report(session: Session, study: Study) -> dict[str, Any]:
    """The report's ``attention`` section: the threshold, the number of checks planted and
    each worker's catch rate (only workers who met a check)."""
    planted = _check_spans(session, study)
    return {
        "checks": sum(len(spans) for spans in planted.values()),
        "documents": len(planted),
        "min_catch_rate": min_catch_rate(study),
        "workers": {w: r.as_dict() for w, r in catch_rates(session, study, checks=planted).items()},
    }
