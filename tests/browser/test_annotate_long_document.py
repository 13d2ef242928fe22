"""A book-length document on the annotate page, in Chromium: at segment 100 of
120 the context draws the 20 segments before the current one, not all 100, and still shows
and links everything: scrolling up draws earlier segments (the reading position kept), the
jump menu and an entity's first mention draw the segment they lead to, a paired span in an
early segment is highlighted there and lights up with its list entry, the keyboard cursor
walks back past the drawn window, and n moves the window along. The move and add costs at
segment 1,500 of 2,000 are measured by bench/long_document.py."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from app.db import session_scope
from app.formats import DocumentInput
from app.models import Assignment
from tests.browser.helpers import next_frame
from tests.conftest import REPO
from tests.helpers import annotation_body, open_token

pytestmark = pytest.mark.browser

SEGMENTS = [
    f"Part {n} begins when Anna reaches the harbour at dawn. The boat number {n} waits there."
    for n in range(1, 121)
]
AT = 99  # 0-based: the worker is at segment 100
WINDOW = 20


@pytest.fixture(scope="module")
def nlp():
    from app.entities import load_pipeline

    return load_pipeline()


def arrive(app, client, nlp) -> str:
    """The study "book" with the document, a worker at segment 100 holding one paired
    annotation whose earlier span lies in segment 11 (far outside the drawn window)."""
    from app.documents.studies import create_study, import_documents

    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session, "book", REPO / "taxonomies" / "snac.yaml", suggestions="off"
        )
        import_documents(session, study, [DocumentInput("book", SEGMENTS)], nlp=nlp)
    token = open_token(client, "reader", "book", study="book")
    with app.app_context(), session_scope() as session:
        session.execute(update(Assignment).values(current_segment=AT))
    earlier = annotation_body(10, "harbour", "RepE", texts=SEGMENTS)
    body = annotation_body(
        AT,
        "harbour",
        "RepE",
        texts=SEGMENTS,
        client_id="pair-1",
        paired={k: earlier[k] for k in ("segment", "start", "end", "text")},
    )
    answer = client.post(f"/api/assignments/{token}/annotations", json=body)
    assert answer.status_code == 201, answer.get_json()
    return token


def blocks(page) -> list[int]:
    return page.evaluate(
        "() => [...document.querySelectorAll('#context .ctx-seg')].map((b) => +b.dataset.block)"
    )


def said_first(page) -> int:
    """The first context segment the page says it drew: the "show earlier" button offers the
    window that ends just before it ("Show earlier segments (60–79)": segment 80 is drawn
    first, 0-based 79), and is hidden once segment 1 is drawn."""
    more = page.locator("#context .ctx-more")
    if not more.is_visible():
        return 0
    label = more.inner_text()
    assert label.startswith("Show earlier segments ("), label
    return int(label.rstrip(")").split("–")[1])


def assert_window(page, asked: int, current: int = AT) -> list[int]:
    """What must hold whatever the fonts, the window's height and the timing: the page draws
    one run of segments up to the current one, the one it says it drew, from no later than
    ``asked`` (the reader's request: the 20 segments before the current one, a segment
    jumped to) and no earlier than one more window before it."""
    drawn = blocks(page)
    assert drawn == list(range(said_first(page), current)), drawn
    assert asked - WINDOW <= drawn[0] <= asked, (asked, drawn[0])
    return drawn


# The page's layout on other machines changes how far the drawn segments reach up the page,
# never which are drawn. At 1280x800 each segment of this document takes two lines (DejaVu
# Serif, what the serif stack falls back to where .ci/install-system-deps.sh installed the
# fonts) and the window's 20 segments reach far above the viewport; at 1440x900 they take
# one line and the window reaches less than 300 px above it (so it would at 1280 with a
# serif font narrow enough to set a segment on one line), where the button used to press
# itself on load; a phone and a wide fallback font (DejaVu Sans Mono) wrap them again.
LAYOUTS = {
    "1280x800": ({"width": 1280, "height": 800}, None),
    "1440x900": ({"width": 1440, "height": 900}, None),
    "390x844": ({"width": 390, "height": 844}, None),
    "1440x900-mono": ({"width": 1440, "height": 900}, '"DejaVu Sans Mono"'),
}


@pytest.fixture(params=list(LAYOUTS))
def laid_out(request, pw_page):
    """``pw_page`` at one of :data:`LAYOUTS`: its viewport, and its text font replaced in the
    stylesheet as served (the page's CSP refuses inline styles)."""
    viewport, font = LAYOUTS[request.param]
    pw_page.set_viewport_size(viewport)
    if font is not None:

        def other_font(route):
            answer = route.fetch()
            css = answer.text() + f"\n:root {{ --text-font: {font}; }}\n"
            route.fulfill(response=answer, body=css)

        pw_page.route("**/marginalia.css", other_font)
    return pw_page


def open_page(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#annotate:not(.is-loading)")
    page.wait_for_selector(".cur-text .seg-text")
    next_frame(page)  # a press of its own would come in the frames after the first layout


def test_the_context_draws_what_is_seen_and_still_links(app, client, live_server, laid_out, nlp):
    token = arrive(app, client, nlp)
    page = laid_out
    open_page(page, f"{live_server.url}/a/{token}")
    # a reader who has not scrolled has exactly the window: the button never presses itself
    assert blocks(page) == list(range(AT - WINDOW, AT))
    more = page.locator("#context .ctx-more")
    assert more.is_visible() and more.inner_text() == "Show earlier segments (60–79)"
    assert page.locator("#context [data-paired]").count() == 0  # segment 11 is not drawn

    # the jump menu draws the segment it leads to; the pair is highlighted there
    page.select_option("#segment-jump", "10")
    page.wait_for_function("() => document.querySelector('#context [data-block=\"10\"]')")
    next_frame(page)
    assert_window(page, asked=10)  # (scrolled up near the button: 0-9 may come too)
    piece = page.locator('#context [data-block="10"] [data-paired~="pair-1"]')
    assert piece.inner_text() == "harbour"
    page.locator("#annotation-list .annot-item").first.hover()
    assert "hl-hot" in (piece.get_attribute("class") or "")
    assert page.locator(".cur-text .hl-hot").count() >= 1

    # an entity's first mention lies in segment 1: the panel's entry draws it and goes there
    open_page(page, f"{live_server.url}/a/{token}")  # the window as it opens again
    assert blocks(page) == list(range(AT - WINDOW, AT))
    anna = page.locator(".entity-btn", has_text="Anna")
    assert anna.count() == 1
    anna.click()
    page.wait_for_function("() => document.querySelector('#context [data-block=\"0\"]')")
    focused = page.evaluate("() => document.activeElement.closest('[data-block]')?.dataset.block")
    assert focused == "0"
    assert_window(page, asked=0)

    # a move draws the window after the new current segment again, and only that
    page.mouse.click(5, 5)
    page.keyboard.press("n")
    page.wait_for_function(f"() => document.querySelector('.cur-text [data-seg=\"{AT + 1}\"]')")
    next_frame(page)
    assert blocks(page) == list(range(AT + 1 - WINDOW, AT + 1))


def test_scrolling_up_draws_earlier_segments_where_the_reader_is(
    app, client, live_server, laid_out, nlp
):
    token = arrive(app, client, nlp)
    page = laid_out
    open_page(page, f"{live_server.url}/a/{token}")
    assert blocks(page) == list(range(AT - WINDOW, AT))
    # the reader scrolls up with the mouse wheel until the window's first segment is in view,
    # just below the button: it presses itself
    first = page.locator(f'#context [data-block="{AT - WINDOW}"]')
    viewport = page.viewport_size
    page.mouse.move(viewport["width"] // 2, viewport["height"] // 2)
    page.mouse.wheel(0, first.bounding_box()["y"] - 50)
    page.wait_for_function(
        f"() => document.querySelectorAll('#context .ctx-seg').length > {WINDOW}"
    )
    next_frame(page)
    assert_window(page, asked=AT - 2 * WINDOW)
    top = first.bounding_box()["y"]
    assert -1 <= top <= viewport["height"], top  # still on screen: not pushed away


def test_the_keyboard_cursor_walks_back_past_the_drawn_window(
    app, client, live_server, pw_page, nlp
):
    token = arrive(app, client, nlp)
    page = pw_page
    open_page(page, f"{live_server.url}/a/{token}")
    page.focus("#text-area")
    page.keyboard.press("Home")
    for _ in range(2 * (WINDOW + 2)):  # two sentences a segment: 22 segments back
        page.keyboard.press("ArrowUp")
    found = page.evaluate(
        "() => +document.querySelector('#context .kb-sel').closest('[data-block]').dataset.block"
    )
    assert found < AT - WINDOW and found in blocks(page)
    assert "Part" in page.locator("#kb-status").inner_text()
