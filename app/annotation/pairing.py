"""The earlier span of a paired annotation, within one segment or across segment boundaries.

A paired category's earlier span is ``{"segment", "start", "end", "text"}`` in one segment;
where the taxonomy sets ``pair_across_segments: true`` on the category it may also run on
into later segments, given as ``"end_segment"``: it starts at ``start`` in ``segment`` and
ends at ``end`` in ``end_segment``, and its ``text`` is the pieces joined by one space
(``SEGMENT_JOIN``, how a summary's segments read one after the other): the rest of
``segment`` from ``start``, any whole segments between, and ``end_segment`` up to ``end``.
SNaC's release has such antecedents (an InconE or RepE pointing at two sentences that
straddle a segment break). Either way the earlier span must start before the annotated
span and may not end in a later segment than it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.documents.locating import SEGMENT_JOIN, crossing_text
from app.errors import InvalidInput

PAIR_ORDER = (
    "the paired span must come before the annotated span: in the same segment "
    "it must end at or before the annotated span's start"
)
SpanCheck = Callable[[Any, list[str], str], tuple[int, int, int, str]]
__all__ = ["SEGMENT_JOIN", "crossing_text", "pair_comes_first", "paired_values"]


def paired_values(
    paired: Any,
    category: Mapping[str, Any],
    texts: list[str],
    segment: int,
    start: int,
    check_span: SpanCheck,
    ordered: bool = True,
) -> dict[str, Any]:
    """The ``paired_*`` columns of an annotation of ``category`` marked at (segment, start).
    ``ordered`` False (a ``relation`` category): the other span may sit anywhere, before,
    after, overlapping or the same, and may run across segment breaks."""
    if not isinstance(paired, dict):
        raise InvalidInput("paired must be an object")
    end_segment = paired.get("end_segment")
    if end_segment is None or end_segment == paired.get("segment"):
        inner = {k: v for k, v in paired.items() if k != "end_segment"}
        p_segment, p_start, p_end, p_text = check_span(inner, texts, "paired.")
        end_segment = p_segment
    else:
        if ordered and not category.get("pair_across_segments"):
            raise InvalidInput(
                f"category {category['id']!r} takes its earlier span within one segment "
                "(the taxonomy does not set pair_across_segments)"
            )
        p_segment, p_start, p_end, p_text, end_segment = _crossing(paired, texts)
    if ordered and (
        p_segment > segment or not pair_comes_first((end_segment, p_start, p_end), (segment, start))
    ):
        raise InvalidInput(PAIR_ORDER)
    return {
        "paired_segment": p_segment,
        "paired_start": p_start,
        "paired_end": p_end,
        "paired_text": p_text,
        "paired_end_segment": end_segment if end_segment != p_segment else None,
    }


def pair_comes_first(paired: tuple[int, int, int], span: tuple[int, int]) -> bool:
    """The one rule of order: the earlier span (its last segment, start, end) ends in an
    earlier segment than the annotated span (segment, start), or in the same one at or before
    its start. Imports (app/formats/thresh.py) apply it too."""
    (p_segment, _, p_end), (segment, start) = paired, span
    return p_segment < segment or (p_segment == segment and p_end <= start)


def _number(paired: dict[str, Any], key: str) -> int:
    value = paired.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"paired.{key} must be an integer")
    return value


def _crossing(paired: dict[str, Any], texts: list[str]) -> tuple[int, int, int, str, int]:
    segment, start = _number(paired, "segment"), _number(paired, "start")
    end_segment, end = _number(paired, "end_segment"), _number(paired, "end")
    text = paired.get("text")
    if not isinstance(text, str):
        raise InvalidInput("paired.text must be the span's text")
    if not 0 <= segment < end_segment < len(texts):
        raise InvalidInput(
            f"paired.segment {segment} .. end_segment {end_segment} must be increasing "
            f"segments of this document (0..{len(texts) - 1})"
        )
    if not 0 <= start < len(texts[segment]) or not 0 < end <= len(texts[end_segment]):
        raise InvalidInput(f"paired offsets {start}..{end} are out of range for their segments")
    expected = crossing_text(texts, segment, start, end_segment, end)
    if text != expected:
        raise InvalidInput(
            f"paired.text does not match segments {segment}..{end_segment} at "
            f"{start}..{end}: expected {expected[:80]!r}"
        )
    return segment, start, end, text, end_segment
