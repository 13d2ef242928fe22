"""The practice check: a worker's marks on one segment of a practice document checked against
gold (``POST /api/assignments/<token>/practice/<n>``), which freezes the segment.

The assignment's row is locked first (so an add or remove in flight waits, and the feedback
reads the marks the freeze keeps), then: a token on anything but a practice document, or a
segment the document does not have, gets the 404 of a token that does not exist; an
assignment neither active nor submitted is refused (409); a segment checked before answers
its stored feedback; else the feedback (:func:`app.annotation.practice.feedback`: the
segment's gold errors, attention checks left out, against the worker's live spans there,
strict rule) is stored (``INSERT … ON CONFLICT DO NOTHING``: the same check from another tab
gets the first one's feedback) and answered. Checks are rate-limited per client address by
the web entry (``PRACTICE_RATE_LIMIT``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, DateTime, bindparam, select, text

from app.annotation import assignments
from app.annotation.assignments import NO_SUCH_TOKEN, TOKEN_PATTERN
from app.annotation.cache import taxonomy_of, texts_of
from app.annotation.handle import Handle
from app.annotation.practice import feedback
from app.annotation.qualification import qualification
from app.errors import Conflict, NotFound
from app.models import (
    Annotation,
    Assignment,
    Document,
    GoldError,
    PracticeCheck,
    Study,
    span_columns,
)
from app.rules.scoring import Span

MAX_SEGMENT = 2**31 - 1
_a, _s, _d = Assignment.__table__.c, Study.__table__.c, Document.__table__.c
# The assignment's row, locked (FOR NO KEY UPDATE on Postgres; SQLite's writer holds the
# database already), with what the check reads of its study and document.
FACTS = (
    select(
        _a.id,
        _a.status,
        _s.id.label("study_id"),
        _s.settings,
        _s.taxonomy_hash,
        _d.id.label("document_id"),
        _d.external_id,
        _d.is_gold,
        _d.is_practice,
        _d.created_at.label("document_created_at"),
    )
    .join_from(Assignment.__table__, Study.__table__, _s.id == _a.study_id)
    .join(Document.__table__, _d.id == _a.document_id)
    .where(_a.token == bindparam("token"))
    .with_for_update(of=Assignment.__table__, key_share=True)
)
_checks = PracticeCheck.__table__.c
STORED = select(_checks.feedback).where(
    _checks.assignment_id == bindparam("assignment_id"), _checks.segment == bindparam("segment")
)
STORE = text(
    "INSERT INTO practice_checks (assignment_id, segment, feedback, created_at) "
    "VALUES (:assignment_id, :segment, :feedback, :now) "
    "ON CONFLICT (assignment_id, segment) DO NOTHING RETURNING id"
).bindparams(bindparam("feedback", type_=JSON), bindparam("now", type_=DateTime(timezone=True)))


def _segment_spans(columns: Any, owner: str, counted: Any) -> Any:
    """The spans of one segment of ``owner`` (a bound id column) that ``counted`` keeps, in
    offset order: the gold errors and the worker's marks are compared on the same terms."""
    return (
        select(columns.id, *span_columns(columns))
        .where(
            columns[owner] == bindparam(owner),
            columns.segment == bindparam("segment"),
            counted,
        )
        .order_by(columns.start_offset, columns.id)
    )


_g = GoldError.__table__.c
GOLD = _segment_spans(_g, "document_id", _g.is_check.is_(False))
_n = Annotation.__table__.c
MARKS = _segment_spans(_n, "assignment_id", _n.removed_at.is_(None))


def check(db: Handle, token: str, segment: int) -> dict[str, Any]:
    """Freeze ``segment`` of a practice assignment and return its feedback (stored once: a
    second check returns what the first one said)."""
    row = db.run(FACTS, {"token": token}).first() if TOKEN_PATTERN.match(token) else None
    texts = texts_of(db, row.document_id, row.document_created_at) if row is not None else []
    practice = (
        row is not None
        and qualification(Study(settings=row.settings)) is not None
        and bool(row.is_gold)
        and bool(row.is_practice)
    )
    if not practice or not 0 <= segment <= MAX_SEGMENT:
        raise NotFound(NO_SUCH_TOKEN)  # the very answer of a token that does not exist
    if row.status not in ("active", "submitted"):
        raise Conflict("this practice document is no longer open")
    keys = {"assignment_id": row.id, "segment": segment}
    stored = db.run(STORED, keys).scalar()
    if stored is not None:
        return stored
    if segment >= len(texts):
        raise NotFound(f"this document has no segment {segment}")
    taxonomy = taxonomy_of(db, row.study_id, row.taxonomy_hash)
    key = row.external_id
    document = {"document_id": row.document_id, "segment": segment}
    gold = [
        Span(key, e.segment, e.start, e.end, e.category, "gold", e.text, e.id)
        for e in db.run(GOLD, document).all()
    ]
    marks = [
        Span(key, a.segment, a.start, a.end, a.category, "worker", a.text, a.id)
        for a in db.run(MARKS, keys).all()
    ]
    answer = feedback(
        key, segment, texts[segment], gold, marks, taxonomy.categories, taxonomy.scopes
    )
    if db.run(STORE, {**keys, "feedback": answer, "now": assignments.now()}).first() is None:
        return db.run(STORED, keys).scalar()  # the same check from another tab came first
    return answer
