"""Document text is shown as inert text; offsets are code points; keyboard shortcuts work."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.browser.helpers import (
    annotation_texts,
    category_button,
    drag_select,
    highlight_text,
    open_assignment,
    wait_loaded,
    wait_saved,
    wait_value,
)
from tests.conftest import make_study

pytestmark = pytest.mark.browser

HOSTILE = [
    'Dr. Vane arrives. <script>window.__xss = 1; alert("script")</script> He sits down.',
    'She writes <img src=x onerror="window.__xss = 2; alert(2)"> on the <b>wall</b> &amp; leaves.',
]


def api_annotations(base_url: str, token: str) -> list[dict]:
    with urllib.request.urlopen(f"{base_url}/api/assignments/{token}") as answer:
        return json.load(answer)["annotations"]


def test_html_in_a_document_is_shown_as_inert_text(app, live_server, pw_page):
    make_study(app, slug="hostile", documents=[("evil", HOSTILE)])
    page = pw_page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    token = open_assignment(page, live_server.url, "hostile", "w1")
    assert page.locator(".cur-text").inner_text() == HOSTILE[0]
    page.click("#next-button")
    assert page.locator(".cur-text").inner_text() == HOSTILE[1]
    assert page.locator("#context .ctx-text").inner_text() == HOSTILE[0]

    # Annotate the hostile markup itself: the list shows it literally too.
    drag_select(page, 1, '<img src=x onerror="window.__xss = 2; alert(2)">')
    page.wait_for_function("() => document.getElementById('span-field').value.startsWith('<img')")
    category_button(page, "GramE").click()
    page.fill("#comment-field", "<script>alert('comment')</script>")
    page.click("#add-button")
    wait_saved(page)
    page.reload()
    wait_loaded(page)
    assert annotation_texts(page) == ['<img src=x onerror="window.__xss = 2; alert(2)">']
    assert "<script>alert('comment')</script>" in page.locator(".annot-comment").inner_text()

    assert dialogs == []
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("#annotate img, #annotate b").count() == 0
    assert page.locator("#annotate script").count() == 0
    [stored] = api_annotations(live_server.url, token)
    assert stored["text"] == '<img src=x onerror="window.__xss = 2; alert(2)">'


ASTRAL = [
    "🎉🎉 The party starts. 👩‍👩‍👧 Zoë greets 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and Ωmega by the door 🚪 at last.",
]


def test_astral_characters_before_a_span_give_code_point_offsets(app, live_server, pw_page):
    make_study(app, slug="astral", documents=[("emoji", ASTRAL)])
    page = pw_page
    token = open_assignment(page, live_server.url, "astral", "w1")
    text = ASTRAL[0]

    # A drag over the inner letters of an astral-plane word snaps to the whole word.
    drag_select(page, 0, "𝔫𝔦𝔠𝔬𝔡")
    wait_value(page, "#span-field", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢")
    page.keyboard.press("7")
    page.click("#add-button")
    drag_select(page, 0, "at last")
    wait_value(page, "#span-field", "at last")
    page.keyboard.press("6")
    page.click("#add-button")
    drag_select(page, 0, "Zoë")
    wait_value(page, "#span-field", "Zoë")
    page.keyboard.press("1")
    page.click("#add-button")
    wait_saved(page)

    stored = {a["text"]: a for a in api_annotations(live_server.url, token)}
    assert set(stored) == {"𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "at last", "Zoë"}
    for span, a in stored.items():
        assert (a["start"], a["end"]) == (text.index(span), text.index(span) + len(span))
        assert text[a["start"] : a["end"]] == span

    # After a reload the highlights are drawn from code-point offsets at the right place.
    page.reload()
    wait_loaded(page)
    for span, a in stored.items():
        assert highlight_text(page, a["client_id"]) == span


def test_keyboard_shortcuts_choose_categories_add_and_cancel(app, live_server, pw_page):
    make_study(
        app,
        slug="keys",
        documents=[
            (
                "k",
                [
                    "Mara opens the gate. The guard salutes her and she walks in.",
                    "Later she returns.",
                ],
            )
        ],
    )
    page = pw_page
    open_assignment(page, live_server.url, "keys", "w1")

    # Every category button shows its key and its definition on hover.
    button = category_button(page, "SceneE")
    assert button.locator("kbd").inner_text() == "3"
    assert "Mark the whole sentence" in button.get_attribute("title")
    assert button.get_attribute("aria-keyshortcuts") == "3"

    drag_select(page, 0, "guard")
    wait_value(page, "#span-field", "guard")
    page.keyboard.press("1")
    assert category_button(page, "CharE").get_attribute("aria-pressed") == "true"
    # A whole-sentence category widens the same selection to its sentence.
    page.keyboard.press("3")
    assert category_button(page, "CharE").get_attribute("aria-pressed") == "false"
    assert page.input_value("#span-field") == "The guard salutes her and she walks in."
    # Back to a span category: the words again.
    page.keyboard.press("2")
    assert page.input_value("#span-field") == "guard"
    # Typing in the comment box is typing, not a shortcut.
    page.click("#comment-field")
    page.keyboard.type("4 guards?")
    assert page.input_value("#comment-field") == "4 guards?"
    assert category_button(page, "RefE").get_attribute("aria-pressed") == "true"
    page.keyboard.press("Control+Enter")
    wait_saved(page)
    assert annotation_texts(page) == ["guard"]
    assert (
        page.locator(".annot-item .annot-cat").inner_text()
        == "Missing reference to an event or object"
    )

    # Escape drops a half-made annotation.
    drag_select(page, 0, "Mara")
    wait_value(page, "#span-field", "Mara")
    page.keyboard.press("4")
    assert page.locator("#paired-row").is_visible()
    page.keyboard.press("Escape")
    assert page.input_value("#span-field") == ""
    assert page.locator("#paired-row").is_hidden()
    assert page.locator(".cat-btn[aria-pressed='true']").count() == 0

    # A span left unadded blocks moving on, with a message, instead of being lost.
    drag_select(page, 0, "gate")
    wait_value(page, "#span-field", "gate")
    page.click("#next-button")
    assert "not added yet" in page.locator("#nav-hint").inner_text()
    assert page.locator("#progress-text").inner_text() == "Segment 1 of 2"


UNGROUPED = """\
name: Two checks
version: 1
instructions: Mark <b>only</b> what you are sure of.
categories:
  - id: Typo
    label: Typo <i>here</i>
    kind: singleton
    color: "#123456"
    shortcut: t
    definition: A misspelt word.
  - id: Clash
    label: Clash
    kind: paired
    definition: Two statements that cannot both hold.
"""


def test_the_page_is_built_from_the_study_taxonomy(app, live_server, pw_page, tmp_path):
    page = pw_page
    make_study(
        app,
        slug="falte",
        taxonomy="taxonomies/falte-demo.yaml",
        documents=[("f", ["She have went."])],
    )
    open_assignment(page, live_server.url, "falte", "w1")
    labels = page.locator(".cat-btn .cat-label").all_inner_texts()
    assert labels == ["Grammar", "Fluency", "Repetition", "Contradiction"]
    assert page.locator(".cat-group-label").all_inner_texts() == ["LANGUAGE", "CONSISTENCY"]
    assert "The span is ungrammatical." in page.locator("#instructions-body").inner_text()
    drag_select(page, 0, "have went")
    wait_value(page, "#span-field", "have went")
    page.keyboard.press("g")
    assert category_button(page, "Grammar").get_attribute("aria-pressed") == "true"
    page.keyboard.press("c")
    assert page.locator("#paired-prompt").inner_text() == (
        "Now select the earlier text that this contradicts."
    )

    # A taxonomy without groups, with markup in its texts, shown as text; colour from the file.
    path = tmp_path / "ungrouped.yaml"
    path.write_text(UNGROUPED, "utf-8")
    make_study(app, slug="plain", taxonomy=str(path), documents=[("p", ["Teh cat sat."])])
    open_assignment(page, live_server.url, "plain", "w1")
    assert page.locator(".cat-group-label").count() == 0
    assert page.locator(".cat-btn .cat-label").all_inner_texts() == ["Typo <i>here</i>", "Clash"]
    assert (
        "Mark <b>only</b> what you are sure of." in page.locator("#instructions-body").inner_text()
    )
    assert page.locator("#annotate i, #annotate b").count() == 0
    color = category_button(page, "Typo").evaluate(
        "(el) => getComputedStyle(el).getPropertyValue('--cat').trim()"
    )
    assert color == "#123456"
