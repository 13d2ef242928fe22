"""Sentence splitting and re-segmenting (``--sentences-per-segment``)."""

from __future__ import annotations

import json

import pytest

from app.documents.segmenting import regroup, sentence_spans, split_sentences
from tests.conftest import shared_file


@pytest.mark.parametrize(
    "text, sentences",
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("Mr. Smith meets Dr. Jones. They talk.", ["Mr. Smith meets Dr. Jones.", "They talk."]),
        ("J. R. R. Tolkien writes. He stops.", ["J. R. R. Tolkien writes.", "He stops."]),
        (
            "They visit the U.S. Army base. It rains.",
            ["They visit the U.S. Army base.", "It rains."],
        ),
        ('He says "Stop." Then he leaves.', ['He says "Stop."', "Then he leaves."]),
        (
            "Is it over?' She nods. (Yes.) The end.",
            ["Is it over?'", "She nods.", "(Yes.)", "The end."],
        ),
        ("He left. 5 men followed.", ["He left.", "5 men followed."]),
        ("It cost 3.5 dollars. Cheap.", ["It cost 3.5 dollars.", "Cheap."]),
        ("no capital. so no split.", ["no capital. so no split."]),
        ("Wait... Then what?", ["Wait...", "Then what?"]),
        ("  Leading and trailing.   Spaces.  ", ["Leading and trailing.", "Spaces."]),
        ("Line one.\nLine two.", ["Line one.", "Line two."]),
        ("Zoë rit. Élodie pleure.", ["Zoë rit.", "Élodie pleure."]),
        ("", []),
        ("   ", []),
    ],
)
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences


def test_sentence_spans_point_at_each_sentence():
    text = "Yes. Yes.  Yes! Zoë 🐈 sleeps. Done"
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans] == ["Yes.", "Yes.", "Yes!", "Zoë 🐈 sleeps.", "Done"]
    assert spans[0] == (0, 4) and spans[1] == (5, 9) and spans[2] == (11, 15)


def test_sentence_spans_cover_real_segments():
    """On every SNaC dev segment: spans in order, exact, separated only by whitespace."""
    data = json.loads(shared_file("snac", "dev.json").read_text(encoding="utf-8"))
    checked = 0
    for document in data.values():
        for segment in document.values():
            text = segment["text"]
            spans = sentence_spans(text)
            assert spans, text
            cursor = 0
            for (start, end), sentence in zip(spans, split_sentences(text), strict=True):
                assert text[start:end] == sentence
                assert text[cursor:start].strip() == ""
                cursor = end
            assert text[cursor:].strip() == ""
            checked += 1
    assert checked > 200


def test_regroup():
    segments = ["One. Two. Three.", "Four. Five."]
    assert regroup(segments, 1) == ["One.", "Two.", "Three.", "Four.", "Five."]
    assert regroup(segments, 2) == ["One. Two.", "Three. Four.", "Five."]
    assert regroup(segments, 5) == ["One. Two. Three. Four. Five."]
    assert regroup(segments, 50) == ["One. Two. Three. Four. Five."]
    with pytest.raises(ValueError):
        regroup(segments, 0)


def test_regroup_keeps_every_sentence():
    data = json.loads(shared_file("snac", "dev.json").read_text(encoding="utf-8"))
    document = next(iter(data.values()))
    segments = [document[str(i)]["text"] for i in range(len(document))]
    sentences = [s for segment in segments for s in split_sentences(segment)]
    for n in (1, 3, 7):
        regrouped = regroup(segments, n)
        assert all(text.strip() == text and text for text in regrouped)
        assert [s for segment in regrouped for s in split_sentences(segment)] == sentences
        assert len(regrouped) == -(-len(sentences) // n)
