"""A study's counted-work state: the counter that says its maintained figures are stale.

Every write that changes what a study's report counts calls :func:`changed` in its own
transaction: a submit, a researcher's reject or approve, a screen-out, a review decision,
an import (documents, gold, checks, imported work), a removed document, stored detector
suggestions. It adds one to ``study_figures.version`` and queues the recompute job of
app/quality/figures.py (``run_after`` :data:`DEBOUNCE` later, so the changes of a busy
minute share one recomputation; a queued job keeps its time, a running one is queued again
when it ends). Changes to the study's own settings (the pass mark, annotators per document,
the taxonomy) need no call: the figures carry a hash of them (:func:`settings_key`).

Not counted work, so no call: an annotation added or removed in an active assignment (the
hot path), a worker's arrival, an abandoned assignment. The report's in-progress counts
(``progress.assignments.active``, a worker's ``documents_active``) are therefore as of the
last computation; the dashboard's live counts (``progress.json``) are always current.

One UPDATE of the study's rows (none before its figures were first asked for): no read, and
concurrent submits of a study wait on each other only for the rest of their transactions.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from sqlalchemy import bindparam, case, update
from sqlalchemy.orm import Session

from app.models import Study, StudyFigures, utcnow

DEBOUNCE = timedelta(seconds=10)

_IDLE = StudyFigures.status.in_(("done", "failed"))
BUMP = (
    update(StudyFigures)
    .where(StudyFigures.study_id == bindparam("figures_study"))
    .values(
        version=StudyFigures.version + 1,
        status=case((_IDLE, "queued"), else_=StudyFigures.status),
        run_after=case((_IDLE, bindparam("later")), else_=StudyFigures.run_after),
        attempts=case((_IDLE, 0), else_=StudyFigures.attempts),
    )
    .execution_options(synchronize_session=False)
)


def changed(session: Session, study_id: int) -> None:
    """The study's counted work changed in this transaction: its figures are stale."""
    session.execute(BUMP, {"figures_study": study_id, "later": utcnow() + DEBOUNCE})


def settings_key(study: Study) -> str:
    """A hash of what the report reads from the study itself (its settings, taxonomy,
    annotators per document, names): figures computed under another key are stale."""
    parts = [
        study.slug,
        study.title,
        study.taxonomy_name,
        study.taxonomy_hash,
        study.annotators_per_doc,
        study.suggestions,
        study.settings or {},
    ]
    text = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
