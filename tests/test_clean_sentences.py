"""The clean-sentence share's one rule (app/quality/sentences.py; docs/METRICS.md, "Clean
sentences and BooookScore"), counted by hand: an error touches every sentence its span
overlaps, a relation's other span touches its sentences too (across segment breaks as
well), a paired category's earlier span touches nothing."""

from __future__ import annotations

from app.quality.sentences import error_places, sentence_counts
from app.rules.spans import Span

TEXTS = {
    ("d", 0): "Ann met Bo. Bo left. Cy won.",  # sentences 0..11, 12..20, 21..28
    ("d", 1): "Dee sang. Eve ran.",  # 0..9, 10..18
    ("d", 2): "The end.",  # 0..8
}


def places(segment, start, end, kind=None, paired=None):
    return error_places(Span("d", segment, start, end, "c"), paired, kind)


def test_a_span_over_two_sentences_touches_both():
    # "Bo. Bo" (8..14) runs from the first sentence into the second: 2 of 6 sentences
    counted = sentence_counts(TEXTS, places(0, 8, 14))
    assert (counted.sentences, counted.clean) == (6, 4)
    # the span's start alone would have flagged one sentence: this would be 5


def test_a_relations_other_span_touches_its_sentences_a_pairs_earlier_span_does_not():
    other = (1, 10, 17, "Eve ran", None)  # "Eve ran" in segment 1's second sentence
    relation = sentence_counts(TEXTS, places(0, 21, 23, "relation", other))
    paired = sentence_counts(TEXTS, places(0, 21, 23, "paired", other))
    assert (relation.clean, paired.clean) == (4, 5)  # "Cy won." (+ "Eve ran.")


def test_an_other_span_across_segment_breaks_touches_every_piece():
    # from "Cy won." (0, 21) across segment 1 (whole) to "The" (2, 0..3)
    other = (0, 21, 3, "Cy won. Dee sang. Eve ran. The", 2)
    found = places(0, 0, 3, "relation", other)
    assert [(p.segment, p.start) for p in found] == [(0, 0), (0, 21), (1, 0), (2, 0)]
    counted = sentence_counts(TEXTS, found)
    assert counted.clean == 1 and counted.share == 1 / 6  # only "Bo left." is clean


def test_errors_outside_the_segments_counted_and_no_sentences():
    elsewhere = [Span("other", 0, 0, 3, "c")]
    assert sentence_counts(TEXTS, elsewhere).clean == 6
    assert sentence_counts({}, elsewhere).share is None
