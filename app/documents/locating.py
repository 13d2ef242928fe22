"""Placing a span known only by its text (SNaC gold) at offsets in a segment.

The one locate rule, shared by import (``studies.import_documents``) and scoring
(``app.rules.scoring.locate_spans``):

* an **occurrence** of a needle is an exact match in the text, or failing any, a
  case-insensitive one in which any run of whitespace in the needle matches any run of
  whitespace in the text;
* an occurrence is **at word boundaries** when it neither starts nor ends inside a word
  (a word character, ``\\w``, on both sides of its start or of its end): "he" inside "She"
  or "the" is not; occurrences at word boundaries are always preferred, a mid-word one is
  used only when there is no other (and is reported as ``mid_word``);
* **context** picks among several: occurrences already ``taken`` (an earlier entry of the
  same span text and category in the segment) are skipped, so repeated entries land at
  successive occurrences; of the rest, the first wins.
* the outcome says how sure it is: ``unique`` (one candidate), ``ambiguous`` (several
  candidates, context did not decide: the first free one was taken), ``mid_word`` or
  ``not_found`` (no offsets).

``crossing_text`` is the text of a span that runs across segment breaks, the segments read
one after the other joined by ``SEGMENT_JOIN`` (paired spans, the interchange formats).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Placement:
    """Where a needle was placed (``start``/``end`` None when ``outcome`` is not_found)."""

    start: int | None
    end: int | None
    outcome: str

    @property
    def found(self) -> bool:
        return self.start is not None


NOT_FOUND = Placement(None, None, "not_found")


def occurrences(text: str, needle: str) -> list[tuple[int, int]]:
    """Every (start, end) of ``needle`` in ``text`` (exact; else case/space-insensitive)."""
    needle = needle.strip()
    if not needle:
        return []
    exact = [
        (m.start(), m.start() + len(needle)) for m in re.finditer(f"(?={re.escape(needle)})", text)
    ]
    if exact:
        return exact
    pattern = re.compile(r"\s+".join(re.escape(part) for part in needle.split()), re.IGNORECASE)
    found, at = [], 0
    while (match := pattern.search(text, at)) is not None:
        found.append(match.span())
        at = match.start() + 1
    return found


def at_word_boundaries(text: str, start: int, end: int) -> bool:
    """Whether [start, end) neither starts nor ends inside a word of ``text``."""

    def inside(i: int) -> bool:
        return 0 < i < len(text) and bool(_WORD.match(text[i - 1])) and bool(_WORD.match(text[i]))

    return not inside(start) and not inside(end)


def locate(
    text: str,
    needle: str,
    *,
    taken: Collection[tuple[int, int]] = (),
) -> Placement:
    """Place ``needle`` in ``text`` by the rule of this module's docstring."""
    every = [o for o in occurrences(text, needle) if o not in taken]
    if not every:
        return NOT_FOUND
    whole = [o for o in every if at_word_boundaries(text, *o)]
    if not whole:
        start, end = every[0]
        return Placement(start, end, "mid_word")
    start, end = whole[0]
    return Placement(start, end, "unique" if len(whole) == 1 else "ambiguous")


def before(text: str, needle: str, limit: int) -> Placement | None:
    """The last occurrence of ``needle`` in ``text`` ending at or before ``limit``, at word
    boundaries when one is; None when none ends there."""
    every = [o for o in occurrences(text, needle) if o[1] <= limit]
    whole = [o for o in every if at_word_boundaries(text, *o)]
    if not whole:
        return Placement(*every[-1], "mid_word") if every else None
    return Placement(*whole[-1], "unique" if len(whole) == 1 else "ambiguous")


def locate_antecedent(
    texts: list[str], segment: int, span_start: int | None, needle: str
) -> tuple[int, Placement] | None:
    """Where an antecedent given as text (SNaC's ``antecedants``) is marked: in ``segment``
    ending at or before ``span_start`` (the API's rule for a paired span), else the last
    occurrence in the nearest earlier segment holding it: ``(segment, place)``. Used when a
    SNaC file is imported as work (``--as-work``); gold antecedents stay text."""
    if span_start is not None:
        here = before(texts[segment], needle, span_start)
        if here is not None:
            return segment, here
    for index in range(segment - 1, -1, -1):
        there = before(texts[index], needle, len(texts[index]))
        if there is not None:
            return index, there
    return None


SEGMENT_JOIN = " "
"""How consecutive segments read one after the other (``app/annotation/pairing.py``)."""


def crossing_text(texts: list[str], segment: int, start: int, end_segment: int, end: int) -> str:
    """The text of a span from ``start`` in ``segment`` to ``end`` in ``end_segment``."""
    pieces = [texts[segment][start:], *texts[segment + 1 : end_segment], texts[end_segment][:end]]
    return SEGMENT_JOIN.join(pieces)
