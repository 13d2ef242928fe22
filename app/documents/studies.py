"""Creating studies and storing imported documents (one transaction per file)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.documents.records import DocumentInput, GoldSpan
from app.documents.taxonomy import load_taxonomy, taxonomy_hash
from app.errors import InvalidInput, NotFound
from app.models import DetectionJob, Document, GoldError, Segment, Study

log = logging.getLogger(__name__)

SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
SUGGESTION_MODES = ("off", "shown", "hidden")


@dataclass
class ImportResult:
    documents: int
    segments: int
    gold_errors: int
    entities: int
    unlocated_gold: int
    detection_jobs: int
    ner_available: bool


def get_study(session: Session, slug: str) -> Study:
    if not SLUG_PATTERN.match(slug):  # no study has such a slug (and NUL breaks Postgres)
        raise NotFound(f"no study {slug!r}")
    study = session.scalar(select(Study).where(Study.slug == slug))
    if study is None:
        raise NotFound(f"no study {slug!r}")
    return study


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
    if not 1 <= annotators_per_doc <= 1000:
        raise InvalidInput("annotators per document must be between 1 and 1000")
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


def _locate(text: str, span: str) -> tuple[int, int] | None:
    """First occurrence of ``span`` in ``text`` (exact, then case-insensitive); None for an
    empty span (SNaC's release has one), which has no place."""
    if not span.strip():
        return None
    at = text.find(span)
    if at < 0:
        at = text.lower().find(span.lower())
    return (at, at + len(span)) if at >= 0 else None


def _gold_rows(document_id: int, segments: list[str], gold: list[GoldSpan]) -> list[GoldError]:
    rows = []
    for span in gold:
        where = _locate(segments[span.segment], span.text)
        rows.append(
            GoldError(
                document_id=document_id,
                segment=span.segment,
                start=where[0] if where else None,
                end=where[1] if where else None,
                text=span.text,
                category=span.category,
                votes=span.votes,
                antecedents=span.antecedents,
            )
        )
    return rows


def import_documents(
    session: Session,
    study: Study,
    documents: list[DocumentInput],
    *,
    gold: bool = False,
    nlp: Any = None,
    progress: bool = False,
    entities: list[Any] | None = None,
) -> ImportResult:
    """Store parsed documents (plus gold errors, entities and detection jobs) in ``session``.

    The caller commits; on any error nothing must be committed (one transaction per file).
    ``nlp`` is a loaded spaCy pipeline or None (no entity cues). ``entities`` are results
    of :func:`analyse_entities` computed beforehand, so that a web request need not hold
    the database's write lock while spaCy runs.
    """
    if entities is None:
        entities = analyse_entities(study, documents, nlp, progress=progress)
    existing = set(
        session.scalars(select(Document.external_id).where(Document.study_id == study.id))
    )
    clashes = [d.external_id for d in documents if d.external_id in existing]
    if clashes:
        raise InvalidInput(
            f"study {study.slug!r} already has document {clashes[0]!r}"
            + (f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else "")
        )
    if gold:
        known = {c["id"] for c in study.taxonomy["categories"]}
        for document in documents:
            for span in document.gold:
                if span.category not in known:
                    raise InvalidInput(
                        f"document {document.external_id!r}: gold error type {span.category!r} "
                        f"is not a category of study {study.slug!r}"
                    )
    position = session.scalar(
        select(func.coalesce(func.max(Document.position), -1)).where(Document.study_id == study.id)
    )
    stored: list[Document] = []
    gold_count = unlocated = segment_count = 0
    for offset, document in enumerate(documents, start=1):
        row = Document(
            study_id=study.id,
            external_id=document.external_id,
            source=document.source[:100],
            meta=document.meta,
            is_gold=gold,
            position=position + offset,
            segments=[Segment(index=i, text=t) for i, t in enumerate(document.segments)],
        )
        session.add(row)
        stored.append(row)
        segment_count += len(document.segments)
    session.flush()
    for row, document in zip(stored, documents, strict=True):
        if gold:
            gold_rows = _gold_rows(row.id, document.segments, document.gold)
            unlocated += sum(1 for g in gold_rows if g.start is None)
            gold_count += len(gold_rows)
            session.add_all(gold_rows)
    entity_count = _store_entities(session, stored, entities)
    jobs = 0
    if study.suggestions != "off":
        session.add_all(DetectionJob(document_id=row.id) for row in stored)
        jobs = len(stored)
    session.flush()
    return ImportResult(
        documents=len(stored),
        segments=segment_count,
        gold_errors=gold_count,
        entities=entity_count,
        unlocated_gold=unlocated,
        detection_jobs=jobs,
        ner_available=nlp is not None or bool(entities),
    )


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


def _store_entities(session: Session, rows: list[Document], results: list[Any]) -> int:
    """Store each document's entities and mentions."""
    if not results:
        return 0
    from app.entities import store_entities

    count = 0
    for row, result in zip(rows, results, strict=True):
        store_entities(session, row.id, result)
        count += len(result.entities)
    return count
