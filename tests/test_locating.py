"""The one locate rule (import and scoring): word boundaries, successive occurrences; and
the round-trip tests' placing of antecedents (tests/antecedents.py), which they build on."""

from __future__ import annotations

from app.documents.locating import at_word_boundaries, locate, occurrences
from tests.antecedents import locate_across, locate_antecedent

#        0         1         2
#        0123456789012345678901234567
SHE = "She says he will go, and he does."


def test_standalone_he_not_inside_she():
    # The old rule (first substring occurrence) put "he" at 1..3, inside "She".
    assert SHE.find("he") == 1
    placed = locate(SHE, "he")
    assert (placed.start, placed.end) == (9, 11)
    assert placed.outcome == "ambiguous"  # a second standalone "he" at 25..27
    assert SHE[25:27] == "he"


def test_repeated_entries_take_successive_occurrences():
    first = locate(SHE, "he")
    second = locate(SHE, "he", taken={(first.start, first.end)})
    assert (second.start, second.end, second.outcome) == (25, 27, "unique")
    third = locate(SHE, "he", taken={(9, 11), (25, 27)})
    assert (third.start, third.end, third.outcome) == (1, 3, "mid_word")  # last resort
    assert not locate(SHE, "he", taken={(9, 11), (25, 27), (1, 3)}).found


def test_exact_then_case_and_space_insensitive_then_not_found():
    placed = locate("The  Letter\nis here", "the letter is")
    assert (placed.start, placed.end) == (0, 14)
    assert locate("abc", "xyz").outcome == "not_found"
    assert locate("abc", "  ").outcome == "not_found"
    assert occurrences("aaa", "aa") == [(0, 2), (1, 3)]  # overlapping occurrences count


def test_word_boundaries():
    assert at_word_boundaries(SHE, 0, 3) and at_word_boundaries(SHE, 9, 11)
    assert not at_word_boundaries(SHE, 1, 3)  # starts inside "She"
    assert not at_word_boundaries("others", 0, 5)  # ends inside "others"
    assert at_word_boundaries("he.", 0, 2)


def test_antecedent_is_the_nearest_earlier_occurrence():
    texts = ["Ann met Bob. Ann left.", "Later Ann came back and Ann sang."]
    # In the span's own segment, before the span: the last occurrence before it.
    seg, placed = locate_antecedent(texts, 1, 24, "Ann")
    assert (seg, placed.start, placed.end) == (1, 6, 9)
    # Not before the span in its segment: the nearest earlier segment, last occurrence.
    seg, placed = locate_antecedent(texts, 1, 2, "Ann")
    assert (seg, placed.start) == (0, 13)
    assert locate_antecedent(texts, 1, 30, "Zed") is None


def test_antecedent_across_a_segment_break():
    texts = ["A cat sat. She grows", "taller and shorter. Then", "She grows taller and shorter."]
    # read as one text (segments joined by a space), before the span at segment 2, 0
    assert locate_across(texts, 2, 0, "She grows taller and shorter.") == (0, 11, 1, 19)
    assert locate_across(texts, 2, 0, "Then") is None  # inside one segment: not a crossing
    assert locate_across(texts, 1, 5, "She grows taller") is None  # would end after the span
    assert locate_across(texts, 1, 6, "She grows taller") == (0, 11, 1, 6)
