"""The span rules on their own (app/rules/spans.py, matching.py, scoring.py), each answer
worked out by hand on a short text, so that a changed bound, comparison or count fails here
before it reaches a report (docs/METRICS.md, "Units" and "Matching")."""

from __future__ import annotations

import pytest

from app.rules.matching import (
    _covered_units,
    eligible,
    iou,
    match,
    maximum_matching,
    sentence_iou,
    sentence_labels,
    token_iou,
)
from app.rules.scoring import (
    locate_spans,
    matches,
    merge_suggestion_recall,
    precision_recall_f1,
    scopes_from_taxonomy,
)
from app.rules.spans import (
    Span,
    sentence_bounds,
    sentence_ids,
    span_to_dict,
    token_bounds,
    widen_to_sentences,
)


@pytest.fixture(autouse=True)
def cold_caches():
    """Each test measures from the text, not from an answer an earlier test left in the
    per-process caches of token bounds and covered units (a run that forks after the whole
    suite, as mutmut's does, would otherwise never reach the rule)."""
    _covered_units.cache_clear()
    token_bounds.cache_clear()


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


# --- matching ------------------------------------------------------------------------


def span(start, end, category="CharE", document="d", segment=0, text=""):
    return Span(document, segment, start, end, category, "w", text)


def test_without_the_text_the_strict_rule_is_character_iou_of_one_half():
    """No segment text to tokenise: IoU of the characters. [0, 10) against [0, 5): 5 of 10,
    a half, eligible; [0, 4): 4 of 10, not; [5, 15): 5 of 15, not, but they overlap."""
    a = span(0, 10)
    for b, strict, lenient in (
        (span(0, 5), True, True),
        (span(5, 10), True, True),
        (span(0, 4), False, True),
        (span(6, 10), False, True),
        (span(5, 15), False, True),
        (span(10, 20), False, False),
    ):
        assert eligible(a, b, "strict", texts=None, scopes=None) is strict, b
        assert eligible(b, a, "strict", texts=None, scopes=None) is strict, b
        assert eligible(a, b, "lenient", texts=None, scopes=None) is lenient, b
        assert eligible(b, a, "lenient", texts=None, scopes=None) is lenient, b


def test_a_sentence_scope_needs_the_segment_text_else_the_span_rule_holds():
    """SceneE is sentence-scope; without its segment's text the spans are compared as spans."""
    scopes = {"SceneE": "sentence"}
    a, b = span(0, 4, "SceneE"), span(5, 10, "SceneE")  # one sentence, no shared character
    assert eligible(a, b, "lenient", texts={("d", 0): TEXT}, scopes=scopes)
    assert eligible(a, b, "strict", texts={("d", 0): TEXT}, scopes=scopes)
    assert not eligible(a, b, "lenient", texts={("e", 0): TEXT}, scopes=scopes)
    assert not eligible(a, b, "lenient", texts=None, scopes=scopes)
    assert not eligible(a, b, "lenient", texts={("d", 0): TEXT}, scopes=None)
    # spans of two sentences, no shared one: neither rule
    c = span(12, 15, "SceneE")
    assert not eligible(a, c, "lenient", texts={("d", 0): TEXT}, scopes=scopes)
    assert not eligible(a, c, "strict", texts={("d", 0): TEXT}, scopes=scopes)


def test_pairs_need_the_same_place_and_category_and_located_spans():
    a = span(0, 4)
    for b in (span(0, 4, "RefE"), span(0, 4, document="e"), span(0, 4, segment=1)):
        assert not eligible(a, b, "lenient", texts=None, scopes=None), b
    for b in (span(None, 4), span(2, 2), span(0, None)):
        assert not eligible(a, b, "lenient", texts=None, scopes=None), b
        assert not eligible(b, a, "lenient", texts=None, scopes=None), b


def test_token_and_sentence_iou_hand_computed():
    """ "Anna sings. Bob dances.": tokens Anna, sings, ., Bob, dances, . (six)."""
    text = "Anna sings. Bob dances."
    assert token_iou(text, span(0, 10), span(5, 11)) == 1 / 3  # {0, 1} and {1, 2}
    assert token_iou(text, span(5, 10), span(5, 11)) == 1 / 2  # {1} and {1, 2}
    assert token_iou(text, span(0, 4), span(12, 15)) == 0.0
    # a span covers a token their ranges share a character of: not one it only touches
    assert token_iou(text, span(4, 10), span(5, 10)) == 1.0  # "Anna" ends at 4: {1}, {1}
    assert token_iou(text, span(0, 5), span(0, 4)) == 1.0  # "sings" starts at 5: {0}, {0}
    assert sentence_iou(text, span(0, 4), span(5, 15)) == 1 / 2  # {0} and {0, 1}
    assert iou(frozenset(), frozenset()) == 0.0
    assert iou(frozenset({1, 2, 3}), frozenset({3, 4})) == 1 / 4


def test_the_matching_is_maximum_and_one_to_one_in_each_place():
    """Worker spans p0 [0, 10) and p1 [0, 4); gold g0 [0, 4) and g1 [6, 10), lenient: p1
    can take only g0, so p0 must take g1 (greedy would give p0 g0 and leave p1 out)."""
    predicted = [span(0, 10), span(0, 4), span(0, 4, "RefE"), span(0, 4, document="e")]
    gold = [span(0, 4), span(6, 10), span(0, 4, document="e"), span(20, 30, "RefE")]
    assert match(predicted, gold, "lenient") == [(0, 1), (1, 0), (3, 2)]
    assert match(predicted, gold, "strict") == [(1, 0), (3, 2)]
    assert match([], gold, "lenient") == [] and match(predicted, [], "strict") == []
    assert maximum_matching([[0, 1], [0]], 2) == {0: 1, 1: 0}
    assert maximum_matching([[0], [0], [1]], 3) == {0: 0, 2: 1}


def test_an_unknown_matching_rule_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^unknown matching rule 'loose'$"):
        match([span(0, 4)], [span(0, 4)], "loose")


def test_a_span_belongs_to_the_sentence_it_starts_in_or_the_next_one():
    """TEXT's sentences: [0, 11), [12, 23), [24, 36). A span starting at the space 11 goes
    to sentence 1; one starting after the last sentence (trailing spaces) to none."""
    texts = {("d", 0): TEXT, ("t", 0): "Anna sings.   "}
    spans = [
        span(12, 12),  # empty: none (and the spans after it still count)
        span(0, 3),  # 0
        span(10, 14),  # starts in 0
        span(11, 14, "RefE"),  # the space: 1
        span(23, 30, "RefE"),  # the space: 2
        span(35, 36, "RefE"),  # the last character: 2
        span(None, 5),  # not located: none
        span(0, 3, document="x"),  # no text: none
        span(12, 13, document="t"),  # after the last sentence: none
    ]
    assert sentence_labels(spans, texts) == {
        ("d", 0, 0, "CharE"),
        ("d", 0, 1, "RefE"),
        ("d", 0, 2, "RefE"),
    }


# --- scores --------------------------------------------------------------------------


def test_f1_is_zero_when_nothing_matched_on_either_side():
    """One worker span, one gold span of another category: P = 0 of 1, R = 0 of 1, F1 0
    (not undefined); per category: CharE has a prediction only, RefE gold only."""
    result = precision_recall_f1([span(0, 4)], [span(0, 4, "RefE")])
    assert result["overall"] == {
        "predicted": 1,
        "gold": 1,
        "matched_predicted": 0,
        "matched_gold": 0,
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
    }
    assert result["per_category"]["CharE"]["recall"] is None
    assert result["per_category"]["CharE"]["f1"] == 0.0
    assert result["per_category"]["RefE"]["precision"] is None
    assert result["sentence"] is None


def test_f1_hand_computed_with_two_of_three_and_two_of_four():
    """Three worker spans, four gold, two pairs: P 2/3, R 2/4, F1 = 2PR/(P+R) = 4/7."""
    predicted = [span(0, 4), span(12, 15), span(24, 28)]
    gold = [span(0, 4), span(12, 15), span(30, 35), span(5, 10)]
    overall = precision_recall_f1(predicted, gold)["overall"]
    assert (overall["matched_predicted"], overall["matched_gold"]) == (2, 2)
    assert overall["precision"] == pytest.approx(2 / 3)
    assert overall["recall"] == pytest.approx(1 / 2)
    assert overall["f1"] == pytest.approx(4 / 7)


def test_repeated_gold_texts_are_placed_at_successive_occurrences():
    """ "la la la": three gold spans known by the text "la" land at 0, 3 and 6; a fourth
    finds no free one and stays unlocated; a span of another segment stays as given."""
    texts = {("d", 0): "la la la"}
    given = [span(None, None, text=" la") for _ in range(4)] + [
        span(None, None, text="la", segment=1),
        span(1, 2, text="la"),
    ]
    placed = locate_spans(given, texts)
    assert [(s.start, s.end) for s in placed] == [
        (0, 2),
        (3, 5),
        (6, 8),
        (None, None),
        (None, None),
        (1, 2),
    ]
    # another category's repeats start again from the first occurrence
    other = locate_spans([span(None, None, text="la"), span(None, None, "RefE", text="la")], texts)
    assert [(s.start, s.category) for s in other] == [(0, "CharE"), (0, "RefE")]


def test_recall_over_several_documents_is_one_count_over_them_all():
    """Part one: CharE 1 of 2 caught; part two: CharE 0 of 1, RefE 1 of 1 (a category the
    caller did not list is kept). Together: 2 of 4, CharE 1 of 3, RefE 1 of 1, SceneE 0 of
    0 (listed, undefined); the missed in the parts' order."""
    parts = [
        {
            "caught": 1,
            "total": 2,
            "per_category": {"CharE": {"caught": 1, "total": 2}},
            "missed": [{"ref": 1}],
        },
        {
            "caught": 1,
            "total": 2,
            "per_category": {"CharE": {"caught": 0, "total": 1}, "RefE": {"caught": 1, "total": 1}},
            "missed": [{"ref": 2}],
        },
    ]
    assert merge_suggestion_recall(parts, ["CharE", "SceneE"]) == {
        "recall": 0.5,
        "caught": 2,
        "total": 4,
        "per_category": {
            "CharE": {"recall": 1 / 3, "caught": 1, "total": 3},
            "SceneE": {"recall": None, "caught": 0, "total": 0},
            "RefE": {"recall": 1.0, "caught": 1, "total": 1},
        },
        "missed": [{"ref": 1}, {"ref": 2}],
    }
    assert merge_suggestion_recall([], []) == {
        "recall": None,
        "caught": 0,
        "total": 0,
        "per_category": {},
        "missed": [],
    }


def test_matches_asks_the_lenient_rule_unless_told():
    """[0, 10) and [5, 15) share 5 of 15 characters: they overlap (lenient), under a half
    (not strict)."""
    a, b = span(0, 10), span(5, 15)
    assert matches(a, b)
    assert matches(a, b, rule="lenient")
    assert not matches(a, b, rule="strict")
    text = {("d", 0): TEXT}
    scopes = {"SceneE": "sentence"}
    assert matches(span(0, 4, "SceneE"), span(5, 10, "SceneE"), texts=text, scopes=scopes)
    assert not matches(span(0, 4, "SceneE"), span(5, 10, "SceneE"), texts=text)


def test_the_scores_measure_with_the_texts_and_scopes_given():
    """TEXT: "Anna" [0, 4) against gold "Anna sings" [0, 10): tokens {0} of {0, 1}, IoU a
    half, a strict match with the text (characters: 4 of 10, none without it). SceneE, a
    sentence-scope category: "Anna" against "sings" [5, 10) share their sentence, a match
    under both rules with the scopes and the text (none without either)."""
    texts, scopes = {("d", 0): TEXT}, {"SceneE": "sentence"}
    char = precision_recall_f1([span(0, 4)], [span(0, 10)], texts=texts)
    assert char["overall"]["matched_gold"] == 1
    assert precision_recall_f1([span(0, 4)], [span(0, 10)])["overall"]["matched_gold"] == 0
    scene = ([span(0, 4, "SceneE")], [span(5, 10, "SceneE")])
    both = precision_recall_f1(*scene, texts=texts, scopes=scopes)
    assert (both["overall"]["f1"], both["lenient"]["overall"]["f1"]) == (1.0, 1.0)
    for partial in ({"texts": texts}, {"scopes": scopes}):
        alone = precision_recall_f1(*scene, **partial)
        assert (alone["overall"]["f1"], alone["lenient"]["overall"]["f1"]) == (0.0, 0.0), partial


def test_without_texts_gold_without_offsets_counts_against_recall():
    gold = [span(None, None, text="Anna"), span(0, 4)]
    overall = precision_recall_f1([span(0, 4)], gold)["overall"]
    assert (overall["matched_gold"], overall["gold"], overall["recall"]) == (1, 2, 0.5)


def test_only_a_span_missing_an_offset_is_placed():
    texts = {("d", 0): "la la la"}
    placed = locate_spans([span(3, 5, text="la"), span(None, 8, text="la")], texts)
    assert [(s.start, s.end) for s in placed] == [(3, 5), (0, 2)]
    assert [(s.start, s.end) for s in locate_spans([span(6, None, text="la")], texts)] == [(0, 2)]


def test_a_category_without_a_scope_is_scored_as_spans():
    """The taxonomy snapshot's scopes: "span" unless the category says "sentence"; a
    snapshot without categories has none."""
    snapshot = {"categories": [{"id": "A"}, {"id": "B", "scope": "sentence"}]}
    assert scopes_from_taxonomy(snapshot) == {"A": "span", "B": "sentence"}
    assert scopes_from_taxonomy({}) == {}
