"""Writing a document's adjudicated layer: decide a candidate (accept as proposed, accept
edited, reject), add an error no worker marked, change or withdraw a row, set the review
status, auto-accept by votes (or by the consensus's posterior), promote a reviewed document to gold.

Every row carries ``version``: a change names the version it was made from (0 for a
candidate not decided yet) and is refused with a 409 :class:`~app.errors.Conflict` naming
who changed it and when if someone else changed it first (compare-and-set in one UPDATE,
the unique (document, candidate) row for concurrent first decisions). Spans are checked
like workers' annotations (:func:`app.annotation.assignments.check_span`,
:func:`app.annotation.pairing.paired_values`). The caller commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.annotation.cache import segment_texts
from app.annotation.pairing import paired_values
from app.annotation.values import MAX_COMMENT_CHARS, check_span
from app.documents.attributes import check_attributes
from app.documents.taxonomy import categories_by_id
from app.documents.text import normalise_newlines
from app.errors import Conflict, InvalidInput, NotFound
from app.models import (
    AdjudicatedError,
    Document,
    DocumentReview,
    GoldError,
    changes,
    isoformat,
    span_place,
    utcnow,
)
from app.quality.candidates import PAIRED_FIELDS, Candidate
from app.quality.review_state import candidates_of, consensus_posteriors

DECISIONS = {"accept": "accepted", "reject": "rejected"}
STATUSES = ("unreviewed", "in_review", "done")
EDIT_FIELDS = {"segment", "start", "end", "text", "category", "paired", "comment", "attributes"}


def _version(body: dict[str, Any]) -> int:
    value = body.get("version")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput("version must be the version you saw (0 when not decided yet)")
    return value


def _object(body: Any, what: str = "the body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidInput(f"{what} must be a JSON object")
    return body


def checked_values(session: Session, document: Document, body: Any) -> dict[str, Any]:
    """An error's columns from ``{"segment", "start", "end", "text", "category", "paired",
    "comment"}``, checked like a worker's annotation."""
    body = _object(body, "edit")
    unknown = set(body) - EDIT_FIELDS
    if unknown:
        raise InvalidInput(f"unknown field {sorted(unknown)[0]!r}")
    texts = segment_texts(session, document.id)
    segment, start, end, text = check_span(body, texts, "")
    categories = categories_by_id(document.study.taxonomy)
    category_id = body.get("category")
    if not isinstance(category_id, str) or category_id not in categories:
        raise InvalidInput(
            f"unknown category {category_id!r} (this study has: {', '.join(categories)})"
        )
    values: dict[str, Any] = dict.fromkeys(PAIRED_FIELDS)
    paired = body.get("paired")
    if categories[category_id]["kind"] == "paired":
        if paired is None:
            raise InvalidInput(f"category {category_id!r} is paired: give the earlier span too")
        values.update(
            paired_values(paired, categories[category_id], texts, segment, start, check_span)
        )
    elif categories[category_id]["kind"] == "relation" and paired is not None:
        values.update(
            paired_values(paired, categories[category_id], texts, segment, start, check_span, False)
        )
    elif paired is not None:
        raise InvalidInput(f"category {category_id!r} is a singleton: it takes no paired span")
    values["attributes"] = check_attributes(body.get("attributes"), [categories[category_id]])
    comment = body.get("comment") or ""
    if not isinstance(comment, str) or len(comment) > MAX_COMMENT_CHARS:
        raise InvalidInput(f"comment must be text of at most {MAX_COMMENT_CHARS} characters")
    values.update(segment=segment, start=start, end=end, text=text, category=category_id)
    values["comment"] = normalise_newlines(comment).strip(" \n")
    return values


def proposal_values(candidate: Candidate) -> dict[str, Any]:
    """The columns of a candidate's proposal (its most frequent mark, with its attribute
    values), with the workers' comments kept: each distinct one of its marks', in mark
    order, one per line."""
    mark = candidate.proposal
    return {
        "segment": mark.segment,
        "start": mark.start,
        "end": mark.end,
        "text": mark.text,
        "category": mark.category,
        **dict(zip(PAIRED_FIELDS, mark.paired, strict=True)),
        "comment": candidate.comment,
        "attributes": mark.attributes,
    }


def _conflict(row: AdjudicatedError | DocumentReview | None, what: str) -> Conflict:
    if row is None:
        return Conflict(f"{what} was withdrawn meanwhile: reload the page")
    who = row.decided_by if isinstance(row, AdjudicatedError) else row.updated_by
    when = row.decided_at if isinstance(row, AdjudicatedError) else row.updated_at
    return Conflict(
        f"{what} was changed by {who} at {isoformat(when)} (now version {row.version}): "
        "reload to see their change, then decide again",
        changed_by=who,
        version=row.version,
    )


def _write(
    session: Session,
    document: Document,
    candidate: str | None,
    row_id: int | None,
    expected: int,
    values: dict[str, Any],
    who: str,
) -> AdjudicatedError:
    """Insert (``expected`` 0) or compare-and-set update the row; a lost race is a 409."""
    what = f"candidate {candidate}" if candidate else f"error {row_id}"
    values = {**values, "decided_by": who, "decided_at": utcnow()}
    if expected == 0:
        existing = session.scalar(
            select(AdjudicatedError).where(
                AdjudicatedError.document_id == document.id,
                AdjudicatedError.candidate == candidate,
            )
        )
        if existing is not None:
            raise _conflict(existing, what)
        row = AdjudicatedError(document_id=document.id, candidate=candidate, version=1, **values)
        try:
            with session.begin_nested():
                session.add(row)
        except IntegrityError:
            raise _conflict(
                session.scalar(
                    select(AdjudicatedError).where(
                        AdjudicatedError.document_id == document.id,
                        AdjudicatedError.candidate == candidate,
                    )
                ),
                what,
            ) from None
    else:
        where = [AdjudicatedError.document_id == document.id]
        where.append(
            AdjudicatedError.candidate == candidate if candidate else AdjudicatedError.id == row_id
        )
        changes.mark(session, document.study_id, "adjudicated error")  # a Core update
        changed = session.execute(
            update(AdjudicatedError)
            .where(*where, AdjudicatedError.version == expected)
            .values(version=AdjudicatedError.version + 1, **values)
            .execution_options(synchronize_session=False)
        ).rowcount
        row = session.scalar(select(AdjudicatedError).where(*where))
        if not changed:
            raise _conflict(row, what)
        session.refresh(row)
    _start_review(session, document, who)
    return row


def _find(session: Session, document: Document, key: str) -> Candidate:
    for candidate in candidates_of(session, document):
        if candidate.key == key:
            return candidate
    raise Conflict(
        f"candidate {key} is no longer one of this document's (workers' marks changed): reload"
    )


def decide(session: Session, document: Document, key: str, body: Any, who: str) -> AdjudicatedError:
    """Accept (``edit`` optional: the corrected error) or reject the candidate ``key``."""
    body = _object(body)
    unknown = set(body) - {"decision", "version", "edit"}
    if unknown:
        raise InvalidInput(f"unknown field {sorted(unknown)[0]!r}")
    decision = DECISIONS.get(body.get("decision"))  # type: ignore[arg-type]
    if decision is None:
        raise InvalidInput("decision must be 'accept' or 'reject'")
    expected = _version(body)
    candidate = _find(session, document, key)
    values = proposal_values(candidate)
    if body.get("edit") is not None:
        if decision != "accepted":
            raise InvalidInput("only an accepted candidate takes an edit")
        values = checked_values(session, document, body["edit"])
    origin = "edited" if body.get("edit") is not None else "reviewed"
    return _write(
        session,
        document,
        key,
        None,
        expected,
        {**values, "decision": decision, "origin": origin},
        who,
    )


def add_error(session: Session, document: Document, body: Any, who: str) -> AdjudicatedError:
    """An error no worker marked (or marked otherwise), accepted into the layer."""
    values = checked_values(session, document, _object(body).get("edit", body))
    same = session.scalar(
        select(AdjudicatedError).where(
            AdjudicatedError.document_id == document.id,
            AdjudicatedError.decision == "accepted",
            AdjudicatedError.segment == values["segment"],
            AdjudicatedError.start == values["start"],
            AdjudicatedError.end == values["end"],
            AdjudicatedError.category == values["category"],
        )
    )
    if same is not None:
        raise Conflict(
            f"this error is in the layer already (by {same.decided_by})", existing_id=same.id
        )
    row = AdjudicatedError(
        document_id=document.id,
        candidate=None,
        decision="accepted",
        origin="added",
        version=1,
        decided_by=who,
        decided_at=utcnow(),
        **values,
    )
    session.add(row)
    session.flush()
    _start_review(session, document, who)
    return row


def change_error(
    session: Session, document: Document, row_id: int, body: Any, who: str
) -> AdjudicatedError:
    """Edit (``edit``) or withdraw (``decision: "reject"``) a row of the layer by id (an
    added error, or a decision whose candidate workers' later marks regrouped)."""
    body = _object(body)
    row = session.scalar(
        select(AdjudicatedError).where(
            AdjudicatedError.id == row_id, AdjudicatedError.document_id == document.id
        )
    )
    if row is None:
        raise NotFound(f"no adjudicated error {row_id} in this document")
    unknown = set(body) - {"decision", "version", "edit"}
    if unknown:
        raise InvalidInput(f"unknown field {sorted(unknown)[0]!r}")
    if body.get("decision", "accept") not in DECISIONS:
        raise InvalidInput("decision must be 'accept' or 'reject'")
    expected = _version(body)
    if body.get("decision") == "reject":
        values: dict[str, Any] = {"decision": "rejected"}
    else:
        values = {**checked_values(session, document, body.get("edit")), "decision": "accepted"}
        values["origin"] = "edited" if row.candidate is not None else "added"
    if expected == 0:
        raise _conflict(row, f"error {row_id}")
    return _write(session, document, None, row_id, expected, values, who)


def _start_review(session: Session, document: Document, who: str) -> None:
    """The first decision puts the document in review (a concurrent first one already did)."""
    if session.get(DocumentReview, document.id) is None:
        try:
            with session.begin_nested():
                session.add(
                    DocumentReview(document_id=document.id, status="in_review", updated_by=who)
                )
        except IntegrityError:
            pass


def set_status(session: Session, document: Document, body: Any, who: str) -> DocumentReview:
    """``{"status": "in_review" | "done", "version": seen (0: unreviewed)}``."""
    body = _object(body)
    status = body.get("status")
    if status not in STATUSES[1:]:
        raise InvalidInput("status must be 'in_review' or 'done'")
    expected = _version(body)
    review = session.get(DocumentReview, document.id)
    if (review.version if review else 0) != expected:
        raise _conflict(review, "the review status")
    if review is None:
        review = DocumentReview(document_id=document.id, status=status, updated_by=who, version=1)
        try:
            with session.begin_nested():
                session.add(review)
        except IntegrityError:
            raise _conflict(session.get(DocumentReview, document.id), "the review status") from None
    else:
        changes.mark(session, document.study_id, "document review")  # a Core update
        changed = session.execute(
            update(DocumentReview)
            .where(DocumentReview.document_id == document.id, DocumentReview.version == expected)
            .values(status=status, updated_by=who, updated_at=utcnow(), version=expected + 1)
            .execution_options(synchronize_session=False)
        ).rowcount
        session.refresh(review)
        if not changed:
            raise _conflict(review, "the review status")
    session.flush()
    return review


def _check_min(min_workers: int) -> None:
    if min_workers < 1:
        raise InvalidInput("--min-workers must be at least 1")


def _check_posterior(min_posterior: float | None) -> None:
    if min_posterior is not None and not 0.0 <= min_posterior <= 1.0:
        raise InvalidInput("the minimum posterior must be a number from 0 to 1")


def _auto_candidates(
    session: Session, document: Document, min_workers: int, min_posterior: float | None = None
) -> list[Candidate]:
    """The document's undecided candidates that at least ``min_workers`` workers marked and,
    with ``min_posterior``, whose proposal overlaps a consensus unit of its category (a
    sentence whose stored MACE posterior is at least that, app/quality/figures.py): what
    auto-accept accepts (one rule for the count shown first and for the write)."""
    decided = set(
        session.scalars(
            select(AdjudicatedError.candidate).where(AdjudicatedError.document_id == document.id)
        )
    )
    found = [
        c
        for c in candidates_of(session, document)
        if c.votes >= min_workers and c.key not in decided
    ]
    if min_posterior is None:
        return found
    posteriors = consensus_posteriors(session, document, found)
    return [c for c in found if (p := posteriors[c.key]) is not None and p >= min_posterior]


def auto_accept_plan(
    session: Session,
    documents: list[Document],
    min_workers: int,
    min_posterior: float | None = None,
) -> list[tuple[Document, int]]:
    """(document, candidates auto-accept would accept there) for each document with some:
    what a researcher confirms before :func:`auto_accept` writes anything."""
    _check_min(min_workers)
    _check_posterior(min_posterior)
    plan = []
    for document in documents:
        found = len(_auto_candidates(session, document, min_workers, min_posterior))
        if found:
            plan.append((document, found))
    return plan


def auto_accept(
    session: Session,
    documents: list[Document],
    min_workers: int,
    who: str,
    min_posterior: float | None = None,
) -> int:
    """Accept every undecided candidate that at least ``min_workers`` workers marked (and,
    with ``min_posterior``, that the consensus holds: :func:`_auto_candidates`); each document
    with one goes in review."""
    _check_min(min_workers)
    _check_posterior(min_posterior)
    accepted = 0
    for document in documents:
        for candidate in _auto_candidates(session, document, min_workers, min_posterior):
            values = {**proposal_values(candidate), "decision": "accepted"}
            _write(session, document, candidate.key, None, 0, {**values, "origin": "auto"}, who)
            accepted += 1
    return accepted


def promote(session: Session, document: Document) -> int:
    """Make a reviewed (done) document gold: its gold errors become the accepted layer."""
    review = session.get(DocumentReview, document.id)
    if review is None or review.status != "done":
        raise Conflict(f"document {document.external_id} is not marked done: review it first")
    rows = session.scalars(
        select(AdjudicatedError)
        .where(AdjudicatedError.document_id == document.id, AdjudicatedError.decision == "accepted")
        .order_by(AdjudicatedError.segment, AdjudicatedError.start, AdjudicatedError.id)
    ).all()
    session.execute(delete(GoldError).where(GoldError.document_id == document.id))
    changes.mark(session, document.study_id, "gold promoted")  # a Core delete
    for row in rows:
        session.add(
            GoldError(
                document_id=document.id,
                **span_place(row),
                votes=1,
                antecedents=[row.paired_text] if row.paired_text is not None else [],
            )
        )
    document.is_gold = True
    session.flush()
    return len(rows)
