"""The stored figures' reader: a study's ``FigureJob`` row and the worker models it holds.

The figure job (app/quality/figures.py) writes the row; the pause rule at submit
(app/annotation/pausing.py), the bonuses, the assignments export and the workers page read it.
The reader sits here, below the features, so that the worker's actions read the stored
figures without importing the report that computes them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import FigureJob, Study


def figure_row(session: Session, study: Study, include_practice: bool) -> FigureJob | None:
    """The study's figure job row for the counted work with or without practice (None: the
    figures were never asked for)."""
    return session.scalar(
        select(FigureJob).where(
            FigureJob.study_id == study.id, FigureJob.include_practice.is_(include_practice)
        )
    )


def stored_reliability(session: Session, study: Study) -> tuple[dict[str, Any], str | None]:
    """Each worker's stored model figures (counted work, practice left out: as last
    computed, current or not) and when they were computed (None: never)."""
    row = figure_row(session, study, False)
    if row is None or row.result is None:
        return {}, None
    models = row.result.get("models") or {}
    return dict(models.get("workers") or {}), (
        row.finished_at.isoformat() if row.finished_at else None
    )
