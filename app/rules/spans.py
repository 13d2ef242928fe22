"""A marked span and the text units it is measured in (tokens, sentences).

Tokens and sentences are found deterministically, without a model:

* tokens: ``\\w+(?:['’]\\w+)*`` (a word, with inner apostrophes: "don't", "Leonato's") or
  any single other non-space character (punctuation), see :data:`TOKEN_PATTERN`;
* sentences: the one splitter of :mod:`app.documents.segmenting`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from app.documents.segmenting import sentence_spans

TOKEN_PATTERN = re.compile(r"\w+(?:['\u2019]\w+)*|[^\w\s]")
TextKey = tuple[str, int]
"""A segment's key: (document id, segment index)."""


@dataclass(frozen=True)
class Span:
    """One marked stretch of a segment.

    ``source`` says whose span it is: a worker id for workers' annotations, ``"gold"`` for
    reference errors, a detector name for suggestions. ``start``/``end`` may be ``None``
    for gold spans known by their text only (see ``scoring.locate_spans``). ``ref``
    optionally carries a database id (annotation, gold error or suggestion) back to the
    caller; ``score`` a detector's confidence.
    """

    document: str
    segment: int
    start: int | None
    end: int | None
    category: str
    source: str = ""
    text: str = ""
    ref: int | None = None
    score: float | None = None

    @property
    def key(self) -> TextKey:
        return (self.document, self.segment)

    @property
    def located(self) -> bool:
        """Has offsets and covers at least one character."""
        return self.start is not None and self.end is not None and self.start < self.end


def span_to_dict(span: Span) -> dict[str, Any]:
    """A JSON-ready dict of a span (keys: the dataclass fields)."""
    return asdict(span)


@lru_cache(maxsize=8192)
def token_bounds(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each token of ``text`` (see :data:`TOKEN_PATTERN`)."""
    return tuple(m.span() for m in TOKEN_PATTERN.finditer(text))


def sentence_bounds(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each sentence of ``text`` (the splitter of :mod:`app.documents.segmenting`)."""
    return sentence_spans(text)


def sentence_ids(text: str, start: int, end: int) -> frozenset[int]:
    """Indices of the sentences of ``text`` that the range [start, end) overlaps."""
    return frozenset(i for i, (s, e) in enumerate(sentence_bounds(text)) if start < e and s < end)


def widen_to_sentences(text: str, start: int, end: int) -> tuple[int, int]:
    """The smallest range of whole sentences covering [start, end) (unchanged if none)."""
    touched = [(s, e) for s, e in sentence_bounds(text) if start < e and s < end]
    if not touched:
        return start, end
    return min(start, touched[0][0]), max(end, touched[-1][1])
