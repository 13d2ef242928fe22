"""Deterministic sentence splitting, for re-segmenting plain documents on import."""

from __future__ import annotations

import re

ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "st", "sr", "jr", "prof", "gen", "col", "capt", "lt", "sgt",
    "rev", "vs", "etc", "mt", "no", "fig", "inc", "ltd", "co", "u.s", "e.g", "i.e",
}
_BOUNDARY = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?([^\W_]))")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ., ! or ? followed by space and a capital letter or digit.

    Common abbreviations ("Mr.", "Dr.", "e.g.") and single initials ("J. Smith") do not
    end a sentence. Returns the sentences stripped, never an empty one.
    """
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        following = match.group(1)  # any script's capital ("Élodie", "Ødegaard") or a digit
        if not (following.isupper() or following.isdigit()):
            continue
        candidate = text[start : match.start()]
        last_word = re.search(r"([\w.]+)[.!?][\"'\u201d\u2019)\]]*$", candidate)
        if last_word:
            word = last_word.group(1).lower()
            if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        piece = text[start : match.end()].strip()
        if piece:
            sentences.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) code-point offsets of each sentence of ``text``."""
    spans, cursor = [], 0
    for sentence in split_sentences(text):
        start = text.index(sentence, cursor)
        spans.append((start, start + len(sentence)))
        cursor = start + len(sentence)
    return spans


def regroup(segments: list[str], sentences_per_segment: int) -> list[str]:
    """Join a document's segments and cut it again into segments of N sentences."""
    if sentences_per_segment < 1:
        raise ValueError("sentences per segment must be at least 1")
    sentences = [s for segment in segments for s in split_sentences(segment)]
    return [
        " ".join(sentences[i : i + sentences_per_segment])
        for i in range(0, len(sentences), sentences_per_segment)
    ]
