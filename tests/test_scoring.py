"""Span matching, P/R/F1 against gold and recall against suggestions, on hand-worked cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.documents.taxonomy import load_taxonomy
from app.rules.scoring import (
    Span,
    locate_spans,
    matches,
    overlaps,
    precision_recall_f1,
    scopes_from_taxonomy,
    sentence_bounds,
    sentence_ids,
    suggestion_recall,
    token_bounds,
    widen_to_sentences,
)

ROOT = Path(__file__).resolve().parents[1]

#            0         1         2         3
#            0123456789012345678901234567890123
TEXT = "Claudio meets Hero at the party."
TWO = "Anna sings. Bob dances."
TEXTS = {("d", 0): TEXT, ("s", 0): TWO}
SCOPES = {"CharE": "span", "RefE": "span", "SceneE": "sentence"}


def span(start, end, category="CharE", source="w", document="d", segment=0, text=""):
    return Span(document, segment, start, end, category, source, text)


# --- overlap -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((0, 7), (7, 13), False),  # touching: "Claudio" | " meets"
        ((0, 7), (6, 13), True),  # one shared character
        ((0, 13), (8, 13), True),  # nested, same end
        ((8, 13), (0, 32), True),  # nested inside a longer span
        ((0, 7), (0, 7), True),  # identical
        ((3, 3), (0, 7), False),  # empty span overlaps nothing
        ((14, 18), (0, 7), False),  # disjoint
    ],
)
def test_overlap_edges(a, b, expected):
    assert overlaps(span(*a), span(*b)) is expected
    assert overlaps(span(*b), span(*a)) is expected


def test_overlap_needs_same_segment_and_offsets():
    assert not overlaps(span(0, 7), span(0, 7, segment=1))
    assert not overlaps(span(0, 7), span(0, 7, document="e"))
    assert not overlaps(span(None, None, text="Claudio"), span(0, 7))


def test_matches_needs_same_category():
    assert matches(span(0, 7, "CharE"), span(0, 7, "CharE"))
    assert not matches(span(0, 7, "CharE"), span(0, 7, "RefE"))


def test_sentence_scope_matches_anywhere_in_the_same_sentence():
    # TWO: "Anna sings." is [0, 11), "Bob dances." is [12, 23)
    suggestion = span(12, 23, "SceneE", document="s")
    bob = span(12, 15, "SceneE", document="s")  # "Bob"
    dances = span(16, 22, "SceneE", document="s")  # "dances": no overlap with "Bob"
    anna = span(0, 4, "SceneE", document="s")
    assert matches(dances, bob, texts=TEXTS, scopes=SCOPES)  # same sentence
    assert not overlaps(dances, bob)
    assert not matches(dances, bob)  # without texts/scopes: plain overlap
    assert matches(bob, suggestion, texts=TEXTS, scopes=SCOPES)
    assert not matches(anna, suggestion, texts=TEXTS, scopes=SCOPES)
    # a span-scope category in the same sentence still needs a real overlap
    assert not matches(
        span(16, 22, "RefE", document="s"),
        span(12, 15, "RefE", document="s"),
        texts=TEXTS,
        scopes=SCOPES,
    )


# --- tokens and sentences ------------------------------------------------------------


def test_tokens_are_words_and_single_punctuation():
    text = "Leonato's house, don't go."
    assert [text[s:e] for s, e in token_bounds(text)] == [
        "Leonato's",
        "house",
        ",",
        "don't",
        "go",
        ".",
    ]


def test_sentence_splitter_rules():
    text = (
        'Mr. Darcy meets J. K. Rowling. He leaves! "Who?" Nobody knows... '
        "then 3 cats. E.g. this\nNew line"
    )
    assert [text[s:e] for s, e in sentence_bounds(text)] == [
        "Mr. Darcy meets J. K. Rowling.",
        "He leaves!",
        '"Who?"',
        "Nobody knows... then 3 cats.",  # no capital after "...": not a boundary
        "E.g. this",
        "New line",
    ]
    assert sentence_bounds("   ") == ()
    assert sentence_bounds("no end") == ((0, 6),)


def test_sentence_ids_and_widening():
    assert sentence_ids(TWO, 9, 14) == {0, 1}
    assert sentence_ids(TWO, 11, 12) == frozenset()  # the space between sentences
    assert widen_to_sentences(TWO, 13, 15) == (12, 23)
    assert widen_to_sentences(TWO, 11, 12) == (11, 12)


# --- locating text-only spans --------------------------------------------------------


def test_locate_spans_fills_only_missing_offsets():
    located = locate_spans(
        [
            span(None, None, text="Hero"),
            span(0, 7, text="Claudio"),
            span(None, None, text="Beatrice"),
        ],
        TEXTS,
    )
    assert [(s.start, s.end) for s in located] == [(14, 18), (0, 7), (None, None)]


# --- precision / recall / F1 ---------------------------------------------------------


def test_precision_recall_f1_hand_computed():
    gold = [
        span(None, None, "CharE", "gold", text="Claudio"),  # located at (0, 7)
        span(14, 18, "CharE", "gold", text="Hero"),
        span(22, 31, "RefE", "gold", text="the party"),
    ]
    predicted = [
        span(0, 13, "CharE"),  # "Claudio meets": overlaps gold "Claudio"
        span(19, 21, "CharE"),  # "at": overlaps nothing
        span(26, 31, "RefE"),  # "party": nested in gold "the party"
        span(14, 18, "RefE"),  # "Hero" under the wrong category
    ]
    result = precision_recall_f1(
        predicted, gold, texts=TEXTS, scopes=SCOPES, categories=["CharE", "RefE", "SceneE"]
    )
    char, ref, scene = (result["per_category"][c] for c in ("CharE", "RefE", "SceneE"))
    # CharE: 1 of 2 predictions matched, 1 of 2 gold matched -> P = R = F1 = 0.5
    assert (char["precision"], char["recall"], char["f1"]) == (0.5, 0.5, 0.5)
    # RefE: 1 of 2 predictions matched, 1 of 1 gold -> P .5, R 1, F1 = 2*.5/1.5 = 2/3
    assert ref["precision"] == 0.5 and ref["recall"] == 1.0
    assert ref["f1"] == pytest.approx(2 / 3)
    assert scene == {
        "predicted": 0,
        "gold": 0,
        "matched_predicted": 0,
        "matched_gold": 0,
        "precision": None,
        "recall": None,
        "f1": None,
    }
    # pooled: 2 of 4 predictions, 2 of 3 gold -> P .5, R 2/3, F1 = 2*(1/3)/(7/6) = 4/7
    overall = result["overall"]
    assert overall["precision"] == 0.5 and overall["recall"] == pytest.approx(2 / 3)
    assert overall["f1"] == pytest.approx(4 / 7)
    json.dumps(result)


def test_one_long_span_matches_at_most_one_gold_span():
    # "Claudio meets Hero" covers 3 tokens; each gold span covers 1: token IoU 1/3 < 0.5.
    gold = [span(0, 7, source="gold"), span(14, 18, source="gold")]
    result = precision_recall_f1([span(0, 18)], gold, texts=TEXTS)
    assert result["rule"] == "strict"
    assert result["overall"]["matched_gold"] == 0 and result["overall"]["f1"] == 0.0
    lenient = result["lenient"]["overall"]  # any overlap, but still one-to-one
    assert (lenient["precision"], lenient["recall"]) == (1.0, 0.5)
    assert lenient["f1"] == pytest.approx(2 / 3)


def test_f1_conventions_when_one_side_is_empty():
    missed = precision_recall_f1([], [span(0, 7, source="gold")])["overall"]
    assert missed["precision"] is None and missed["recall"] == 0.0 and missed["f1"] == 0.0
    spurious = precision_recall_f1([span(0, 7)], [])["overall"]
    assert spurious["precision"] == 0.0 and spurious["recall"] is None and spurious["f1"] == 0.0
    assert precision_recall_f1([], [])["overall"]["f1"] is None


def test_unlocatable_gold_span_counts_against_recall():
    gold = [span(None, None, source="gold", text="Beatrice"), span(0, 7, source="gold")]
    result = precision_recall_f1([span(0, 7)], gold, texts=TEXTS)
    assert result["overall"]["recall"] == 0.5 and result["overall"]["precision"] == 1.0


# --- recall against suggestions ------------------------------------------------------


def test_suggestion_recall_overall_per_category_and_missed():
    suggestions = [
        Span("d", 0, 0, 7, "CharE", "rules", "Claudio", ref=1),
        Span("d", 0, 14, 18, "CharE", "rules", "Hero", ref=2),
        Span("d", 0, 22, 31, "RefE", "rules", "the party", ref=3),
        Span("s", 0, 12, 23, "SceneE", "rules", "Bob dances.", ref=4),
        Span("s", 0, 0, 11, "SceneE", "rules", "Anna sings.", ref=5),
    ]
    worker = [
        span(0, 7, "CharE"),  # catches 1
        span(18, 25, "CharE"),  # starts where "Hero" ends: touching, misses 2
        span(22, 25, "CharE"),  # right place, wrong category -> does not catch 3
        span(16, 22, "SceneE", document="s"),  # "dances": same sentence as suggestion 4
    ]
    result = suggestion_recall(
        worker, suggestions, texts=TEXTS, scopes=SCOPES, categories=["CharE", "RefE", "SceneE"]
    )
    assert (result["caught"], result["total"]) == (2, 5)
    assert result["recall"] == pytest.approx(0.4)
    assert result["per_category"] == {
        "CharE": {"recall": 0.5, "caught": 1, "total": 2},
        "RefE": {"recall": 0.0, "caught": 0, "total": 1},
        "SceneE": {"recall": 0.5, "caught": 1, "total": 2},
    }
    assert [m["ref"] for m in result["missed"]] == [2, 3, 5]
    assert result["missed"][0] == {
        "document": "d",
        "segment": 0,
        "start": 14,
        "end": 18,
        "category": "CharE",
        "source": "rules",
        "text": "Hero",
        "ref": 2,
        "score": None,
    }
    json.dumps(result)


def test_repeated_suggestions_count_once():
    first = Span("d", 0, 0, 7, "CharE", "rules", "Claudio", ref=1)
    again = Span("d", 0, 0, 7, "CharE", "t5", "Claudio", ref=9)
    other = Span("d", 0, 0, 7, "RefE", "t5", "Claudio", ref=10)
    result = suggestion_recall([], [first, again, other])
    assert result["total"] == 2
    assert [m["ref"] for m in result["missed"]] == [1, 10]


def test_suggestion_recall_without_suggestions_is_undefined():
    result = suggestion_recall([span(0, 7)], [])
    assert result == {"recall": None, "caught": 0, "total": 0, "per_category": {}, "missed": []}


def test_scopes_from_the_snac_taxonomy():
    scopes = scopes_from_taxonomy(load_taxonomy(ROOT / "taxonomies" / "snac.yaml"))
    assert scopes["SceneE"] == "sentence" and scopes["CharE"] == "span"
