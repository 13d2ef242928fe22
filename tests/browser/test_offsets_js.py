"""static/js/offsets.js run in Chromium: UTF-16 <-> code points, word and sentence snapping."""

from __future__ import annotations

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.browser

CASES = [
    # text, selected (UTF-16 start, end) as a substring, expected snapped text
    ("Mr. Fenwick arrives late.", "enwi", "Fenwick"),
    ("Mr. Fenwick arrives late.", " Fenwick ", "Fenwick"),
    ("Fenwick's hat blows away.", "Fenwick", "Fenwick"),
    ("She met Zoë there.", "o", "Zoë"),
    ("🎉 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 wins.", "𝔫𝔦", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"),
    ("Tom and Daisy goes back.", "d Dai", "and Daisy"),
    # never half a character a reader sees as one: a ZWJ family, a flag, a skin tone
    ("Hi 👩‍👩‍👧 there.", "👩‍👩", "👩‍👩‍👧"),
    ("We flew 🇯🇵 home.", "🇯", "🇯🇵"),
    ("Wave 👋🏽 back.", "👋", "👋🏽"),
    # a letter and its combining mark stay together; the mark belongs to its word
    ("The café opens.", "caf", "café"),
    ("The café opens.", "́", "café"),
    # Chinese has no spaces: the browser's word segmenter finds the words
    ("小明今天去了图书馆。", "书馆", "图书馆"),
    ("小明今天去了图书馆。", "今", "今天"),
    # Arabic and Hebrew words, with their marks
    ("ذهبت سارة إلى السوق.", "ار", "سارة"),
    ("שָׁלוֹם עולם", "לו", "שָׁלוֹם"),
]

SENTENCES = [
    (
        "Mr. Fenwick arrives. Dr. Lee waits in the hall! Then they talk.",
        "Lee",
        "Dr. Lee waits in the hall!",
    ),
    ("He left. 🎉 The party began at nine. Nobody came.", "party", "🎉 The party began at nine."),
    ("One sentence without a stop", "without", "One sentence without a stop"),
    ('She said "stop." He went on.', "stop", 'She said "stop."'),
    # full stops that are not ASCII: Chinese needs no space after them, Arabic has its own ?
    ("小明今天去了图书馆。他借了三本书！然后他回家了。", "三本", "他借了三本书！"),
    ("ذهبت سارة إلى السوق. هل اشترت خبزاً؟ نعم اشترت.", "خبزاً", "هل اشترت خبزاً؟"),
    ("「走吧。」他说。然后走了。", "他说", "他说。"),
]


WORD_STOPS = [
    # the keyboard cursor's stops: words and emoji, never punctuation or half a character
    ("🎉🎉 Hi, 👩‍👩‍👧 café!", ["🎉", "🎉", "Hi", "👩‍👩‍👧", "café"]),
    ("小明今天去了图书馆。", ["小明", "今天", "去了", "图书", "馆"]),
    ("ذهبت سارة.", ["ذهبت", "سارة"]),
]


ORIGIN = "http://marginalia.test"


@pytest.fixture
def offsets(pw_page):
    """Load offsets.js as an ES module on a stand-in origin that serves static/ from disk."""

    def serve(route):
        path = route.request.url.removeprefix(ORIGIN)
        if path.startswith("/static/"):
            file = REPO / path.lstrip("/")
            route.fulfill(body=file.read_text("utf-8"), content_type="text/javascript")
        else:
            route.fulfill(body="<!doctype html><title>offsets</title>", content_type="text/html")

    pw_page.route(f"{ORIGIN}/**", serve)
    pw_page.goto(f"{ORIGIN}/")

    def call(name: str, *args):
        return pw_page.evaluate(
            """async ([name, args]) => {
                 const m = await import('/static/js/offsets.js');
                 return m[name](...args);
               }""",
            [name, list(args)],
        )

    return call


def utf16_index(text: str, cp: int) -> int:
    return len(text[:cp].encode("utf-16-le")) // 2


def test_conversions_match_python(offsets):
    text = "a🎉b👩‍👩‍👧c𝔘d é"
    for cp in range(len(text) + 1):
        u = utf16_index(text, cp)
        assert offsets("utf16ToCp", text, u) == cp
        assert offsets("cpToUtf16", text, cp) == u
    assert offsets("cpLength", text) == len(text)


@pytest.mark.parametrize(("text", "picked", "expected"), CASES)
def test_word_snapping(offsets, text, picked, expected):
    start = utf16_index(text, text.index(picked))
    end = start + len(picked.encode("utf-16-le")) // 2
    snapped = offsets("snapToWords", text, start, end)
    assert (
        text.encode("utf-16-le")[2 * snapped["start"] : 2 * snapped["end"]].decode("utf-16-le")
        == expected
    )


@pytest.mark.parametrize(("text", "picked", "expected"), SENTENCES)
def test_sentence_snapping(offsets, text, picked, expected):
    start = utf16_index(text, text.index(picked))
    end = start + len(picked.encode("utf-16-le")) // 2
    snapped = offsets("snapToSentence", text, start, end)
    raw = text.encode("utf-16-le")
    assert raw[2 * snapped["start"] : 2 * snapped["end"]].decode("utf-16-le") == expected


@pytest.mark.parametrize(("text", "expected"), WORD_STOPS)
def test_keyboard_word_stops(offsets, text, expected):
    raw = text.encode("utf-16-le")
    stops = offsets("wordStops", text)
    assert [raw[2 * s["start"] : 2 * s["end"]].decode("utf-16-le") for s in stops] == expected
