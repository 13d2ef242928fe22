"""Storing found entities as Entity / EntityMention rows of a document."""

from __future__ import annotations

from typing import Any

from app.entities.results import DocumentEntities


def store_entities(session: Any, document_id: int, result: DocumentEntities) -> None:
    """Add ``result`` as Entity / EntityMention rows of document ``document_id`` (flushes)."""
    from app.models import Entity, EntityMention

    rows: dict[str, Entity] = {}
    for ent in result.entities:
        row = Entity(
            document_id=document_id,
            key=ent.key[:100],
            name=ent.name[:300],
            label=ent.label[:30],
            first_segment=ent.first_segment,
        )
        session.add(row)
        rows[ent.key] = row
    session.flush()
    session.add_all(
        EntityMention(
            document_id=document_id,
            entity_id=rows[m.entity].id,
            segment=m.segment,
            start=m.start,
            end=m.end,
            label=m.label[:30],
        )
        for m in result.mentions
        if m.entity in rows
    )
    session.flush()
