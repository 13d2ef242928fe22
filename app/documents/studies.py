"""Creating studies and importing documents into them (one transaction per file)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import begin_write
from app.documents.records import DocumentInput, checked
from app.documents.storing import ImportResult, prepare_import, store_prepared
from app.documents.taxonomy import load_taxonomy, taxonomy_hash
from app.documents.text import storable, text_problem
from app.errors import InvalidInput, NotFound
from app.models import Document, Segment, Study

log = logging.getLogger(__name__)

SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
MAX_ANNOTATORS = 1000  # workers per document (and the votes a rule can ask for)
SUGGESTION_MODES = ("off", "shown", "hidden")
MAX_TITLE_CHARS = 300  # studies.title


def get_study(session: Session, slug: str) -> Study:
    if not SLUG_PATTERN.match(slug):  # no study has such a slug (and NUL breaks Postgres)
        raise NotFound(f"no study {slug!r}")
    study = session.scalar(select(Study).where(Study.slug == slug))
    if study is None:
        raise NotFound(f"no study {slug!r}")
    return study


def segments_per_document(session: Session, study: Study) -> dict[int, int]:
    """Each of the study's documents' number of segments, by document id (the report's
    progress and time per segment, the assignment rows' export)."""
    return dict(
        session.execute(
            select(Segment.document_id, func.count())
            .join(Document, Document.id == Segment.document_id)
            .where(Document.study_id == study.id)
            .group_by(Segment.document_id)
        ).all()
    )


def find_document(session: Session, study: Study, external_id: Any) -> Document:
    """The study's document with this external ID (as the API, the pages and the CLI name
    it); InvalidInput for something that is not an ID, NotFound for none."""
    if not isinstance(external_id, str | int) or isinstance(external_id, bool):
        raise InvalidInput("document must be the document's id as text")
    external_id = str(external_id)
    missing = NotFound(f"study {study.slug!r} has no document {external_id[:300]!r}")
    if not storable(external_id):
        raise missing
    document = session.scalar(
        select(Document).where(Document.study_id == study.id, Document.external_id == external_id)
    )
    if document is None:
        raise missing
    return document


def suggestions_warning(taxonomy: dict[str, Any], suggestions: str) -> str | None:
    """Why a study that wants suggestions will get none, or None: a detector label reaches a
    category only through that category's ``detector_label``."""
    if suggestions == "off":
        return None
    if any((c.get("detector_label") or "").strip() for c in taxonomy.get("categories", [])):
        return None
    effect = (
        "workers will see no hints"
        if suggestions == "shown"
        else "recall against suggestions will have nothing to count"
    )
    return (
        f"no category of taxonomy {taxonomy.get('name', '')!r} has a detector_label, so the "
        f"detector's suggestions match none of them and {effect} (add detector_label: "
        "character, event, scene or inconsistent to the categories it should suggest)"
    )


def create_study(
    session: Session,
    slug: str,
    taxonomy_path: str | Path | None = None,
    *,
    taxonomy: dict[str, Any] | None = None,
    annotators_per_doc: int = 3,
    suggestions: str = "hidden",
    title: str | None = None,
    entity_labels: list[str] | None = None,
) -> tuple[Study, bool]:
    """Create a study with a snapshot of its taxonomy; the same arguments again are a no-op.

    Returns ``(study, created)``. A study that exists with other settings is an error, never
    silently changed: old annotations keep the meaning they were made under.
    """
    if not SLUG_PATTERN.match(slug):
        raise InvalidInput(f"study slug {slug!r} must be lower-case letters, digits and dashes")
    if suggestions not in SUGGESTION_MODES:
        raise InvalidInput(f"suggestions must be one of {', '.join(SUGGESTION_MODES)}")
    if not 1 <= annotators_per_doc <= MAX_ANNOTATORS:
        raise InvalidInput(f"annotators per document must be between 1 and {MAX_ANNOTATORS}")
    if title is not None:
        if len(title) > MAX_TITLE_CHARS:
            raise InvalidInput(f"the title is longer than {MAX_TITLE_CHARS} characters")
        problem = text_problem(title, allow="")
        if problem:
            raise InvalidInput(f"the title {problem}")
    if taxonomy is None:
        if taxonomy_path is None:
            raise InvalidInput("a study needs a taxonomy")
        taxonomy = load_taxonomy(taxonomy_path)
    digest = taxonomy_hash(taxonomy)
    labels = entity_labels or ["PERSON"]
    existing = session.scalar(select(Study).where(Study.slug == slug))
    if existing is not None:
        same = (
            existing.taxonomy_hash == digest
            and existing.annotators_per_doc == annotators_per_doc
            and existing.suggestions == suggestions
        )
        if not same:
            raise InvalidInput(
                f"study {slug!r} already exists with a different taxonomy or settings; "
                "choose another slug"
            )
        return existing, False
    study = Study(
        slug=slug,
        title=title or taxonomy["name"],
        taxonomy_name=taxonomy["name"],
        taxonomy=taxonomy,
        taxonomy_hash=digest,
        annotators_per_doc=annotators_per_doc,
        suggestions=suggestions,
        entity_labels=labels,
        settings={},
    )
    session.add(study)
    session.flush()
    return study, True


def import_documents(
    session: Session,
    study: Study,
    documents: list[DocumentInput],
    *,
    gold: bool = False,
    checks: bool = False,
    practice: bool = False,
    nlp: Any = None,
    progress: bool = False,
    entities: list[Any] | None = None,
) -> ImportResult:
    """Store parsed documents (plus gold errors, entities and detection jobs) in ``session``.

    The caller commits; on any error nothing must be committed (one transaction per file).
    ``study`` may come loaded from another, closed session: on SQLite the write transaction
    must start here with the write lock (``begin_write``); a ``session`` that has read
    already would fail with "database is locked" once a concurrent write got in between.
    ``checks``: the file's errors are attention checks, ``practice``: the documents are
    practice documents (:func:`prepare_import`).
    ``nlp`` is a loaded spaCy pipeline or None (no entity cues). ``entities`` are results
    of :func:`analyse_entities` computed beforehand. Rows are built first and inserted in
    bulk (:mod:`app.documents.storing`), so the write lock is held only for the inserts.
    """
    documents = [checked(document) for document in documents]
    if entities is None:
        entities = analyse_entities(study, documents, nlp, progress=progress)
    prepared = prepare_import(
        study, documents, gold=gold, entities=entities, checks=checks, practice=practice
    )
    begin_write(session)
    result = store_prepared(session, study, prepared)
    result.ner_available = nlp is not None or bool(entities)
    return result


def analyse_entities(
    study: Study, documents: list[DocumentInput], nlp: Any, *, progress: bool = False
) -> list[Any]:
    """Entity mentions of each document (spaCy NER, or FALTE's given clusters); no DB."""
    given = [d.entity_clusters for d in documents]
    if nlp is None and not any(given):
        return []
    from app.entities import find_entities

    return find_entities(
        [d.segments for d in documents],
        nlp,
        labels=tuple(study.entity_labels or ["PERSON"]),
        progress=progress,
        given_clusters=given,
    )
