"""A document as read from a file, before it is stored: segments, metadata, gold spans,
entity clusters. Readers in ``app/formats`` produce these; ``studies.import_documents`` stores them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GoldSpan:
    """A reference error from a file: text, category, votes, antecedent texts (and offsets)."""

    segment: int
    text: str
    category: str
    votes: int
    antecedents: list[str] = field(default_factory=list)
    start: int | None = None  # known offsets (offset formats); None: located by text
    end: int | None = None


@dataclass
class ImportedSpan:
    """One annotation found in an interchange file, by one annotator (or one vote)."""

    worker_id: str
    segment: int
    start: int
    end: int
    text: str
    category: str
    paired: tuple[int, int, int, str] | None = None  # (segment, start, end, text)
    comment: str = ""


@dataclass
class ImportedSuggestion:
    """A pre-annotation found in a file (Label Studio ``predictions``): a detector hint."""

    segment: int
    start: int
    end: int
    text: str
    category: str
    score: float
    detector: str


@dataclass
class DocumentInput:
    """One parsed document, ready to store."""

    external_id: str
    segments: list[str]
    meta: dict[str, Any] = field(default_factory=dict)
    gold: list[GoldSpan] = field(default_factory=list)
    entity_clusters: list[list[tuple[int, int, str]]] | None = None
    work: list[ImportedSpan] = field(default_factory=list)
    suggestions: list[ImportedSuggestion] = field(default_factory=list)

    @property
    def source(self) -> str:
        """A coarse source label (e.g. ``book_175b`` from ``book_175b13``) for charts."""
        if self.meta.get("source"):
            return str(self.meta["source"])
        return self.external_id.rstrip("0123456789_-") or self.external_id
