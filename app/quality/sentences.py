"""Words, sentences and clean sentences: the units systems are compared in, and BooookScore's
score (docs/METRICS.md, "Comparing systems").

* a **word** is a match of :data:`WORD_PATTERN`: the word tokens of
  :data:`app.quality.spans.TOKEN_PATTERN` (a word with inner apostrophes); punctuation is
  not a word;
* a **sentence** is one of the sentences the one splitter (:mod:`app.documents.segmenting`)
  finds in a segment;
* an error **falls in** the sentence where it starts (:func:`app.quality.matching.sentence_labels`;
  a span starting in the space between two sentences falls in the next one). The rule is
  ours: SNaC scores at the sentence level but does not say which sentence a span running over
  several belongs to;
* a sentence is **clean** when no counted error falls in it. The **clean-sentence share** of
  a set of segments = clean sentences / sentences: BooookScore's score of a summary ("the share
  of its sentences with no error"), computed here over whatever errors the caller counts.

:func:`sentence_counts` is the one computation of it; the comparison of systems
(:mod:`app.quality.compare`) and any per-document or per-system BooookScore figure call it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.quality.matching import sentence_labels
from app.quality.spans import Span, TextKey, sentence_bounds

WORD_PATTERN = re.compile(r"\w+(?:['\u2019]\w+)*")


def word_count(text: str) -> int:
    """The words of ``text`` (:data:`WORD_PATTERN`)."""
    return sum(1 for _ in WORD_PATTERN.finditer(text))


@dataclass(frozen=True)
class SentenceCounts:
    """Sentences of some segments and how many of them are clean."""

    sentences: int
    clean: int

    @property
    def share(self) -> float | None:
        """clean / sentences (None without sentences)."""
        return self.clean / self.sentences if self.sentences else None


def sentence_counts(texts: Mapping[TextKey, str], errors: Iterable[Span]) -> SentenceCounts:
    """The sentences of the segments ``texts`` ((document, segment) -> text) and those in
    which no error of ``errors`` falls (any category; errors elsewhere are ignored)."""
    flagged = {(doc, seg, index) for doc, seg, index, _ in sentence_labels(errors, texts)}
    total = sum(len(sentence_bounds(text)) for text in texts.values())
    return SentenceCounts(total, total - len(flagged))


def clean_sentence_share(texts: Mapping[TextKey, str], errors: Iterable[Span]) -> float | None:
    """BooookScore's score of the segments ``texts``: the share of their sentences in which
    no error of ``errors`` falls (None without sentences)."""
    return sentence_counts(texts, errors).share
