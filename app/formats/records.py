"""What every document reader shares: the checks of untrusted input and their messages.

Parsing is separate from storing: readers touch no database, and every problem is reported
as one :class:`InvalidInput` message naming the file, document and segment.
"""

from __future__ import annotations

from typing import Any

from app.documents.records import DocumentInput, GoldSpan, ImportedSpan, ImportedSuggestion
from app.documents.text import normalise_newlines, storable
from app.errors import InvalidInput

MAX_SEGMENT_CHARS = 20_000
MAX_SEGMENTS = 2_000
MAX_ID_CHARS = 300


class Problem:
    """Builds messages of the form ``FILE: document "id": segment 3: what is wrong``."""

    def __init__(self, source: str):
        self.source = source

    def __call__(self, message: str, doc: str | None = None, segment: Any = None) -> InvalidInput:
        where = [self.source]
        if doc is not None:
            where.append(f"document {doc!r}")
        if segment is not None:
            where.append(f"segment {segment}")
        return InvalidInput(": ".join(where + [message]))


def segment_text(value: Any, problem: Problem, doc: str, index: Any) -> str:
    if not isinstance(value, str):
        raise problem(f"must be text, not {type(value).__name__}", doc, index)
    if not value.strip():
        raise problem("is empty", doc, index)
    if len(value) > MAX_SEGMENT_CHARS:
        raise problem(f"is longer than {MAX_SEGMENT_CHARS} characters", doc, index)
    if "\x00" in value:
        raise problem("contains a NUL character", doc, index)
    if not storable(value):
        raise problem("contains an unpaired surrogate (\\ud800-\\udfff escape)", doc, index)
    return normalise_newlines(value)


def document_id(value: Any, problem: Problem) -> str:
    doc = str(value).strip() if isinstance(value, str | int) else ""
    if not doc:
        raise problem(f"document id {value!r} must be non-empty text")
    if len(doc) > MAX_ID_CHARS:
        raise problem(f"document id is longer than {MAX_ID_CHARS} characters", doc[:40])
    if not storable(doc):
        raise problem(f"document id {doc!r} contains a NUL character or unpaired surrogate")
    return doc


def segment_list(values: Any, problem: Problem, doc: str) -> list[str]:
    if not isinstance(values, list) or not values:
        raise problem("must have a non-empty list of segments", doc)
    if len(values) > MAX_SEGMENTS:
        raise problem(f"has more than {MAX_SEGMENTS} segments", doc)
    return [segment_text(v, problem, doc, i) for i, v in enumerate(values)]


__all__ = [
    "DocumentInput",
    "GoldSpan",
    "ImportedSpan",
    "ImportedSuggestion",
    "Problem",
    "document_id",
    "segment_list",
    "segment_text",
]
