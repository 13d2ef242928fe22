"""Who may reach a study: its owner, the researchers it is shared with, and admins.

Everyone else is told the study does not exist (the same 404 as for a missing slug), so
existence does not leak. Studies without an owner (made by the CLI without ``--owner``, or
before owners existed) are seen by admins only.
"""

from __future__ import annotations

from sqlalchemy import Select, exists, or_, select
from sqlalchemy.orm import Session

from app.documents.studies import get_study
from app.errors import InvalidInput, NotFound
from app.models import Researcher, Study, StudyCollaborator
from app.researchers.accounts import find_researcher


def is_admin(researcher: Researcher) -> bool:
    return researcher.role == "admin"


def _shared_with(researcher: Researcher):
    return exists().where(
        StudyCollaborator.study_id == Study.id, StudyCollaborator.researcher_id == researcher.id
    )


def visible_studies(researcher: Researcher) -> Select[tuple[Study]]:
    """The studies ``researcher`` may see, newest first."""
    query = select(Study).order_by(Study.created_at.desc(), Study.id.desc())
    if is_admin(researcher):
        return query
    return query.where(or_(Study.owner_id == researcher.id, _shared_with(researcher)))


def can_see(db: Session, researcher: Researcher, study: Study) -> bool:
    """Owner, collaborator or admin: may see, export and change the study."""
    if is_admin(researcher) or study.owner_id == researcher.id:
        return True
    return bool(
        db.scalar(
            select(StudyCollaborator.id).where(
                StudyCollaborator.study_id == study.id,
                StudyCollaborator.researcher_id == researcher.id,
            )
        )
    )


def can_share(researcher: Researcher, study: Study) -> bool:
    """Only the owner or an admin shares a study, takes a share back or hands it on."""
    return is_admin(researcher) or study.owner_id == researcher.id


def study_for(db: Session, researcher: Researcher, slug: str) -> Study:
    """The study ``slug`` if ``researcher`` may see it; NotFound otherwise, as if missing."""
    study = get_study(db, slug)
    if not can_see(db, researcher, study):
        raise NotFound(f"no study {slug!r}")
    return study


def collaborators(db: Session, study: Study) -> list[Researcher]:
    return list(
        db.scalars(
            select(Researcher)
            .join(StudyCollaborator, StudyCollaborator.researcher_id == Researcher.id)
            .where(StudyCollaborator.study_id == study.id)
            .order_by(Researcher.email)
        )
    )


def _collaborator(db: Session, study: Study, researcher: Researcher) -> StudyCollaborator | None:
    return db.scalar(
        select(StudyCollaborator).where(
            StudyCollaborator.study_id == study.id,
            StudyCollaborator.researcher_id == researcher.id,
        )
    )


def share(db: Session, study: Study, email: str) -> Researcher:
    """Let the researcher ``email`` see and change ``study`` (again: no change)."""
    researcher = find_researcher(db, email)
    if researcher.id == study.owner_id:
        raise InvalidInput(f"{researcher.email} owns study {study.slug!r} already")
    if _collaborator(db, study, researcher) is None:
        db.add(StudyCollaborator(study_id=study.id, researcher_id=researcher.id))
        db.flush()
    return researcher


def unshare(db: Session, study: Study, email: str) -> Researcher:
    """Take ``study`` back from the collaborator ``email``."""
    researcher = find_researcher(db, email)
    row = _collaborator(db, study, researcher)
    if row is None:
        raise InvalidInput(f"study {study.slug!r} is not shared with {researcher.email}")
    db.delete(row)
    db.flush()
    return researcher


def set_owner(db: Session, study: Study, email: str) -> Researcher:
    """Make ``email`` the study's owner (a former collaborator's share becomes ownership)."""
    researcher = find_researcher(db, email)
    study.owner_id = researcher.id
    row = _collaborator(db, study, researcher)
    if row is not None:
        db.delete(row)
    db.flush()
    return researcher
