"""The span rules on their own (app/rules/spans.py, matching.py, scoring.py), each answer
worked out by hand on a short text, so that a changed bound, comparison or count fails here
before it reaches a report (docs/METRICS.md, "Units" and "Matching")."""

from __future__ import annotations

from app.rules.spans import (
    Span,
    sentence_bounds,
    sentence_ids,
    span_to_dict,
    token_bounds,
    widen_to_sentences,
)

TEXT = "Anna sings. Bob dances. Cleo sleeps."
#       0    5    10   15   20   25   30   35
SENTENCES = ((0, 11), (12, 23), (24, 36))


def test_tokens_are_words_with_inner_apostrophes_or_one_mark():
    assert token_bounds("don't stop, Leonato\u2019s!") == (
        (0, 5),  # don't
        (6, 10),  # stop
        (10, 11),  # ,
        (12, 21),  # Leonato’s
        (21, 22),  # !
    )
    assert token_bounds("") == ()


def test_sentences_a_range_touches_and_the_whole_sentences_around_it():
    assert sentence_bounds(TEXT) == SENTENCES
    assert sentence_ids(TEXT, 0, 11) == {0}
    assert sentence_ids(TEXT, 10, 13) == {0, 1}  # "." and "B": both touched
    assert sentence_ids(TEXT, 11, 12) == frozenset()  # the space between them: none
    assert sentence_ids(TEXT, 23, 24) == frozenset()
    assert sentence_ids(TEXT, 22, 25) == {1, 2}
    assert widen_to_sentences(TEXT, 13, 15) == (12, 23)
    assert widen_to_sentences(TEXT, 5, 14) == (0, 23)
    assert widen_to_sentences(TEXT, 11, 12) == (11, 12)  # no sentence: unchanged
    assert widen_to_sentences(TEXT, 0, 36) == (0, 36)


def test_a_span_is_located_when_it_has_offsets_around_one_character_at_least():
    span = Span("d", 2, 3, 4, "CharE", source="w1", text="x", ref=7, score=0.5)
    assert span.key == ("d", 2)
    assert span.located
    assert not Span("d", 0, 3, 3, "CharE").located
    assert not Span("d", 0, 4, 3, "CharE").located
    assert not Span("d", 0, None, 3, "CharE").located
    assert not Span("d", 0, 3, None, "CharE").located
    assert span_to_dict(span) == {
        "document": "d",
        "segment": 2,
        "start": 3,
        "end": 4,
        "category": "CharE",
        "source": "w1",
        "text": "x",
        "ref": 7,
        "score": 0.5,
    }
