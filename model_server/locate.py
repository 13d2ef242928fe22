"""Finding a quoted span in a text: word boundaries, and the occurrence its context names.

A language model quotes the words it flags instead of counting offsets; this module turns
a quote back into code-point offsets (end exclusive), or None when the quote is not there.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher


def _pattern(quote: str) -> re.Pattern[str] | None:
    """The quote's words with any run of whitespace between them, at word boundaries."""
    words = quote.split()
    if not words:
        return None
    body = r"\s+".join(re.escape(w) for w in words)
    left = r"(?<!\w)" if re.match(r"\w", words[0]) else ""
    right = r"(?!\w)" if re.search(r"\w$", words[-1]) else ""
    return re.compile(left + body + right)


def occurrences(text: str, quote: str) -> list[tuple[int, int]]:
    """Every place the quote appears at word boundaries: exact case first, else any case."""
    pattern = _pattern(quote)
    if pattern is None:
        return []
    found = [m.span() for m in pattern.finditer(text)]
    if not found:
        found = [m.span() for m in re.compile(pattern.pattern, re.IGNORECASE).finditer(text)]
    return found


def _context_score(text: str, span: tuple[int, int], context: str) -> float:
    """How well the text around ``span`` matches ``context`` (0..1)."""
    pad = max(len(context), 20)
    window = text[max(0, span[0] - pad) : span[1] + pad]
    return SequenceMatcher(None, window.lower(), context.lower(), autojunk=False).ratio()


def locate(text: str, quote: str, context: str = "") -> tuple[int, int] | None:
    """The (start, end) of ``quote`` in ``text``; with several occurrences, the one whose
    surroundings best match ``context`` (the first when there is no context)."""
    found = occurrences(text, quote)
    if not found:
        return None
    if len(found) == 1 or not context.strip():
        return found[0]
    if (inside := occurrences(text, context)) and len(inside) == 1:
        start, end = inside[0]
        for span in found:
            if start <= span[0] and span[1] <= end:
                return span
    return max(found, key=lambda span: _context_score(text, span, context))


ABSENT, AMBIGUOUS = "absent", "ambiguous"


def locate_exactly(text: str, quote: str, context: str = "") -> tuple[tuple[int, int] | None, str]:
    """``quote`` in ``text`` without guessing: ``(span, "")`` when it occurs once (at word
    boundaries, :func:`occurrences`), or when ``context`` occurs once and holds exactly one
    of its occurrences; else ``(None, "absent")`` or ``(None, "ambiguous")``. An annotator's
    mark is stored only where its quote names one place (:func:`locate`, the detector's,
    picks the likeliest of several)."""
    found = occurrences(text, quote)
    if not found:
        return None, ABSENT
    if len(found) == 1:
        return found[0], ""
    inside = occurrences(text, context) if context.strip() else []
    if len(inside) == 1:
        start, end = inside[0]
        held = [span for span in found if start <= span[0] and span[1] <= end]
        if len(held) == 1:
            return held[0], ""
    return None, AMBIGUOUS
