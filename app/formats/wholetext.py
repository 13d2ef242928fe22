"""Whole-text formats (Thresh, Label Studio, brat) ↔ segments, offsets converted both ways.

A whole text is cut into segments at blank lines (paragraphs) or, with
``--sentences-per-segment N``, into groups of N sentences of the one splitter
(:mod:`app.documents.segmenting`). Each segment is an exact slice of the text; the
whitespace between them is kept in the document's ``meta["whole_text"]["gaps"]`` so that an
export gives back the very text that was imported, and the offsets with it. Documents that
came in segmented (snac, paragraphs, ...) are joined with a blank line between segments.
Offsets are code points, end exclusive, on both sides.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

from app.documents.locating import crossing_text
from app.documents.segmenting import sentence_spans
from app.formats.records import MAX_WHOLE_TEXT_CHARS, Problem, segment_text

PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
JOIN = "\n\n"
META_KEY = "whole_text"


@dataclass(frozen=True)
class Layout:
    """Where each segment sits in the whole text: ``text[starts[i]:ends[i]] == segments[i]``."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    @property
    def segments(self) -> list[str]:
        return [self.text[s:e] for s, e in zip(self.starts, self.ends, strict=True)]

    @property
    def gaps(self) -> list[str]:
        """The text before, between and after the segments (len(segments) + 1 strings)."""
        bounds = [0, *(x for pair in zip(self.starts, self.ends, strict=True) for x in pair)]
        bounds.append(len(self.text))
        return [self.text[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]

    def meta(self) -> dict[str, Any]:
        return {META_KEY: {"gaps": self.gaps}}

    def to_segments(self, start: int, end: int) -> tuple[int, int, int, int] | None:
        """(segment, start, end segment, end) of a whole-text range that may run across
        segment breaks (an earlier span of ``pair_across_segments``); trimmed to the
        segments (a range reaching into the whitespace around one is trimmed to it); None outside the text or within a gap."""
        if not 0 <= start < end <= len(self.text):
            return None
        first = bisect_right(self.starts, start) - 1
        if first < 0 or start >= self.ends[first]:
            first += 1  # starts in a gap: the next segment
        last = bisect_left(self.starts, end) - 1  # the last segment starting before end
        if first >= len(self.starts) or last < first:
            return None
        if end > self.ends[last] and self.text[self.ends[last] : end].strip():
            return None
        begin = max(start, self.starts[first]) - self.starts[first]
        return first, begin, last, min(end, self.ends[last]) - self.starts[last]

    def to_whole(self, segment: int, offset: int) -> int:
        return self.starts[segment] + offset


CROSSING = (
    "crosses a segment boundary, which only the earlier span of a pair may "
    "(import with fewer segments)"
)
Place = tuple[int, int, int, str, int]
"""Where a whole-text range sits: (segment, start, end, text, end segment)."""


def place(layout: Layout, start: int, end: int) -> Place | None:
    """A whole-text range in segment terms (:meth:`Layout.to_segments`); a range across
    segment breaks ends at ``end`` in the end segment and its text is the pieces joined as
    a paired span's are (:func:`app.documents.locating.crossing_text`). None outside."""
    located = layout.to_segments(start, end)
    if located is None:
        return None
    segment, begin, to, finish = located
    segments = layout.segments
    if to == segment:
        return segment, begin, finish, segments[segment][begin:finish], to
    return segment, begin, finish, crossing_text(segments, segment, begin, to, finish), to


def split(
    text: str, problem: Problem, doc: str, sentences_per_segment: int | None = None
) -> tuple[Layout, Any]:
    """Cut a whole text into segments; returns the layout and an offset mapper.

    The mapper turns an offset of the text as given into one of the stored text (CR LF and
    lone CR become LF, as everywhere else). A text over ``MAX_WHOLE_TEXT_CHARS`` is refused
    before anything else.
    """
    if len(text) > MAX_WHOLE_TEXT_CHARS:  # before any splitting: its cost grows with the text
        raise problem(f"its text is longer than {MAX_WHOLE_TEXT_CHARS} characters", doc)
    normal, mapper = _normalised(text)
    if sentences_per_segment:
        sentences = sentence_spans(normal)
        ranges = [
            (sentences[i][0], sentences[min(i + sentences_per_segment, len(sentences)) - 1][1])
            for i in range(0, len(sentences), sentences_per_segment)
        ]
    else:
        ranges = []
        at = 0
        for match in [*PARAGRAPH_BREAK.finditer(normal), None]:
            cut = match.start() if match else len(normal)
            chunk = normal[at:cut]
            if chunk.strip():
                lead = len(chunk) - len(chunk.lstrip())
                ranges.append((at + lead, at + len(chunk.rstrip())))
            at = match.end() if match else at
    if not ranges:
        raise problem("has no text", doc)
    layout = Layout(normal, tuple(s for s, _ in ranges), tuple(e for _, e in ranges))
    for index, segment in enumerate(layout.segments):
        segment_text(segment, problem, doc, index)
    return layout, mapper


def _normalised(text: str) -> tuple[str, Any]:
    removed = [m.start() for m in re.finditer(r"\r(?=\n)", text)]
    normal = text.replace("\r\n", "\n").replace("\r", "\n")

    def mapper(offset: int) -> int:
        return offset - bisect_left(removed, offset)

    return normal, mapper


def layout_of(segments: list[str], meta: dict[str, Any] | None) -> Layout:
    """The whole text of stored segments: the imported text when its gaps were kept."""
    gaps = ((meta or {}).get(META_KEY) or {}).get("gaps")
    if not (
        isinstance(gaps, list)
        and len(gaps) == len(segments) + 1
        and all(isinstance(g, str) and not g.strip() for g in gaps)
    ):
        gaps = ["", *([JOIN] * (len(segments) - 1)), ""]
    parts: list[str] = []
    starts, ends = [], []
    at = 0
    for gap, segment in zip(gaps, segments, strict=False):
        at += len(gap)
        starts.append(at)
        at += len(segment)
        ends.append(at)
        parts += [gap, segment]
    parts.append(gaps[-1])
    return Layout("".join(parts), tuple(starts), tuple(ends))


def layout_from_ranges(text: str, ranges: Any) -> Layout | None:
    """The layout a file states (``[[start, end], ...]`` per segment), if it is sound:
    ordered, non-empty segments with only whitespace between them; else None."""
    if not isinstance(ranges, list) or not ranges or "\r" in text:
        return None
    at = 0
    for pair in ranges:
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in pair)
        ):
            return None
        start, end = pair
        if not at <= start < end <= len(text) or text[at:start].strip():
            return None
        if not text[start:end].strip():
            return None
        at = end
    if text[at:].strip():
        return None
    return Layout(text, tuple(r[0] for r in ranges), tuple(r[1] for r in ranges))


def segment_ranges(layout: Layout) -> list[list[int]]:
    """``[[start, end], ...]`` of each segment, written by exports for an exact re-import."""
    return [[s, e] for s, e in zip(layout.starts, layout.ends, strict=True)]
