"""The training phase's feedback: a worker's marks on one practice segment against gold.

A *practice document* is a gold document marked ``is_practice`` (``import --practice``) of a
study with a pass mark (``settings["qualification"]``,
:func:`app.annotation.qualification.qualification`): every worker does the practice
documents first, and they teach; they are **never graded**. The qualification is graded on
the study's other gold documents, drawn at random for each attempt, whose answers no worker
is ever shown (when the document that gave feedback was also graded, a throwaway worker ID
could ask for feedback without marking anything, read every gold span, and a second ID copy
them and pass at F1 1.00). So feedback never teaches the answer of
anything graded, and asking for it on an empty segment tells only a practice answer. Checks
are also limited per client address (``PRACTICE_RATE_LIMIT``, app/web/limits.py), so one
client cycling worker IDs is slowed. Here, segment by segment: the worker asks to *check* a
segment (``POST /api/assignments/<token>/practice/<n>``) once their marks for it are sent;
the answer compares their live spans in that segment with the segment's gold errors under the
**strict** rule of :mod:`app.rules.matching` and lists

* ``found``: their spans matched one-to-one to a gold error;
* ``missed``: gold errors no span of theirs matched, with the category's definition;
* ``wrong``: their spans that matched no gold error (``reference``: the category the gold
  gives an overlapping error, when it gives one).

Checking freezes the segment: later adds, removes or edits there are refused (409
:data:`FROZEN`), so the answer key, once read, cannot be copied into the marks it scores. The
condition is the actions' claim (``app/annotation/hot_sql.py``'s ``NOT_FROZEN_*``: a
``practice_checks`` row for the segment), and only the check writes such rows,
on a practice document alone: a qualification document (graded, no feedback) has nothing
frozen.
The check (:mod:`app.annotation.practice_check`) is stored (:class:`app.models.PracticeCheck`),
so the same feedback comes back on reload. Only a token on a practice document can check anything: any other token gets the
same 404 as a missing one, and attention checks (``GoldError.is_check``) are never part of
practice feedback.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation.qualification import qualification
from app.models import Assignment, PracticeCheck, span_place
from app.rules.matching import match
from app.rules.scoring import Span

FROZEN = (
    "you have checked your marks on this practice segment: they can no longer be changed. "
    "Go on to the next segment"
)


def is_practice(assignment: Assignment) -> bool:
    """Whether the assignment is on a practice document (a gold practice document of a study
    with a pass mark)."""
    document = assignment.document
    return (
        qualification(assignment.study) is not None
        and bool(document.is_gold)
        and bool(document.is_practice)
    )


def payload(session: Session, assignment: Assignment) -> dict[str, Any]:
    """The assignment payload's ``practice`` entry: present on practice documents only, with
    the feedback of the segments already checked ({segment index as text: feedback})."""
    if not is_practice(assignment):
        return {}
    checked = {
        str(row.segment): row.feedback
        for row in session.scalars(
            select(PracticeCheck)
            .where(PracticeCheck.assignment_id == assignment.id)
            .order_by(PracticeCheck.segment)
        )
    }
    return {"practice": {"checked": checked}}


def _describe(span: Span, categories: dict[str, dict[str, Any]]) -> dict[str, Any]:
    category = categories.get(span.category, {})
    return {
        **span_place(span),
        "label": category.get("label", span.category),
    }


def feedback(
    key: str,
    segment: int,
    text: str,
    gold: list[Span],
    marks: list[Span],
    categories: dict[str, dict[str, Any]],
    scopes: dict[str, str],
) -> dict[str, Any]:
    """Found / missed / wrong of a worker's live spans ``marks`` in ``segment`` (whose text is
    ``text``, of the document keyed ``key``) against the segment's gold errors ``gold``
    (strict rule), worded with the taxonomy's ``categories`` (by id)."""
    pairs = match(marks, gold, "strict", texts={(key, segment): text}, scopes=scopes)
    matched_marks = {i for i, _ in pairs}
    matched_gold = {j for _, j in pairs}
    found = [_describe(marks[i], categories) for i, _ in pairs]
    missed = []
    for j, span in enumerate(gold):
        if j in matched_gold:
            continue
        entry = _describe(span, categories)
        entry["definition"] = categories.get(span.category, {}).get("definition", "")
        missed.append(entry)
    wrong = []
    for i, span in enumerate(marks):
        if i in matched_marks:
            continue
        entry = _describe(span, categories)
        entry["reference"] = next(
            (
                categories.get(g.category, {}).get("label", g.category)
                for g in gold
                if g.located
                and g.start < span.end
                and span.start < g.end  # type: ignore[operator]
                and g.category != span.category
            ),
            None,
        )
        wrong.append(entry)
    return {
        "segment": segment,
        "rule": "strict",
        "gold": len(gold),
        "found": found,
        "missed": missed,
        "wrong": wrong,
    }
