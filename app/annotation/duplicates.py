"""The exact-duplicate guard: one worker cannot mark the same span with the same category
(and the same paired span) twice; the page flashes the existing mark instead."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.errors import Conflict
from app.models import Annotation, Assignment

DUPLICATE_KEYS = (
    "segment",
    "start",
    "end",
    "category",
    "paired_segment",
    "paired_start",
    "paired_end",
)


def refuse_exact_duplicate(
    session: Session, assignment: Assignment, client_id: str, values: dict[str, Any]
) -> None:
    """Refuse a live annotation of this assignment with the same span, category and pair.

    Comments do not count: the same mark with another comment is still the same mark. Raises
    :class:`Conflict` carrying ``existing_id``. The assignment row is locked (or SQLite's
    write lock held) by the caller, so two racing duplicates cannot both pass.
    """
    existing = session.scalar(
        select(Annotation.id).where(
            Annotation.assignment_id == assignment.id,
            Annotation.removed_at.is_(None),
            Annotation.client_id != client_id,
            *(
                getattr(Annotation, key).is_(values[key])
                if values[key] is None
                else getattr(Annotation, key) == values[key]
                for key in DUPLICATE_KEYS
            ),
        )
    )
    if existing is not None:
        raise Conflict("you have already marked this span with this category", existing_id=existing)
