"""FALTE's document format: ``{"doc-id": {"sentences": [...], ...meta}}``, sentences may carry
FALTE's entity markup (``<span class='ne-…'>``), which becomes entity clusters."""

from __future__ import annotations

from typing import Any

from app.formats.records import (
    DocumentInput,
    Problem,
    document_meta,
    keyed_documents,
    segment_list,
    segment_text,
)

NAME = "falte"


def looks_like(data: Any) -> bool:
    """Whether parsed JSON has this format's shape (for ``--format auto``)."""
    first = next(iter(data.values()), None) if isinstance(data, dict) else None
    return isinstance(first, dict) and "sentences" in first


def parse(data: Any, problem: Problem) -> list[DocumentInput]:
    from app.entities import strip_entity_markup

    documents = []
    shape = 'falte format must be {"doc-id": {"sentences": [...]}}'
    for doc, body in keyed_documents(data, problem, shape):
        if not isinstance(body, dict) or "sentences" not in body:
            raise problem('must be an object with "sentences"', doc)
        raw_segments = segment_list(body["sentences"], problem, doc)
        stripped = [strip_entity_markup(s) for s in raw_segments]
        segments = [segment_text(text, problem, doc, i) for i, (text, _) in enumerate(stripped)]
        clusters = [marks for _, marks in stripped]
        meta = document_meta({k: v for k, v in body.items() if k != "sentences"}, problem, doc)
        documents.append(
            DocumentInput(doc, segments, meta, entity_clusters=clusters if any(clusters) else None)
        )
    return documents
