"""The import's entity clusters as the detector's plain data (``model_server.clusters``).

``stored_clusters`` reads a stored document's Entity / EntityMention rows (what the worker
passes to the detector); ``find_clusters`` runs the import's own ``app.entities`` over
documents given as segment texts (what ``marginalia detector train`` / ``evaluate`` use on
SNaC files), so training, evaluation and production see the same clusters.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Entity, EntityMention
from model_server.clusters import PERSON, Cluster, Mention


def stored_clusters(session: Session, document_id: int) -> list[Cluster] | None:
    """The document's person clusters, mentions in reading order; None when it has no
    person entity (imported without NER, or a study that tracks other labels), so the
    detector uses the heads that do not read clusters."""
    entities = session.scalars(
        select(Entity).where(Entity.document_id == document_id, Entity.label == PERSON)
    ).all()
    if not entities:
        return None
    mentions: dict[int, list[Mention]] = {e.id: [] for e in entities}
    rows = session.scalars(
        select(EntityMention)
        .where(EntityMention.document_id == document_id)
        .order_by(EntityMention.segment, EntityMention.start)
    )
    for m in rows:
        if m.entity_id in mentions:
            mentions[m.entity_id].append(Mention(m.segment, m.start, m.end))
    return [Cluster(PERSON, tuple(mentions[e.id])) for e in entities if mentions[e.id]]


@lru_cache(maxsize=1)
def _nlp() -> Any:
    from app.entities import load_pipeline

    return load_pipeline(None)


def find_clusters(documents: list[list[str]]) -> list[list[Cluster]]:
    """Each document's person clusters as the import computes them (``app.entities``)."""
    from app.entities import find_entities

    found = find_entities(documents, _nlp(), progress=False)
    out = []
    for result in found:
        by_entity: dict[str, list[Mention]] = {}
        for m in result.mentions:
            by_entity.setdefault(m.entity, []).append(Mention(m.segment, m.start, m.end))
        out.append(
            [
                Cluster(e.label, tuple(by_entity[e.key]))
                for e in result.entities
                if e.key in by_entity
            ]
        )
    return out
