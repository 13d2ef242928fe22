"""Plain paragraphs: ``{"doc-id": ["segment", ...]}``."""

from __future__ import annotations

from typing import Any

from app.formats.records import DocumentInput, Problem, document_id, segment_list

NAME = "paragraphs"


def looks_like(data: Any) -> bool:
    """Whether parsed JSON has this format's shape (for ``--format auto``)."""
    first = next(iter(data.values()), None) if isinstance(data, dict) else None
    return isinstance(first, list)


def parse(data: Any, problem: Problem) -> list[DocumentInput]:
    if not isinstance(data, dict):
        raise problem('paragraphs format must be {"doc-id": ["segment", ...]}')
    return [
        DocumentInput(doc, segment_list(body, problem, doc))
        for doc, body in ((document_id(k, problem), v) for k, v in data.items())
    ]
