"""Sentence splitting and re-segmenting (``--sentences-per-segment``)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# --- linear (a text of abbreviations once took minutes), and other scripts' terminators ----


def test_quadratic_abbreviation_rescan_is_gone():
    """``"Mr. A " * 16000`` (96 KB; every boundary an abbreviation, so the sentence never
    ends) took 30-50 s: the word before each stop was searched from the sentence's start."""
    import time

    text = "Mr. A " * 16000
    started = time.process_time()
    spans = sentence_spans(text)
    assert time.process_time() - started < 1.0
    assert spans == ((0, len(text) - 1),)


@pytest.mark.parametrize(
    "text, sentences",
    [
        (  # Chinese: no space between sentences; a closing bracket after the full stop
            "今天天气很好。我们去公园散步吧！你想一起来吗？他说：「我不去。」然后就走了。",
            [
                "今天天气很好。",
                "我们去公园散步吧！",
                "你想一起来吗？",
                "他说：「我不去。」",
                "然后就走了。",
            ],
        ),
        (  # Japanese, with a run of terminators
            "東京は大きい都市です。人口は多いです！！本当ですか？はい。",
            ["東京は大きい都市です。", "人口は多いです！！", "本当ですか？", "はい。"],
        ),
        ("第一句．第二句｡第三句", ["第一句．", "第二句｡", "第三句"]),
        (  # Arabic: ASCII full stops before caseless letters, the Arabic question mark
            "ذهبت إلى السوق صباحا. اشتريت الخبز والحليب. هل تريد أن تأتي معي؟ سأعود قبل الظهر.",
            [
                "ذهبت إلى السوق صباحا.",
                "اشتريت الخبز والحليب.",
                "هل تريد أن تأتي معي؟",
                "سأعود قبل الظهر.",
            ],
        ),
        ("میں گھر جا رہا ہوں۔ کل ملیں گے۔", ["میں گھر جا رہا ہوں۔", "کل ملیں گے۔"]),  # Urdu
        (  # Hindi: danda, double danda, and an ASCII question mark
            "मैं स्कूल जाता हूँ। वह घर पर है॥ क्या तुम आओगे? हाँ।",
            ["मैं स्कूल जाता हूँ।", "वह घर पर है॥", "क्या तुम आओगे?", "हाँ।"],
        ),
        ("Il a dit «Bonjour.» Puis il est parti.", ["Il a dit «Bonjour.»", "Puis il est parti."]),
        ("He met Mr. 李 yesterday. 他很好。", ["He met Mr. 李 yesterday.", "他很好。"]),
    ],
)
def test_other_scripts_terminators(text, sentences):
    assert split_sentences(text) == sentences
    for (start, end), sentence in zip(sentence_spans(text), sentences, strict=True):
        assert text[start:end] == sentence


_OLD_BOUNDARY = re.compile(
    r"(?<=[.!?\u2026])([\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(\[]?([^\W_]))|\n"
)
_OLD_WORD_BEFORE_STOP = re.compile(r"([\w.]+)\.$")


def old_sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The splitter as it was when it was quadratic, kept to guard its English."""
    from app.documents.segmenting import ABBREVIATIONS

    spans: list[tuple[int, int]] = []
    start = 0

    def add(begin: int, end: int) -> None:
        chunk = text[begin:end]
        if chunk.strip():
            first = begin + len(chunk) - len(chunk.lstrip())
            spans.append((first, first + len(chunk.strip())))

    for match in _OLD_BOUNDARY.finditer(text):
        if match.group(0) == "\n":
            end = match.start()
        else:
            following = match.group(2)
            if not (following.isupper() or following.isdigit()):
                continue
            end = match.end(1)
            if text[match.start() - 1] == ".":
                word = _OLD_WORD_BEFORE_STOP.search(text, start, match.start())
                if word:
                    token = word.group(1).lower()
                    if token in ABBREVIATIONS or (len(token) == 1 and token.isalpha()):
                        continue
        add(start, end)
        start = match.end()
    add(start, len(text))
    return tuple(spans)


ENGLISH_PIECES = [
    "the",
    "The",
    "cat",
    "Anna",
    "Mr.",
    "Dr.",
    "mrs.",
    "U.S.",
    "e.g.",
    "i.e.",
    "J.",
    "a.",
    "3.5",
    "42",
    "no.",
    "No.",
    "etc.",
    "Ébène",
    "zoë",
    ".",
    "!",
    "?",
    "...",
    "\u2026",
    '"',
    "'",
    "\u201c",
    "\u201d",
    "\u2018",
    "\u2019",
    "(",
    ")",
    "[",
    "]",
    " ",
    "  ",
    "\n",
    "\t",
    ",",
    ";",
    "-",
    "x_y",
    "_",
    "5.",
    "A.",
    "ok?",
    "Yes!",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(ENGLISH_PIECES), max_size=60).map("".join))
def test_english_is_split_as_before(text):
    assert sentence_spans(text) == old_sentence_spans(text)
