"""Deterministic sentence splitting: the one splitter for import, scoring and agreement.

A sentence ends at ``.``, ``!``, ``?`` or ``…`` (closing quotes and brackets may follow)
before whitespace and a capital letter of any script, a letter of a script without case
(Arabic, Devanagari, Chinese, ...) or a digit, and at every line break. A full stop after a
common abbreviation ("Mr.", "e.g.") or a single initial ("J. Smith") does not end a sentence.

Other scripts' terminators: the Arabic question mark ``؟`` and full stop ``۔``, the Devanagari
danda ``।`` and double danda ``॥``, the Armenian ``։``, Ethiopic ``።``, Myanmar ``။``, Khmer
``។`` and the Greek question mark ``;`` end a sentence before whitespace and any letter or
digit; the ideographic full stop ``。`` and the fullwidth ``．｡！？`` end one wherever they
stand (Chinese and Japanese put no space between sentences), after the last of a run of them
and of the closing quotes and brackets that follow (``」』）】》`` ...). Text in English is
split exactly as before these were added (``tests/test_segmenting.py`` compares the two on
random English-like text).

Linear in the text: the word before a full stop is found by walking back over it, not by a
search from the sentence's start (``"Mr. A " * 16000`` took 30-50 s that
way: quadratic).
Offsets are code points, end exclusive.
"""

from __future__ import annotations

import re
import unicodedata
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
STOPS = ".!?\u2026"
# Terminators of scripts written with spaces between sentences (and without case).
SPACED_STOPS = "\u061f\u06d4\u0964\u0965\u0589\u1362\u104b\u17d4\u037e"
# Terminators of scripts written without spaces (Chinese, Japanese): a sentence ends there.
WIDE_STOPS = "\u3002\uff0e\uff61\uff01\uff1f"
CLOSERS = "\"'\u201d\u2019)\\]\u300d\u300f\uff09\uff3d\uff5d\u3015\u3011\u3009\u300b\u00bb\u203a"
OPENERS = "\"'\u201c\u2018(\\[\u300c\u300e\uff08\uff3b\uff5b\u3014\u3010\u3008\u300a\u00ab\u2039"
_BOUNDARY = re.compile(
    rf"(?<=[{STOPS}{SPACED_STOPS}])([{CLOSERS}]*)\s+(?=[{OPENERS}]?([^\W_]))"
    rf"|(?<=[{WIDE_STOPS}])(?![{WIDE_STOPS}{STOPS}])([{CLOSERS}]*)\s*"
    r"|\n"
)


def _caseless(char: str) -> bool:
    """A letter of a script without case (Arabic, Hebrew, Devanagari, CJK, ...)."""
    return unicodedata.category(char) == "Lo"


def _word_before(text: str, start: int, stop: int) -> str | None:
    """The run of word characters and dots before the full stop at ``stop`` (not before
    ``start``), what ``([\\w.]+)\\.$`` found; None when there is none. Walks back over the
    run only, so each boundary costs the length of its own word."""
    at = stop
    while at > start and (text[at - 1] == "." or text[at - 1].isalnum() or text[at - 1] == "_"):
        at -= 1
    return text[at:stop] if at < stop else None


def _sentence_end(text: str, start: int, match: re.Match[str]) -> int | None:
    """Where the sentence ends at this boundary, or None if it does not end here."""
    if match.group(3) is not None:  # after a run of wide terminators (and closers)
        return match.end(3)
    if match.group(0) == "\n":
        return match.start()
    stop = text[match.start() - 1]
    following = match.group(2)  # any script's capital ("Élodie", "Ødegaard") or a digit
    if stop in SPACED_STOPS:
        return match.end(1)
    if not (following.isupper() or following.isdigit() or _caseless(following)):
        return None
    if stop == ".":
        word = _word_before(text, start, match.start() - 1)
        if word:
            token = word.lower()
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
