"""A study's life: open, paused, closed, archived, deleted; removing a document nobody worked on.

* ``open``: arriving workers get new work.
* ``paused`` and ``closed``: arriving workers get a page saying so and the platform's return
  (:mod:`app.crowd.returns`); nobody gets new work. A worker already inside a document keeps
  going: a proven return (same token, Prolific session, MTurk assignment) still opens their
  active assignment, and their saves and the submit are accepted as always, so no
  acknowledged annotation is ever lost. Paused means "back soon", closed "finished"; both
  reopen.
* ``archived``: closed, and left out of the studies list (a filter shows it); reopens too.
* delete: every row of the study goes, annotations included; the caller must repeat the slug.

A document may be removed only while nobody has submitted it and no annotation was ever
made in it (acknowledged work is never deleted); its unengaged holds go with it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, exists, func, select
from sqlalchemy.orm import Session

from app.documents.records import DocumentInput
from app.documents.studies import ImportResult, find_document, import_documents
from app.errors import Conflict, InvalidInput
from app.models import (
    Annotation,
    Assignment,
    Consent,
    DetectionJob,
    Document,
    Entity,
    EntityMention,
    GoldError,
    ImportJob,
    QuestionnaireAnswer,
    Segment,
    Study,
    StudyCollaborator,
    Suggestion,
    SuggestionEvent,
    changes,
)

STATUSES = ("open", "paused", "closed", "archived")
# action -> the status it leads to, and the statuses it may start from
ACTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pause": ("paused", ("open",)),
    "close": ("closed", ("open", "paused")),
    "reopen": ("open", ("paused", "closed", "archived")),
    "archive": ("archived", ("open", "paused", "closed")),
}


class StudyUnavailable(Conflict):
    """The study is paused, closed or archived: nobody gets new work."""

    def __init__(self, study: Study) -> None:
        super().__init__(f"this study is {study.status}: it hands out no new work now")


def accepts_new_work(study: Study) -> bool:
    """Whether arriving workers may be given new assignments."""
    return (study.status or "open") == "open"


def require_open(study: Study) -> None:
    """Raise :class:`StudyUnavailable` unless the study hands out new work."""
    if not accepts_new_work(study):
        raise StudyUnavailable(study)


def change_status(study: Study, action: str) -> str:
    """Apply ``pause``, ``close``, ``reopen`` or ``archive``; returns the new status.

    Raises :class:`InvalidInput` for an unknown action and :class:`Conflict` when the study
    is not in a status the action starts from (nothing changes).
    """
    if action not in ACTIONS:
        raise InvalidInput(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    target, sources = ACTIONS[action]
    current = study.status or "open"
    if current not in sources:
        raise Conflict(f"study {study.slug} is {current}: it cannot {action}")
    study.status = target
    return target


def delete_study(session: Session, study: Study, confirm: str) -> dict[str, int]:
    """Delete the study and everything in it once ``confirm`` repeats its slug.

    Rows are deleted explicitly, children first, so the result does not depend on the
    database enforcing ``ON DELETE CASCADE``. Returns how many documents and assignments went.
    """
    if (confirm or "").strip() != study.slug:
        raise InvalidInput(f"type the study's slug {study.slug!r} to confirm the deletion")
    documents = select(Document.id).where(Document.study_id == study.id)
    assignments = select(Assignment.id).where(Assignment.study_id == study.id)
    counts = {
        "documents": session.scalar(select(func.count()).select_from(documents.subquery())) or 0,
        "assignments": session.scalar(select(func.count()).select_from(assignments.subquery()))
        or 0,
    }
    for model, column, ids in (
        (QuestionnaireAnswer, QuestionnaireAnswer.assignment_id, assignments),
        (SuggestionEvent, SuggestionEvent.assignment_id, assignments),
        (Annotation, Annotation.assignment_id, assignments),
    ):
        session.execute(delete(model).where(column.in_(ids)))
    session.execute(delete(Assignment).where(Assignment.study_id == study.id))
    _delete_document_rows(session, documents)
    for model in (Consent, ImportJob, StudyCollaborator):
        session.execute(delete(model).where(model.study_id == study.id))
    session.execute(delete(Study).where(Study.id == study.id))
    session.expunge(study)
    return counts


def _delete_document_rows(session: Session, documents) -> None:
    suggestions = select(Suggestion.id).where(Suggestion.document_id.in_(documents))
    session.execute(delete(SuggestionEvent).where(SuggestionEvent.suggestion_id.in_(suggestions)))
    # mentions before the entities they point to
    for model in (EntityMention, Entity, Suggestion, GoldError, DetectionJob, Segment):
        session.execute(delete(model).where(model.document_id.in_(documents)))
    session.execute(delete(Document).where(Document.id.in_(documents)))


def removal_problem(session: Session, document: Document) -> str | None:
    """Why ``document`` cannot be removed (someone's work is in it), or None."""
    submitted = session.scalar(
        select(func.count()).where(
            Assignment.document_id == document.id, Assignment.status == "submitted"
        )
    )
    if submitted:
        return (
            f"document {document.external_id!r} has {submitted} submitted assignment"
            f"{'' if submitted == 1 else 's'}: submitted work is never deleted"
        )
    annotated = session.scalar(
        select(
            exists().where(
                Annotation.assignment_id == Assignment.id, Assignment.document_id == document.id
            )
        )
    )
    if annotated:
        return (
            f"document {document.external_id!r} has annotations a worker saved (in work not "
            "yet submitted): pause the study and let them finish, it cannot be removed"
        )
    return None


def remove_document(session: Session, study: Study, external_id: str) -> None:
    """Delete a document nobody has worked on (else :class:`Conflict`, nothing changed).

    Its unengaged or empty assignments go with it; their tokens then lead nowhere.
    """
    document = find_document(session, study, external_id)
    problem = removal_problem(session, document)
    if problem:
        raise Conflict(problem)
    ids = select(Document.id).where(Document.id == document.id)
    assignments = select(Assignment.id).where(Assignment.document_id == document.id)
    session.execute(delete(SuggestionEvent).where(SuggestionEvent.assignment_id.in_(assignments)))
    session.execute(
        delete(QuestionnaireAnswer).where(QuestionnaireAnswer.assignment_id.in_(assignments))
    )
    session.execute(delete(Assignment).where(Assignment.document_id == document.id))
    _delete_document_rows(session, ids)
    changes.mark(session, study.id, "document removed")  # Core deletes: the flush sees none
    session.expire_all()


def replace_documents(
    session: Session,
    study: Study,
    documents: list[DocumentInput],
    *,
    gold: bool = False,
    nlp: Any = None,
    entities: list[Any] | None = None,
) -> tuple[int, ImportResult]:
    """Import ``documents``; those whose ID the study has already replace that document,
    which must be removable (:func:`removal_problem`). All or nothing: the caller commits.
    Returns (how many were replaced, the import's result)."""
    ids = [d.external_id for d in documents]
    existing = session.scalars(
        select(Document).where(Document.study_id == study.id, Document.external_id.in_(ids))
    ).all()
    for document in existing:
        problem = removal_problem(session, document)
        if problem:
            raise Conflict(f"{problem}; nothing was replaced")
    for document in existing:
        remove_document(session, study, document.external_id)
    session.flush()
    return len(existing), import_documents(
        session, study, documents, gold=gold, nlp=nlp, entities=entities
    )
