"""Words, sentences and clean sentences: the units systems are compared in, and BooookScore's
score (docs/METRICS.md, "Clean sentences and BooookScore").

* a **word** is a match of :data:`WORD_PATTERN`: the word tokens of
  :data:`app.rules.spans.TOKEN_PATTERN` (a word with inner apostrophes); punctuation is
  not a word;
* a **sentence** is one of the sentences the one splitter (:mod:`app.documents.segmenting`)
  finds in a segment;
* an error **touches** every sentence its span overlaps by at least one character, and,
  for a ``relation`` category (BooookScore's relations: two spans that confuse together),
  every sentence its other span overlaps (:func:`error_places`); a paired category's
  earlier span is the context its error refers to, not an error, and touches nothing;
* a sentence is **clean** when no counted error touches it. The **clean-sentence share**
  of a set of segments = clean sentences / sentences: BooookScore's score of a summary
  ("the proportion of sentences in a summary that do not contain any of the identified
  error types"), computed here over whatever errors the caller counts.

:func:`sentence_counts` is the one computation of it; the comparison of systems
(:mod:`app.quality.compare`) and the report's BooookScore (:mod:`app.quality.booookscore`)
both call it, with the places :func:`error_places` gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.rules.spans import Span, TextKey, sentence_bounds, sentence_ids

WORD_PATTERN = re.compile(r"\w+(?:['\u2019]\w+)*")
END = 1 << 62  # "to the end of the segment", for a piece of a span across segment breaks


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


def category_kinds(taxonomy: Mapping[str, Any] | None) -> dict[str, str | None]:
    """{category id: kind} of a taxonomy snapshot, for :func:`error_places`."""
    return {c["id"]: c.get("kind") for c in (taxonomy or {}).get("categories", [])}


def error_places(span: Span, paired: Sequence[Any] | None, kind: str | None) -> list[Span]:
    """Where an error is, for the clean-sentence share: its ``span``, and for a ``relation``
    category (``kind``) its other span, ``paired`` = (segment, start, end, text,
    end_segment) as stored, one piece per segment when it runs across segment breaks (the
    first segment from its start on, the segments between whole, the last up to its end)."""
    places = [span]
    if kind != "relation" or paired is None or paired[0] is None:
        return places
    segment, start, end = paired[0], paired[1], paired[2]
    last = paired[4] if len(paired) > 4 and paired[4] is not None else segment
    if last == segment:
        return [*places, Span(span.document, segment, start, end, span.category)]
    places.append(Span(span.document, segment, start, END, span.category))
    places += [Span(span.document, seg, 0, END, span.category) for seg in range(segment + 1, last)]
    return [*places, Span(span.document, last, 0, end, span.category)]


def sentence_counts(texts: Mapping[TextKey, str], errors: Iterable[Span]) -> SentenceCounts:
    """The sentences of the segments ``texts`` ((document, segment) -> text) and those that
    no error of ``errors`` touches (overlaps by a character; any category; errors elsewhere
    are ignored). Pass a relation's other span too (:func:`error_places`)."""
    touched = {
        (span.key, index)
        for span in errors
        if span.located and span.key in texts
        for index in sentence_ids(texts[span.key], span.start, span.end)  # type: ignore[arg-type]
    }
    total = sum(len(sentence_bounds(text)) for text in texts.values())
    return SentenceCounts(total, total - len(touched))


def clean_sentence_share(texts: Mapping[TextKey, str], errors: Iterable[Span]) -> float | None:
    """BooookScore's score of the segments ``texts``: the share of their sentences that no
    error of ``errors`` touches (None without sentences)."""
    return sentence_counts(texts, errors).share
