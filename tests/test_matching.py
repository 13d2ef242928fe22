"""One-to-one matching (strict and lenient) and SNaC's sentence projection, hand-computed."""

from __future__ import annotations

import pytest

from app.rules.matching import eligible, match, sentence_labels, token_iou
from app.rules.scoring import Span, precision_recall_f1

#       0         1         2         3         4         5
#       012345678901234567890123456789012345678901234567890123
TEXT = "Claudio meets Hero at the party. Benedick mocks them."
TEXTS = {("d", 0): TEXT}
SCOPES = {"CharE": "span", "RefE": "span", "SceneE": "sentence"}


def span(start, end, category="CharE", source="w"):
    return Span("d", 0, start, end, category, source, TEXT[start:end])


def test_token_iou_hand_computed():
    # "Claudio meets" (2 tokens) vs "Claudio" (1): 1 / 2
    assert token_iou(TEXT, span(0, 13), span(0, 7)) == 0.5
    # "Hero at" (2) vs "at the party" (3): shares "at" -> 1 / 4
    assert token_iou(TEXT, span(14, 21), span(19, 31)) == 0.25
    # a partial-word selection covers the whole token: "Clau" vs "Claudio" -> 1 / 1
    assert token_iou(TEXT, span(0, 4), span(0, 7)) == 1.0


@pytest.mark.parametrize(
    ("a", "b", "strict", "lenient"),
    [
        ((0, 13), (0, 7), True, True),  # IoU 0.5: the threshold is inclusive
        ((0, 18), (0, 7), False, True),  # IoU 1/3
        ((14, 21), (19, 31), False, True),  # IoU 1/4
        ((0, 7), (8, 13), False, False),  # disjoint
    ],
)
def test_strict_and_lenient_rules(a, b, strict, lenient):
    kw = {"texts": TEXTS, "scopes": SCOPES}
    assert eligible(span(*a), span(*b, source="gold"), "strict", **kw) is strict
    assert eligible(span(*a), span(*b, source="gold"), "lenient", **kw) is lenient
    assert not eligible(span(*a), span(*b, "RefE", "gold"), "lenient", **kw)  # category


def test_sentence_scope_uses_sentence_iou():
    kw = {"texts": TEXTS, "scopes": SCOPES}
    first_sentence = span(0, 32, "SceneE", "gold")
    # "party" is in the first sentence: sentence IoU 1/1
    assert eligible(span(26, 31, "SceneE"), first_sentence, "strict", **kw)
    # the whole segment touches 2 sentences, the gold 1: IoU 1/2, still >= 0.5
    assert eligible(span(0, 53, "SceneE"), first_sentence, "strict", **kw)
    # "Benedick" is in the second sentence: no shared sentence at all
    assert not eligible(span(33, 41, "SceneE"), first_sentence, "lenient", **kw)


def test_maximum_matching_beats_greedy():
    # wide overlaps both gold spans, narrow only the first: a greedy first-come pairing
    # (wide with gold 0) leaves narrow unmatched; the maximum matching pairs both.
    gold = [span(0, 7, source="gold"), span(14, 18, source="gold")]
    wide, narrow = span(0, 18), span(0, 7)
    assert match([wide, narrow], gold, "lenient", texts=TEXTS) == [(0, 1), (1, 0)]
    assert match([wide, narrow], gold, "strict", texts=TEXTS) == [(1, 0)]


def test_two_marks_of_one_gold_span_count_once():
    gold = [span(0, 7, source="gold")]
    result = precision_recall_f1([span(0, 7), span(0, 7)], gold, texts=TEXTS, scopes=SCOPES)
    overall = result["overall"]
    # 1 of 2 predictions matched (the duplicate matches nothing), 1 of 1 gold
    assert (overall["precision"], overall["recall"]) == (0.5, 1.0)
    assert overall["f1"] == pytest.approx(2 / 3)


def test_sentence_level_figures_hand_computed():
    gold = [span(0, 7, source="gold"), span(33, 41, source="gold"), span(14, 18, "RefE", "gold")]
    predicted = [span(8, 18), span(0, 7), span(22, 31, "RefE"), span(47, 51, "RefE")]
    assert sentence_labels(predicted, TEXTS) == {
        ("d", 0, 0, "CharE"),  # both CharE marks start in sentence 0: one label
        ("d", 0, 0, "RefE"),
        ("d", 0, 1, "RefE"),
    }
    sentence = precision_recall_f1(
        predicted, gold, texts=TEXTS, scopes=SCOPES, categories=["CharE", "RefE"]
    )["sentence"]
    char, ref = sentence["per_category"]["CharE"], sentence["per_category"]["RefE"]
    # CharE: flagged {s0}, gold {s0, s1} -> P 1, R 1/2
    assert (char["precision"], char["recall"]) == (1.0, 0.5)
    # RefE: flagged {s0, s1}, gold {s0} -> P 1/2, R 1
    assert (ref["precision"], ref["recall"]) == (0.5, 1.0)
    # pooled: 2 of 3 flagged labels are gold, 2 of 3 gold labels flagged
    assert sentence["overall"]["precision"] == pytest.approx(2 / 3)
    assert sentence["overall"]["recall"] == pytest.approx(2 / 3)
