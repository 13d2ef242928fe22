"""A document as read from a file, before it is stored: segments, metadata, gold spans,
entity clusters. Readers in ``app/formats`` produce these; ``studies.import_documents`` stores them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.documents.text import json_problem, normalise_newlines, text_problem
from app.errors import InvalidInput

MAX_ID_CHARS = 300
MAX_VOTES = 2**31 - 1  # gold_errors.votes is a 32-bit INTEGER


@dataclass
class GoldSpan:
    """A reference error from a SNaC-format file: text, category, votes, antecedent texts,
    and (start, end) when the file gives offsets (our own export does)."""

    segment: int
    text: str
    category: str
    votes: int
    antecedents: list[str] = field(default_factory=list)
    offsets: tuple[int, int] | None = None


@dataclass
class AnnotatorSpan:
    """Who marked what where: the worker, the segment, the character range in it, its text
    and its category. An exported mark (``app.formats.annotated.Mark``) and an imported one
    (:class:`ImportedSpan`) both start with these, in this order, as the interchange files
    carry them, so a reader and a writer agree on them by construction."""

    worker_id: str
    segment: int
    start: int
    end: int
    text: str
    category: str


@dataclass
class ImportedSpan(AnnotatorSpan):
    """One annotation found in an interchange file, by one annotator (or one vote)."""

    paired: tuple[int, int, int, str] | None = None  # (segment, start, end, text)
    comment: str = ""
    # the segment where the paired span ends when it runs across segment breaks (its end is
    # an offset there, its text the pieces joined: app/annotation/pairing.py); else None
    paired_end_segment: int | None = None
    # a multi-label mark's further categories (stored as one row each, app/models/work.py)
    also: tuple[str, ...] = ()
    attributes: dict[str, Any] | None = None


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
    # workers who submitted this document with no mark (stored as empty submitted work)
    empty_workers: list[str] = field(default_factory=list)
    # imported workers that stand for a vote rank, not an annotator (a SNaC file --as-work,
    # a Thresh edit's "votes"): worker k marks what at least k annotators marked
    vote_workers: set[str] = field(default_factory=set)
    # annotations the file held that this import does not store (no --gold/--checks/
    # --as-work), and those --as-work could not place in their segment
    dropped: int = 0
    unplaced: int = 0
    # edits of the file whose earlier (paired) span does not come before their span, as the
    # API's rule wants (app/annotation/pairing.py): left out of the work, counted here
    skipped_pairs: int = 0

    @property
    def source(self) -> str:
        """A coarse source label (e.g. ``book_175b`` from ``book_175b13``) for charts."""
        if self.meta.get("source"):
            return str(self.meta["source"])
        return self.external_id.rstrip("0123456789_-") or self.external_id


def checked(document: DocumentInput) -> DocumentInput:
    """``document`` checked like the readers check a file's documents, its segments' line
    breaks normalised (for callers that build documents themselves); InvalidInput if not."""
    doc = document.external_id
    problem = (
        "must be non-empty text"
        if not isinstance(doc, str) or not doc.strip()
        else f"is longer than {MAX_ID_CHARS} characters"
        if len(doc) > MAX_ID_CHARS
        else text_problem(doc, allow="")
    )
    if problem:
        raise InvalidInput(f"document id {str(doc)[:40]!r} {problem}")
    for index, text in enumerate(document.segments):
        problem = text_problem(text, allow="\t\n\r") if isinstance(text, str) else "not text"
        if problem:
            raise InvalidInput(f"document {doc!r}: segment {index}: {problem}")
    document.segments = [normalise_newlines(t) for t in document.segments]
    problem = json_problem(document.meta)
    if problem:
        raise InvalidInput(f"document {doc!r}: metadata {problem}")
    for span in document.gold:
        problem = gold_problem(span)
        if problem:
            raise InvalidInput(f"document {doc!r}: segment {span.segment}: {problem}")
    return document


def gold_problem(span: GoldSpan) -> str | None:
    """What makes a gold span unfit to store, or None."""
    if not 1 <= span.votes <= MAX_VOTES:
        return f'error {span.text[:40]!r} has "votes" outside 1..{MAX_VOTES}'
    for name, text in (("span", span.text), ("error_type", span.category)):
        problem = text_problem(text)
        if problem:
            return f'an error\'s "{name}" {problem}'
    for text in span.antecedents:
        problem = text_problem(text)
        if problem:
            return f'an error\'s "antecedants" {problem}'
    return None
