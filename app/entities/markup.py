"""FALTE markup: ``<span class="ne ne-N">`` names stripped to plain text and marks."""

from __future__ import annotations

import html
import re

# A marked name: (start, end, FALTE cluster id) in a segment's plain text.
Cluster = tuple[int, int, str]

_NE_SPAN = re.compile(
    r"""<span\b[^>]*?\bclass\s*=\s*["'][^"']*?\bne-(\w+)[^"']*["'][^>]*>(.*?)</span\s*>""",
    re.IGNORECASE | re.DOTALL,
)
_TAG = re.compile(r"<[^>]*>")


def _plain(fragment: str) -> str:
    return html.unescape(_TAG.sub("", fragment))


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
    for match in _NE_SPAN.finditer(html_segment):
        before = _plain(html_segment[pos : match.start()])
        parts.append(before)
        length += len(before)
        inner = _plain(match.group(2))
        stripped = inner.strip()
        if stripped:
            start = length + (len(inner) - len(inner.lstrip()))
            marks.append((start, start + len(stripped), match.group(1)))
        parts.append(inner)
        length += len(inner)
        pos = match.end()
    parts.append(_plain(html_segment[pos:]))
    text = "".join(parts)
    lead = len(text) - len(text.lstrip())
    text = text.strip()
    marks = [
        (s - lead, e - lead, c) for s, e, c in marks if s - lead >= 0 and e - lead <= len(text)
    ]
    return text, marks
