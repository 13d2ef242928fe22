"""Whole texts ↔ segments: every range inside a segment converts to segment offsets and
back to the same whole-text range, for any text (hypothesis), and the text comes back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.formats.records import Problem
from app.formats.wholetext import layout_from_ranges, layout_of, segment_ranges, split

WORDS = st.text(alphabet="ab🙂é. \t", min_size=1, max_size=12).filter(lambda t: t.strip())
PARAGRAPHS = st.lists(WORDS, min_size=1, max_size=5)
GAPS = st.sampled_from(["\n\n", "\n \n", "\n\n\n  ", "\r\n\r\n"])


@settings(max_examples=200, deadline=None)
@given(PARAGRAPHS, GAPS, st.data())
def test_offsets_convert_both_ways(paragraphs, gap, data):
    text = gap.join(paragraphs)
    layout, mapper = split(text, Problem("t"), "d")
    normal = text.replace("\r\n", "\n")
    assert layout.text == normal
    assert layout_of(layout.segments, layout.meta()).text == normal
    again = layout_from_ranges(layout.text, segment_ranges(layout))
    assert again is not None and again.segments == layout.segments
    index = data.draw(st.integers(0, len(layout.segments) - 1))
    segment = layout.segments[index]
    start = data.draw(st.integers(0, len(segment) - 1))
    end = data.draw(st.integers(start + 1, len(segment)))
    whole = (layout.to_whole(index, start), layout.to_whole(index, end))
    assert layout.to_segments(*whole) == (index, start, index, end)
    assert normal[whole[0] : whole[1]] == segment[start:end]


def test_a_range_over_two_paragraphs_runs_across_the_break():
    layout, _ = split("One two.\n\nThree four.", Problem("t"), "d")
    assert layout.to_segments(4, 13) == (0, 4, 1, 3)
    assert layout.to_segments(4, 10) == (0, 4, 0, 8)  # trailing whitespace trimmed
    assert layout.to_segments(8, 10) is None  # within the gap


def test_crlf_offsets_are_moved():
    text = "Alpha.\r\n\r\nBeta gamma."
    layout, mapper = split(text, Problem("t"), "d")
    start = text.index("gamma")
    assert layout.to_segments(mapper(start), mapper(start + 5)) == (1, 5, 1, 10)
