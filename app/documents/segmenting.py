"""Deterministic sentence splitting: the one splitter for import, scoring and agreement.

A sentence ends at ``.``, ``!``, ``?`` or ``…`` (closing quotes and brackets may follow)
before whitespace and a capital letter of any script or a digit, and at every line break.
A full stop after a common abbreviation ("Mr.", "e.g.") or a single initial ("J. Smith")
does not end a sentence. Offsets are code points, end exclusive.
"""

from __future__ import annotations

import re
from functools import lru_cache

ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "sr",
        "jr",
        "prof",
        "gen",
        "col",
        "capt",
        "lt",
        "sgt",
        "rev",
        "vs",
        "etc",
        "mt",
        "no",
        "fig",
        "inc",
        "ltd",
        "co",
        "u.s",
        "e.g",
        "i.e",
    }
)
_BOUNDARY = re.compile(
    r"(?<=[.!?\u2026])([\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(\[]?([^\W_]))|\n"
)
_WORD_BEFORE_STOP = re.compile(r"([\w.]+)\.$")


def _sentence_end(text: str, start: int, match: re.Match[str]) -> int | None:
    """Where the sentence ends at this boundary, or None if it does not end here."""
    if match.group(0) == "\n":
        return match.start()
    following = match.group(2)  # any script's capital ("Élodie", "Ødegaard") or a digit
    if not (following.isupper() or following.isdigit()):
        return None
    if text[match.start() - 1] == ".":
        word = _WORD_BEFORE_STOP.search(text, start, match.start())
        if word:
            token = word.group(1).lower()
            if token in ABBREVIATIONS or (len(token) == 1 and token.isalpha()):
                return None
    return match.end(1)


@lru_cache(maxsize=8192)
def sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each sentence of ``text``, stripped; whitespace-only text has none."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = _sentence_end(text, start, match)
        if end is None:
            continue
        _append_stripped(text, start, end, spans)
        start = match.end()
    _append_stripped(text, start, len(text), spans)
    return tuple(spans)


def _append_stripped(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    chunk = text[start:end]
    stripped = chunk.strip()
    if stripped:
        first = start + len(chunk) - len(chunk.lstrip())
        spans.append((first, first + len(stripped)))


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, never an empty one."""
    return [text[start:end] for start, end in sentence_spans(text)]


def regroup(segments: list[str], sentences_per_segment: int) -> list[str]:
    """Join a document's segments and cut it again into segments of N sentences."""
    if sentences_per_segment < 1:
        raise ValueError("sentences per segment must be at least 1")
    sentences = [s for segment in segments for s in split_sentences(segment)]
    return [
        " ".join(sentences[i : i + sentences_per_segment])
        for i in range(0, len(sentences), sentences_per_segment)
    ]
