"""Jumping with the keyboard in Chromium: "/" then a word's first letters moves the cursor to
the next word on screen starting with them (type-ahead), so a span far into a segment is
marked in a handful of key presses, and the stored span is the word found. Letters typed in
quick succession build the prefix, the same letter again goes on to the next match, a pause
starts a new prefix, the search wraps within the segments on screen, and #kb-status says
where the cursor landed. While a find runs, letters and digits are the find's (no category
is chosen, n does not leave the segment) and Escape ends the find, not the form; outside it
the category keys work as before. Home and End go to the sentence's ends, then the
segment's. Right-to-left Hebrew (vowel points ignored) and Chinese (words as Intl.Segmenter
cuts them) are found the same way, with keys no US keyboard has.

The page's clock is fixed (Playwright's ``clock.set_fixed_time``): whether two keys come
within the type-ahead's second is what the test says, never the machine's load."""

from __future__ import annotations

import datetime

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.formats import DocumentInput
from app.models import Annotation, Assignment
from tests.browser.conftest import VIEWPORT
from tests.browser.helpers import open_assignment, wait_saved
from tests.browser.test_annotate_keyboard import keys, tab_to
from tests.browser.test_annotate_keyboard import said as said_raw
from tests.conftest import BACKENDS, make_database_url, make_study

pytestmark = pytest.mark.browser

LIGHTHOUSE = "Lina lit the lamp at dusk. The keeper slept."
HARBOUR = (
    "At first light the harbour woke slowly and the fishermen counted their nets while gulls "
    "circled above the grey water and children ran along the quay. Then a loud horn announced "
    "the ferry and its old lantern glass rattled in the wind."
)
STORY = [LIGHTHOUSE, HARBOUR, "The ferry left at noon."]
START = datetime.datetime(2030, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)
FIND = "Find: type the first letters of a word (Escape stops)"


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def said(page) -> str:
    """#kb-status without the Unicode isolates around the text's words (their order in a
    line of another direction; checked once below)."""
    return said_raw(page).replace("\u2068", "").replace("\u2069", "")


def shoot(page, artifacts, name: str) -> None:
    """The page at 1440, 1024 and 390 px, the text area keeping the focus (and the find)."""
    for width in (1440, 1024, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"))
    page.set_viewport_size(VIEWPORT)


def pressed_categories(page) -> list[str]:
    return page.eval_on_selector_all(
        '.cat-btn[aria-pressed="true"]', "(buttons) => buttons.map((b) => b.dataset.category)"
    )


def stored(app, token: str) -> list[tuple[int, int, int, str, str]]:
    with app.app_context(), session_scope() as session:
        rows = session.scalars(
            select(Annotation)
            .join(Assignment, Assignment.id == Annotation.assignment_id)
            .where(Assignment.token == token, Annotation.removed_at.is_(None))
            .order_by(Annotation.segment, Annotation.start)
        ).all()
        return [(a.segment, a.start, a.end, a.text, a.category) for a in rows]


def at(segment: int, text: str) -> tuple[int, int, int, str]:
    start = STORY[segment].index(text)
    return segment, start, start + len(text), text


def test_a_span_far_into_a_segment_in_a_few_key_presses(app, live_server, pw_page, artifacts):
    make_study(app, slug="jump", documents=[("harbour", STORY)])
    page = pw_page
    token = open_assignment(page, live_server.url, "jump", "kb-jump")
    page.mouse.move(0, 0)
    tab_to(page, "text-area")
    keys(page, "n")  # on to the long segment; the first one is now context
    page.wait_for_function(
        "() => document.getElementById('progress-text').textContent.startsWith('Segment 2')"
    )
    assert said(page).startswith("segment 2: At first light")
    page.clock.set_fixed_time(START)  # every key below comes within the second, until moved

    # "lantern glass", the 38th and 39th words: seven key presses from the segment's start.
    keys(page, "/")
    assert said(page) == FIND
    keys(page, "l")
    assert said(page) == "“l”: light, segment 2"
    keys(page, "a")
    assert said(page) == "“la”: lantern, segment 2"
    shoot(page, artifacts, "annotate-find")
    keys(page, "Shift+ArrowRight")  # any other key ends the find and does what it does
    assert said(page) == "Selected: “lantern glass”"
    keys(page, "Enter", "2")  # a category's key, after the find: chosen
    assert page.input_value("#span-field") == "lantern glass"
    assert pressed_categories(page) == ["RefE"]
    keys(page, "Control+Enter")
    assert (
        page.locator("#form-hint").inner_text()
        == "Added: Missing reference to an event or object — “lantern glass”"
    )

    # While a find runs, n and digits are the find's: no next segment, no category.
    keys(page, "/", "n")
    assert said(page) == "“n”: nets, segment 2 (from the start again)"
    keys(page, "6")
    assert said(page) == "No word on screen starts with “n6”"
    assert pressed_categories(page) == [] and page.input_value("#span-field") == ""
    keys(page, "Backspace")  # the shorter prefix, looked for again from where the find began
    assert said(page) == "“n”: nets, segment 2 (from the start again)"
    keys(page, "Escape")  # the find's Escape: the cursor stays
    assert said(page) == "nets"
    keys(page, "Enter", "/", "w")
    assert said(page) == "“w”: while, segment 2"
    keys(page, "Escape")  # ... and the form keeps its span
    assert page.input_value("#span-field") == "nets"
    keys(page, "6")  # outside a find a category's key chooses it, as always
    assert pressed_categories(page) == ["GramE"]
    keys(page, "Control+Enter")
    wait_saved(page)
    assert page.locator("#progress-text").inner_text().startswith("Segment 2")

    # The same letter again: the next match, wrapping into the context on screen.
    keys(page, "/", "l")
    assert said(page) == "“l”: loud, segment 2"
    keys(page, "l")
    assert said(page) == "“ll”: lantern, segment 2"
    keys(page, "l")
    assert said(page) == "“lll”: Lina, segment 1 (from the start again)"
    keys(page, "l")
    assert said(page) == "“llll”: lit, segment 1"
    # A pause: the next letter starts a new prefix from the cursor ("lllla" would match none).
    page.clock.set_fixed_time(START + datetime.timedelta(seconds=5))
    keys(page, "a")
    assert said(page) == "“a”: at, segment 1"

    # Home and End: the sentence's ends, pressed again the segment's.
    page.clock.set_fixed_time(START + datetime.timedelta(seconds=10))
    keys(page, "c", "h")
    assert said(page) == "“ch”: children, segment 2"
    keys(page, "End")
    assert said(page) == "quay"
    keys(page, "End")
    assert said(page) == "wind"
    keys(page, "Home")
    assert said(page) == "Then"
    keys(page, "Home")
    assert said(page) == "At"
    keys(page, "Shift+End")
    assert (
        said(page)
        == "Selected: “At first light the harbour woke slowly and the fishermen counted their nets while gulls circled above the grey water and children ran along the quay”"
    )

    assert stored(app, token) == [(*at(1, "nets"), "GramE"), (*at(1, "lantern glass"), "RefE")]
    assert page.js_errors == []


HEBREW = "שָׁלוֹם לכם. הספר הישן מונח על השולחן ליד החלון, ובתוכו מכתב שלא נקרא מעולם."
CHINESE = "小明今天去了图书馆。他借了三本书！然后他回家了。"


def press_char(page, cdp, char: str) -> None:
    """A key no US layout has, as a Hebrew or Chinese keyboard sends it (a trusted event)."""
    cdp.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": char, "text": char})
    cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": char})


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_right_to_left_and_chinese_words_are_found_too(app, live_server, pw_page, artifacts):
    make_study(app, slug="he", documents=[DocumentInput("he-1", [HEBREW], {"lang": "he"})])
    make_study(app, slug="zh", documents=[DocumentInput("zh-1", [CHINESE], {"lang": "zh"})])
    page = pw_page
    cdp = page.context.new_cdp_session(page)
    token = open_assignment(page, live_server.url, "he", "kb-he")
    assert page.locator("#current").get_attribute("dir") == "rtl"
    page.mouse.move(0, 0)
    tab_to(page, "text-area")
    page.clock.set_fixed_time(START)
    keys(page, "/")
    press_char(page, cdp, "מ")
    assert said(page) == "“מ”: מונח, segment 1"
    press_char(page, cdp, "כ")
    assert said(page) == "“מכ”: מכתב, segment 1"
    keys(page, "ArrowLeft")  # right to left: the left arrow reads on from the word found
    assert said(page) == "שלא"
    keys(page, "ArrowRight", "Enter", "1", "Control+Enter")
    wait_saved(page)
    # Vowel points are not typed: "שלו" finds שָׁלוֹם, back at the start.
    keys(page, "/")
    for char in "שלו":
        press_char(page, cdp, char)
    assert said(page) == "“שלו”: שָׁלוֹם, segment 1 (from the start again)"
    isolated = "“\u2068שלו\u2069”: \u2068שָׁלוֹם\u2069, segment 1 (from the start again)"
    assert said_raw(page) == isolated  # each in its own direction in the English line
    shoot(page, artifacts, "annotate-find-hebrew")
    ((segment, start, end, text, _category),) = stored(app, token)
    assert (segment, text, HEBREW[start:end]) == (0, "מכתב", "מכתב")

    token = open_assignment(page, live_server.url, "zh", "kb-zh")
    # Chinese has no spaces: the word is where this browser's segmenter cuts (图书馆 or 图书)
    word = page.evaluate(
        """(text) => [...new Intl.Segmenter("zh", { granularity: "word" }).segment(text)]
            .find((piece) => piece.segment.startsWith("图")).segment""",
        CHINESE,
    )
    assert word.startswith("图书")
    page.mouse.move(0, 0)
    tab_to(page, "text-area")
    keys(page, "/")
    press_char(page, cdp, "图")
    assert said(page) == f"“图”: {word}, segment 1"
    keys(page, "Enter", "1", "Control+Enter")
    wait_saved(page)
    ((segment, start, end, text, _category),) = stored(app, token)
    assert (segment, text, CHINESE[start:end]) == (0, word, word)
