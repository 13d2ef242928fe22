"""Any character and any script in Chromium, on SQLite and Postgres.

Offsets stay Unicode code points end to end while the page works in UTF-16: spans after
emoji (astral, skin tones, ZWJ families, flags), combining marks, astral letters and Chinese
are marked with the mouse and with the keyboard; the stored offsets index the stored text in
Python, the highlights come back at the same places after a reload, and the CSV and JSON
Lines exports and a Label Studio and brat round trip keep them. Arabic text (a study whose
``lang`` is ``ar``) is laid out right to left and the keyboard's left arrow reads forward.
Screenshots of both pages at 1440, 1024 and 390 px go to tests/.artifacts/.
"""

from __future__ import annotations

import csv
import io
import json
import urllib.request

import pytest

from app.db import session_scope
from app.documents.studies import get_study
from app.formats import DocumentInput, iter_export
from tests.browser.helpers import (
    category_button,
    drag_select,
    highlight_text,
    open_assignment,
    wait_loaded,
    wait_saved,
    wait_value,
)
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.test_interchange_roundtrip import annotations, export_to, new_study

pytestmark = pytest.mark.browser

FAMILY = "👩\u200d👩\u200d👧"
CAFE = "cafe\u0301"  # e + a combining acute accent
MIXED = [
    f"🎉🎉 The party starts. {FAMILY} Zoë greets 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 at the {CAFE} by the door 🚪 at last.",
    "小明今天去了图书馆。他借了三本书！然后他回家了。",
    "Wave 👋🏽 back, said the 🇯🇵 pilot to Ωmega.",
]
ARABIC = [
    "كانت سلمى تحرس المنارة على الجرف. يزورها أخوها طارق في الربيع.",
    "في الشتاء انطفأ المصباح مرتين. صعدت سلمى الدرج وأصلحته وحدها.",
    "لم يعد طارق أبداً. وبقيت المنارة مظلمة حتى الصيف.",
]
WIDTHS = (1440, 1024, 390)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def stored(base_url: str, token: str) -> list[dict]:
    with urllib.request.urlopen(f"{base_url}/api/assignments/{token}") as answer:
        return json.load(answer)["annotations"]


def mouse(page, segment: int, needle: str, expected: str, key: str) -> None:
    drag_select(page, segment, needle)
    wait_value(page, "#span-field", expected)
    page.keyboard.press(key)
    page.click("#add-button")


def keyboard(page, *keys: str) -> None:
    page.focus("#text-area")
    for key in keys:
        page.keyboard.press(key)


def shoot(page, artifacts, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})


def test_emoji_marks_and_chinese_keep_code_points_through_mouse_keyboard_and_files(
    app, live_server, pw_page, artifacts, tmp_path, request
):
    make_study(app, slug="chars", documents=[("mixed", MIXED)], annotators_per_doc=2)
    page = pw_page
    token = open_assignment(page, live_server.url, "chars", "w-chars")

    # The mouse: inside a word with a combining mark, inside an astral word, over a family.
    mouse(page, 0, "caf", CAFE, "6")
    mouse(page, 0, "𝔫𝔦", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "7")
    mouse(page, 0, FAMILY, FAMILY, "1")
    # The keyboard: 15 stops from the start (each emoji is one, the family too) is the door.
    keyboard(page, "Home", *["ArrowRight"] * 15, "Shift+ArrowRight", "Shift+ArrowRight")
    assert page.locator("#kb-status").inner_text() == "Selected: “🚪 at last”"
    page.keyboard.press("Enter")
    assert page.input_value("#span-field") == "🚪 at last"
    page.keyboard.press("2")
    page.keyboard.press("Control+Enter")
    wait_saved(page)

    page.keyboard.press("n")
    page.wait_for_selector('.cur-text .seg-text[data-seg="1"]')
    mouse(page, 1, "书馆", "图书馆", "2")  # half a word: the whole word
    keyboard(page, "Home", "ArrowRight", "Enter", "1", "Control+Enter")  # 今天
    keyboard(page, "ArrowDown", "ArrowRight", "ArrowRight", "Enter", "6", "Control+Enter")  # 三本
    wait_saved(page)

    page.keyboard.press("n")
    page.wait_for_selector('.cur-text .seg-text[data-seg="2"]')
    keyboard(page, "Home", "ArrowRight", "Enter", "6", "Control+Enter")  # a skin-toned hand
    keyboard(page, "End", *["ArrowLeft"] * 3, "Enter", "7", "Control+Enter")  # the flag
    mouse(page, 2, "Ωme", "Ωmega", "1")
    wait_saved(page)
    shoot(page, artifacts, "annotate-emoji")

    expected = {
        (0, CAFE),
        (0, "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"),
        (0, FAMILY),
        (0, "🚪 at last"),
        (1, "图书馆"),
        (1, "今天"),
        (1, "三本"),
        (2, "👋🏽"),
        (2, "🇯🇵"),
        (2, "Ωmega"),
    }
    rows = stored(live_server.url, token)
    assert {(a["segment"], a["text"]) for a in rows} == expected
    for a in rows:
        text = MIXED[a["segment"]]
        assert (a["start"], a["end"]) == (
            text.index(a["text"]),
            text.index(a["text"]) + len(a["text"]),
        )
        assert text[a["start"] : a["end"]] == a["text"]

    # After a reload the highlights sit on the same characters.
    page.reload()
    wait_loaded(page)
    for a in rows:
        if a["segment"] == 2:
            assert highlight_text(page, a["client_id"]) == a["text"]

    page.click("#submit-button")
    page.wait_for_url(f"{live_server.url}/a/{token}/done")
    spans = {(a["segment"], a["start"], a["end"], a["text"]) for a in rows}
    with app.app_context(), session_scope() as session:
        study = get_study(session, "chars")
        as_csv = "".join(iter_export(session, study, "csv"))
        as_jsonl = "".join(iter_export(session, study, "jsonl"))
    from_csv = {
        (int(r["segment"]), int(r["span_start"]), int(r["span_end"]), r["span_text"])
        for r in csv.DictReader(io.StringIO(as_csv))
    }
    from_jsonl = {
        (r["segment"], r["span_start"], r["span_end"], r["span_text"])
        for r in map(json.loads, as_jsonl.splitlines())
    }
    assert from_csv == from_jsonl == spans
    source = annotations(app, "chars")
    for fmt, name in (("labelstudio", "tasks.json"), ("brat", "")):
        folder = export_to(app, "chars", fmt, tmp_path / fmt)
        new_study(app, f"from-{fmt}", folder / name if name else folder, fmt)
        assert annotations(app, f"from-{fmt}") == source, fmt


def test_arabic_is_laid_out_right_to_left_and_marked_either_way(
    app, live_server, pw_page, artifacts
):
    hebrew = DocumentInput("he-1", ["שָׁלוֹם עולם. ספר טוב."], {"lang": "he"})
    make_study(app, slug="rtl", documents=[("ar-1", ARABIC)])
    make_study(app, slug="rtl-he", documents=[hebrew])
    with app.app_context(), session_scope() as session:
        for slug in ("rtl", "rtl-he"):
            study = get_study(session, slug)
            study.title = "قصص المنارة"
            study.settings = {**(study.settings or {}), "lang": "ar"}
    page = pw_page
    token = open_assignment(page, live_server.url, "rtl", "w-ar")
    current = page.locator("#current")
    assert (current.get_attribute("dir"), current.get_attribute("lang")) == ("rtl", "ar")
    assert page.evaluate("() => document.documentElement.lang") == "en"  # the chrome: English
    box = current.evaluate(
        "(el) => [getComputedStyle(el).borderRightWidth, getComputedStyle(el).borderLeftWidth]"
    )
    assert box == ["5px", "1px"]  # the accent bar on the reading side
    assert page.input_value("#span-field") == ""
    assert page.locator("#span-field").get_attribute("dir") == "rtl"

    # The mouse: part of a word, snapped to the word.
    mouse(page, 0, "منار", "المنارة", "2")
    # The keyboard: in right-to-left text the left arrow goes forward, to the next word.
    keyboard(page, "Home", "ArrowLeft")
    assert page.locator("#kb-status").inner_text() == "سلمى"
    page.keyboard.press("Enter")
    page.keyboard.press("1")
    page.keyboard.press("Control+Enter")
    wait_saved(page)
    page.keyboard.press("n")
    page.wait_for_selector('.cur-text .seg-text[data-seg="1"]')
    # A paired span back into the context, by keyboard, right to left (End twice: the first
    # sentence's end, then the segment's).
    keyboard(
        page, "End", "End", "Enter", "4", "ArrowUp", "ArrowUp", "ArrowUp", "Shift+End", "Enter"
    )
    assert page.input_value("#paired-field") == "يزورها أخوها طارق في الربيع"
    page.keyboard.press("Control+Enter")
    wait_saved(page)
    assert page.locator("#context").get_attribute("dir") == "rtl"
    page.hover("#annotation-list .annot-item:last-child")
    shoot(page, artifacts, "annotate-arabic")

    rows = stored(live_server.url, token)
    got = {(a["segment"], a["text"], (a["paired"] or {}).get("text")) for a in rows}
    assert got == {
        (0, "المنارة", None),
        (0, "سلمى", None),
        (1, "وحدها", "يزورها أخوها طارق في الربيع"),
    }
    for a in rows:
        text = ARABIC[a["segment"]]
        assert text[a["start"] : a["end"]] == a["text"]

    # A document's own metadata wins over the study's language.
    open_assignment(page, live_server.url, "rtl-he", "w-he")
    assert (current.get_attribute("dir"), current.get_attribute("lang")) == ("rtl", "he")
    assert category_button(page, "CharE").is_visible()


def test_the_page_speaks_german_when_the_study_says_so(app, live_server, pw_page, artifacts):
    make_study(
        app,
        slug="deutsch",
        documents=[("d-1", ["Mara hütet den Leuchtturm.", "Ihr Bruder kommt."])],
    )
    with app.app_context(), session_scope() as session:
        study = get_study(session, "deutsch")
        study.title = "Leuchtturmgeschichten"
        study.settings = {**(study.settings or {}), "lang": "de"}
    page = pw_page
    open_assignment(page, live_server.url, "deutsch", "w-de")
    assert page.evaluate("() => document.documentElement.lang") == "de"
    assert page.locator("#progress-text").inner_text() == "Abschnitt 1 von 2"
    assert page.locator("#next-button").inner_text() == "Keine weiteren Fehler – nächster Abschnitt"
    mouse(page, 0, "Leucht", "Leuchtturm", "2")
    wait_saved(page)
    assert page.locator("#save-status").inner_text().endswith("Gespeichert")
    assert page.locator("#form-hint").inner_text().startswith("Hinzugefügt: ")
    assert page.locator("#annotation-list .annot-seg").inner_text() == "Abschnitt 1 (dieser)"
    shoot(page, artifacts, "annotate-german")
