"""FALTE markup: ``<span class="ne ne-N">`` names stripped to plain text and marks.

A linear scanner (``str.find`` and anchored, non-backtracking patterns), not one regular
expression over the whole segment: crafted markup cannot make it backtrack (a
backtracking expression ran for tens of seconds on it).
"""

from __future__ import annotations

import html
import re

# A marked name: (start, end, FALTE cluster id) in a segment's plain text.
Cluster = tuple[int, int, str]

_SPAN_OPEN = re.compile(r"<span\b", re.IGNORECASE)
_SPAN_CLOSE = re.compile(r"</span\s*>", re.IGNORECASE)
_CLASS = re.compile(r"\bclass\s*=\s*[\"']", re.IGNORECASE)
_VALUE = re.compile(r"([^\"']*)[\"']")  # up to the next quote of either kind
_CLUSTER = re.compile(r"\bne-(\w+)", re.IGNORECASE)


def _plain(fragment: str) -> str:
    """``fragment`` without tags (``<`` to the next ``>``), HTML entities unescaped."""
    parts = []
    pos = 0
    while (lt := fragment.find("<", pos)) >= 0:
        gt = fragment.find(">", lt)
        if gt < 0:  # no tag closes after here, so none after any later "<" either
            break
        parts.append(fragment[pos:lt])
        pos = gt + 1
    parts.append(fragment[pos:])
    return html.unescape("".join(parts))


def _cluster_of(tag: str) -> str | None:
    """The cluster id of a ``<span ...>`` tag whose class has ``ne-N``, or None."""
    pos = 0
    while match := _CLASS.search(tag, pos):
        value_start = match.end()
        value = _VALUE.match(tag, value_start)
        if value is None:  # no quote closes it
            return None
        found = _CLUSTER.search(value.group(1))
        if found:
            return found.group(1)
        pos = value_start
    return None


def _entity_spans(segment: str) -> list[tuple[int, int, int, int, str]]:
    """(open tag start, inner start, inner end, close tag end, cluster) of each marked name,
    leftmost first, never overlapping; one pass over the text."""
    spans = []
    pos = 0
    close: re.Match[str] | None = None
    while opening := _SPAN_OPEN.search(segment, pos):
        start = opening.start()
        gt = segment.find(">", start)
        if gt < 0:
            break
        cluster = _cluster_of(segment[start : gt + 1])
        if cluster is None:
            # Every later "<span" before this ">" has a suffix of this tag: none matches.
            pos = gt + 1
            continue
        if close is None or close.start() <= gt:
            close = _SPAN_CLOSE.search(segment, gt + 1)
            if close is None:  # no closing tag anywhere after: no later name can close
                break
        spans.append((start, gt + 1, close.start(), close.end(), cluster))
        pos = close.end()
    return spans


def strip_entity_markup(html_segment: str) -> tuple[str, list[Cluster]]:
    """Strip HTML from a FALTE segment; return its plain text and its marked names.

    Each ``<span class="ne ne-N">Name</span>`` becomes ``(start, end, "N")`` in the plain text,
    trimmed of the whitespace FALTE leaves inside spans. Other tags are dropped, entities
    unescaped, and the whole text is stripped of leading and trailing whitespace.
    """
    parts: list[str] = []
    marks: list[Cluster] = []
    length = 0
    pos = 0
    for open_start, inner_start, inner_end, close_end, cluster in _entity_spans(html_segment):
        before = _plain(html_segment[pos:open_start])
        parts.append(before)
        length += len(before)
        inner = _plain(html_segment[inner_start:inner_end])
        stripped = inner.strip()
        if stripped:
            start = length + (len(inner) - len(inner.lstrip()))
            marks.append((start, start + len(stripped), cluster))
        parts.append(inner)
        length += len(inner)
        pos = close_end
    parts.append(_plain(html_segment[pos:]))
    text = "".join(parts)
    lead = len(text) - len(text.lstrip())
    text = text.strip()
    marks = [
        (s - lead, e - lead, c) for s, e, c in marks if s - lead >= 0 and e - lead <= len(text)
    ]
    return text, marks
