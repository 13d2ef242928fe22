"""Screenshots of the worker pages on a real demo summary (wide and narrow), for design review.

The images land in tests/.artifacts/ (git-ignored). The assertions check the layout promises
the screenshots are meant to show: the current segment is set apart from the context, the
form and the navigation are on screen at 1280x800, nothing overflows a narrow screen.
"""

from __future__ import annotations

import json

import pytest

from app.formats import DocumentInput
from tests.browser.helpers import (
    category_button,
    drag_select,
    open_assignment,
    wait_saved,
    wait_value,
)
from tests.conftest import REPO

pytestmark = pytest.mark.browser


def demo_segments(name: str = "demo-lighthouse") -> list[str]:
    data = json.loads(
        (REPO / "app" / "documents" / "demo_data" / "documents.json").read_text("utf-8")
    )
    doc = data[name]
    return [doc[k]["text"] for k in sorted(doc, key=int)]


def make_demo_study(app) -> None:
    """The lighthouse demo summary with spaCy entity cues (when a pipeline loads)."""
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.entities import load_pipeline

    nlp = load_pipeline()
    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "demo", REPO / "taxonomies" / "snac.yaml")
        import_documents(session, study, [DocumentInput("lighthouse", demo_segments())], nlp=nlp)


def box(page, selector: str) -> dict:
    return page.locator(selector).bounding_box()


def test_screenshots_mid_document_wide_and_narrow(app, live_server, pw_page, artifacts):
    make_demo_study(app)
    page = pw_page
    open_assignment(page, live_server.url, "demo", "designer")
    page.click("summary")  # the worker has read the instructions and closes them
    for _ in range(4):
        page.click("#next-button")
    drag_select(page, 4, "Dorrance")
    wait_value(page, "#span-field", "Dorrance")
    category_button(page, "CharE").click()
    page.click("#add-button")
    page.click("#next-button")
    drag_select(page, 5, "He storms")
    wait_value(page, "#span-field", "He storms")
    category_button(page, "CorefE").click()
    page.fill("#comment-field", "Haldane or Sully?")
    page.click("#add-button")
    drag_select(page, 5, "quarrel in the boathouse")
    wait_value(page, "#span-field", "quarrel in the boathouse")
    category_button(page, "RefE").click()
    wait_saved(page)
    page.mouse.move(640, 790)
    page.screenshot(path=str(artifacts / "annotate-1280x800.png"))

    # At 1280x800, where moving on left the page, the current segment, the category buttons, Add and Next are all on screen.
    for selector in ("#current", "#add-button", "#next-button", '.cat-btn[data-category="CorefE"]'):
        b = box(page, selector)
        assert b["y"] >= 0 and b["y"] + b["height"] <= 800, selector
    # The current segment is set apart: larger type and a different surface than the context.
    looks = page.evaluate(
        """() => {
          const style = (sel) => getComputedStyle(document.querySelector(sel));
          return {
            ctxSize: parseFloat(style('.ctx-text').fontSize),
            curSize: parseFloat(style('.cur-text').fontSize),
            ctxBg: style('#context').backgroundColor,
            curBg: style('#current').backgroundColor,
            ctxInk: style('.ctx-text').color,
            curInk: style('.cur-text').color,
          };
        }"""
    )
    assert looks["curSize"] > looks["ctxSize"]
    assert looks["curBg"] != looks["ctxBg"]
    assert looks["curInk"] != looks["ctxInk"]

    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(artifacts / "annotate-390-narrow.png"), full_page=True)
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    for selector in ("#current", "#annot-form", "#next-button"):
        b = box(page, selector)
        assert b["x"] >= 0 and b["x"] + b["width"] <= 390, selector


def test_start_page_asks_for_a_worker_id_and_leads_to_the_document(
    app, live_server, pw_page, artifacts
):
    from tests.conftest import make_study

    make_study(app, slug="intro", documents=[("d1", ["One.", "Two."])])
    page = pw_page
    page.goto(f"{live_server.url}/s/intro")
    page.screenshot(path=str(artifacts / "start-1280x800.png"))
    page.get_by_label("Worker ID").fill("W-123")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/a/*")
    page.wait_for_selector("#annotate:not(.is-loading)")
    assert page.locator("#progress-text").inner_text() == "Segment 1 of 2"
    page.click("#next-button")
    page.click("#submit-button")
    page.wait_for_url("**/done")
    assert page.get_by_role("heading", name="Thank you!").is_visible()
    assert page.locator("#completion-code").inner_text().strip()
    page.screenshot(path=str(artifacts / "done-1280x800.png"))
