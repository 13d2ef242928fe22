"""Imported workers that are vote ranks, not annotators (docs/METRICS.md, "Vote ranks").

A file that gives only how many annotators marked each error (a SNaC file imported with
``--as-work``, a Thresh edit's ``votes``) is kept as one imported worker per vote rank:
worker ``vote-k`` (Thresh: ``import-k``) marks what at least k annotators marked
(:func:`app.documents.imported_work.work_from_votes`). Two things follow, and the figures
say them:

* a document whose vote ranks end below K had no error K annotators marked: it is a clean
  document at K, not a document with too few workers, so ``compare`` counts it at every K;
* agreement among vote ranks measures how the votes are spread (rank 1 holds every mark of
  rank 2), not how annotators agree: the report's ``agreement.vote_ranks`` says so, and the
  dashboard and the text report print it over the agreement figures.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.documents.imported_work import IMPORTED_PLATFORM, VOTE_RANK
from app.models import Assignment, Document, Study
from app.rules.work import Work, assignment_filter

NOT_IAA = (
    "imported vote ranks, not annotators: worker k marks what at least k annotators marked, "
    "so agreement among them measures how the votes are spread, not inter-annotator agreement"
)


def vote_rank_workers(session: Session, study: Study, work: Work) -> dict[int, set[str]]:
    """Per document that counts for ``work``, its submitted imported workers that are vote
    ranks (documents without any left out)."""
    rows = session.execute(
        select(Assignment.document_id, Assignment.worker_id, Assignment.platform_data)
        .join(Document, Document.id == Assignment.document_id)
        .where(
            Assignment.platform == IMPORTED_PLATFORM,
            *assignment_filter(study, Work(include_practice=work.include_practice)),
        )
    )
    found: dict[int, set[str]] = defaultdict(set)
    for document_id, worker_id, data in rows:
        if (data or {}).get(VOTE_RANK):
            found[document_id].add(worker_id)
    return dict(found)


def agreement_note(session: Session, study: Study, work: Work) -> dict[str, Any] | None:
    """The report's ``agreement.vote_ranks``: ``{"workers": [vote-rank workers], "documents":
    count, "note": NOT_IAA}``, or None when no counted work is a vote rank."""
    found = vote_rank_workers(session, study, work)
    if not found:
        return None
    workers = sorted({w for names in found.values() for w in names})
    return {"workers": workers, "documents": len(found), "note": NOT_IAA}
