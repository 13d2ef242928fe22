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
