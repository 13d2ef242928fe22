"""Entity cues (hover, focus, panel) and detector suggestions on the annotate page."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.formats import DocumentInput
from tests.browser.helpers import annotation_texts, open_assignment, wait_loaded, wait_saved
from tests.conftest import make_study

pytestmark = pytest.mark.browser

STORY = [
    "Wren Callister keeps the lighthouse on Skarra with her son Pim.",
    "A storm wrecks a schooner and Wren rescues Captain Haldane.",
    "🌊 Haldane hides a brass tube while Pim watches; Wren grows suspicious.",
]


def clusters(marks: list[list[tuple[str, str]]]) -> list[list[tuple[int, int, str]]]:
    """(name, cluster) per segment -> code-point (start, end, cluster) marks."""
    out = []
    for text, seg_marks in zip(STORY, marks, strict=True):
        out.append([(text.index(name), text.index(name) + len(name), c) for name, c in seg_marks])
    return out


def hot_texts(page) -> list[tuple[int, str]]:
    """(segment, text) of every mention currently lit up."""
    found = page.evaluate(
        """() => [...document.querySelectorAll('.mention.entity-hot')].map(
             (el) => [Number(el.closest('.seg-text').dataset.seg), el.textContent])"""
    )
    return [tuple(x) for x in found]


def test_hovering_a_name_lights_up_its_earlier_mentions_and_the_panel_lists_people(
    app, live_server, pw_page, artifacts
):
    marks = clusters(
        [
            [("Wren Callister", "1"), ("Pim", "2")],
            [("Wren", "1"), ("Captain Haldane", "3")],
            [("Haldane", "3"), ("Pim", "2"), ("Wren", "1")],
        ]
    )
    make_study(app, slug="cues", documents=[DocumentInput("story", STORY, entity_clusters=marks)])
    page = pw_page
    open_assignment(page, live_server.url, "cues", "w1")
    panel = page.locator("#entity-list .entity-btn")
    assert [t.split("\n")[0] for t in panel.all_inner_texts()] == ["Wren Callister", "Pim"]

    page.click("#next-button")
    page.click("#next-button")
    names = panel.locator(".entity-name").all_inner_texts()
    metas = panel.locator(".entity-meta").all_inner_texts()
    assert names == ["Wren Callister", "Pim", "Captain Haldane"]
    assert metas[0].startswith("first in segment 1")
    assert metas[1].startswith("first in segment 1")
    assert metas[2].startswith("first in segment 2")

    # Mentions after the emoji sit on the right words.
    current = page.locator(".cur-text .mention[data-mention-start]")
    assert current.all_inner_texts() == ["Haldane", "Pim", "Wren"]

    # Hover "Wren" in the current segment: every Wren mention lights up, context included.
    page.locator(".cur-text .mention", has_text="Wren").hover()
    assert sorted(hot_texts(page)) == [(0, "Wren Callister"), (1, "Wren"), (2, "Wren")]
    assert "entity-hot" in panel.filter(has_text="Wren Callister").get_attribute("class")
    page.screenshot(path=str(artifacts / "annotate-entity-hover-1280x800.png"))
    page.mouse.move(5, 790)
    assert hot_texts(page) == []

    # Keyboard focus does the same.
    page.locator(".cur-text .mention", has_text="Haldane").focus()
    assert sorted(hot_texts(page)) == [(1, "Captain Haldane"), (2, "Haldane")]

    # Clicking a panel entry scrolls to and focuses the first mention.
    panel.filter(has_text="Pim").click()
    focused = page.evaluate(
        """() => { const el = document.activeElement;
                   return [Number(el.closest('.seg-text').dataset.seg), el.textContent]; }"""
    )
    assert focused == [0, "Pim"]
    assert page.locator("#context .mention.flash").inner_text() == "Pim"


def add_suggestions(app, rows: list[tuple[int, str, str]]) -> list[int]:
    """Store detector suggestions (segment, span text, category) for the only document."""
    from app.db import session_scope
    from app.models import Document, Suggestion

    with app.app_context(), session_scope() as session:
        document = session.scalars(select(Document)).one()
        stored = []
        for segment, text, category in rows:
            start = STORY[segment].index(text)
            row = Suggestion(
                document_id=document.id,
                segment=segment,
                start=start,
                end=start + len(text),
                text=text,
                category=category,
                score=0.9,
                detector="test",
                detector_version="1",
            )
            session.add(row)
            stored.append(row)
        session.flush()
        return [row.id for row in stored]


def test_suggestions_can_be_used_or_dismissed_and_their_fate_is_logged(
    app, live_server, pw_page, artifacts
):
    from app.db import session_scope
    from app.models import Annotation, SuggestionEvent

    make_study(app, slug="hints", documents=[("story", STORY)], suggestions="shown")
    pim, lighthouse, later = add_suggestions(
        app, [(0, "Pim", "CharE"), (0, "the lighthouse", "RefE"), (1, "Captain Haldane", "CharE")]
    )
    page = pw_page
    open_assignment(page, live_server.url, "hints", "w1")
    underlined = page.locator(".cur-text .suggestion")
    assert underlined.all_inner_texts() == ["the lighthouse", "Pim"]
    assert (
        page.locator(f'.suggestion-end[data-suggestion="{pim}"]').get_attribute("data-label")
        == "CharE"
    )
    assert page.locator("#hint-list .hint-item").count() == 2
    page.screenshot(path=str(artifacts / "annotate-suggestions-1280x800.png"))

    # Clicking the underline applies nothing (it is text to select); Use fills the form and
    # the worker still decides with Add.
    page.locator(f'.cur-text [data-suggestion="{pim}"]').click()
    assert page.input_value("#span-field") == ""
    page.locator(f'#hint-list [data-suggestion-item="{pim}"] button', has_text="Use").click()
    assert page.input_value("#span-field") == "Pim"
    assert page.locator('.cat-btn[data-category="CharE"]').get_attribute("aria-pressed") == "true"
    assert annotation_texts(page) == []
    page.click("#add-button")
    page.locator(
        f'#hint-list [data-suggestion-item="{lighthouse}"] button', has_text="Dismiss"
    ).click()
    assert page.locator(".cur-text .suggestion").count() == 0
    assert page.locator("#hints").is_hidden()
    wait_saved(page)

    page.reload()
    wait_loaded(page)
    assert page.locator(".cur-text .suggestion").count() == 0
    assert annotation_texts(page) == ["Pim"]
    # The shown and dismissed events ride in the next move's position update.
    page.click("#next-button")
    wait_saved(page)
    with app.app_context(), session_scope() as session:
        [annotation] = session.scalars(select(Annotation)).all()
        assert annotation.suggestion_id == pim
        events = sorted(
            (e.suggestion_id, e.event) for e in session.scalars(select(SuggestionEvent))
        )
    assert events == sorted(
        [(pim, "shown"), (lighthouse, "shown"), (pim, "accepted"), (lighthouse, "dismissed")]
    )
    assert later not in {s for s, _ in events}  # segment 2's "shown" waits for the next move


def test_a_failing_suggestion_log_does_not_hold_back_annotations(app, live_server, pw_page):
    from app.db import session_scope
    from app.models import Annotation

    make_study(app, slug="hints", documents=[("story", STORY)], suggestions="shown")
    [pim] = add_suggestions(app, [(0, "Pim", "CharE")])
    page = pw_page
    failures: list[str] = []

    def broken(route):
        failures.append(route.request.url)
        route.fulfill(status=500, json={"error": "boom"})

    page.route("**/events", broken)
    open_assignment(page, live_server.url, "hints", "w1")
    page.locator(f'#hint-list [data-suggestion-item="{pim}"] button', has_text="Use").click()
    page.click("#add-button")
    wait_saved(page, timeout=20_000)
    assert failures, "the shown/accepted events were attempted"
    with app.app_context(), session_scope() as session:
        [annotation] = session.scalars(select(Annotation)).all()
        assert (annotation.text, annotation.suggestion_id) == ("Pim", pim)
