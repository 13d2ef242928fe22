"""Where a worker replaying SNaC would mark an error's antecedent (the round-trip tests).

The release gives antecedents as text only, and Marginalia keeps them so
(``GoldError.antecedents``; docs/METRICS.md): nothing computes with their position. The
tests that replay the release through the API must still pick a place for each, as a
worker would: the nearest earlier occurrence, by the one locate rule's occurrences
(``app/documents/locating.py``), and failing that an occurrence straddling a segment break,
with segments read as the paired-span rule joins them (``SEGMENT_JOIN``).
"""

from __future__ import annotations

import re

from app.documents.locating import SEGMENT_JOIN, Placement, at_word_boundaries, occurrences


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
    """In ``segment`` ending at or before ``span_start`` (the API's rule for a paired span),
    else the last occurrence in the nearest earlier segment holding it: ``(segment, place)``."""
    if span_start is not None:
        here = before(texts[segment], needle, span_start)
        if here is not None:
            return segment, here
    for index in range(segment - 1, -1, -1):
        there = before(texts[index], needle, len(texts[index]))
        if there is not None:
            return index, there
    return None


def locate_across(
    texts: list[str], segment: int, span_start: int | None, needle: str
) -> tuple[int, int, int, int] | None:
    """An earlier span that straddles segment breaks: ``(segment, start, end_segment, end)``
    of the last exact occurrence of ``needle`` in segments 0..``segment`` read as one text
    that crosses a break and ends before ``span_start``."""
    needle = needle.strip()
    if not needle:
        return None
    starts, at = [], 0
    for text in texts[: segment + 1]:
        starts.append(at)
        at += len(text) + len(SEGMENT_JOIN)
    whole = SEGMENT_JOIN.join(texts[: segment + 1])
    limit = starts[segment] + (span_start if span_start is not None else len(texts[segment]))

    def place(offset: int, inclusive_end: bool) -> tuple[int, int]:
        index = max(i for i, s in enumerate(starts) if s <= offset - (1 if inclusive_end else 0))
        return index, offset - starts[index]

    best = None
    for match in re.finditer(f"(?={re.escape(needle)})", whole):
        begin, end = match.start(), match.start() + len(needle)
        first, local_start = place(begin, False)
        last, local_end = place(end, True)
        if end <= limit and last > first:
            best = (first, local_start, last, local_end)
    return best
