"""Where a worker replaying SNaC would mark an error's antecedent (the round-trip tests).

The release gives antecedents as text only, and Marginalia keeps gold antecedents so
(``GoldError.antecedents``; docs/METRICS.md). The tests that replay the release through the
API must pick a place for each, as a worker would: the nearest earlier occurrence
(``locate_antecedent``, the rule ``import --as-work`` uses), and failing that an occurrence
straddling a segment break, with segments read as the paired-span rule joins them
(``SEGMENT_JOIN``).
"""

from __future__ import annotations

import re

from app.documents.locating import SEGMENT_JOIN, locate_antecedent

__all__ = ["locate_across", "locate_antecedent"]


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
