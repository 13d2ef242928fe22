"""Attributes and multi-label marks: on the annotate page a worker gives one mark several
categories (keys toggle them in a multi-label taxonomy), answers its attributes with the keyboard, links it to
another span, and the mark is stored as one; screenshots at 1440, 1024 and 390 px."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.browser import axe
from tests.browser.helpers import (
    category_button,
    drag_select,
    log_in,
    open_assignment,
    wait_saved,
    wait_value,
)
from tests.conftest import make_study

pytestmark = pytest.mark.browser

TAXONOMY = """name: Summary confusion
multi_label: true
categories:
  - id: omission
    label: Entity omission
    kind: relation
    shortcut: "1"
    definition: Someone appears without what a reader needs to know.
    attributes:
      - {id: severity, kind: choice, values: [minor, major, critical], required: true}
      - {id: confidence, label: How sure, kind: scale, min: 1, max: 5}
  - id: language
    label: Language
    kind: relation
    shortcut: "2"
    definition: The wording gets in the way.
  - id: duplication
    label: Duplication
    kind: relation
    shortcut: "3"
    definition: The same information again.
"""
SEGMENTS = [
    "Ann met Bo at the station. Bo left the the town at dawn.",
    "Later Cy came back to the town. The end.",
]


def test_a_multi_label_mark_with_attributes_by_keyboard(
    app, live_server, pw_page, artifacts, tmp_path, axe_source
):
    path = tmp_path / "summary.yaml"
    path.write_text(TAXONOMY, encoding="utf-8")
    make_study(
        app, slug="sum", taxonomy=str(path), documents=[("doc-1", SEGMENTS)], suggestions="off"
    )
    page = pw_page
    page.set_viewport_size({"width": 1440, "height": 900})
    open_assignment(page, live_server.url, "sum", "worker-1")
    drag_select(page, 0, "Bo left the the town")
    wait_value(page, "#span-field", "Bo left the the town")
    page.keyboard.press("1")
    page.keyboard.press("2")
    assert category_button(page, "omission").get_attribute("aria-pressed") == "true"
    assert category_button(page, "language").get_attribute("aria-pressed") == "true"
    assert page.locator("#add-button").is_disabled()  # severity is required
    page.focus('input[name="attribute-severity"][value="minor"]')
    page.keyboard.press("Space")
    page.keyboard.press("ArrowRight")  # a radio group: the arrow moves and chooses
    assert (
        page.locator('input[name="attribute-severity"]:checked').get_attribute("value") == "major"
    )
    drag_select(page, 0, "Ann met Bo")  # the linked span: anywhere, here before it
    wait_value(page, "#paired-field", "Ann met Bo")
    assert page.locator("#paired-row label").inner_text().startswith("3. Linked span")
    assert axe.check(page, "annotate-attributes") == []  # WCAG 2.2 AA: nothing serious
    for width, height in ((1440, 900), (1024, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(artifacts / f"annotate-attributes-form-{width}.png"))
    page.set_viewport_size({"width": 1440, "height": 900})
    page.keyboard.press("Control+Enter")
    wait_saved(page)
    item = page.locator("#annotation-list .annot-item").first
    assert "Entity omission + Language" in item.inner_text()
    assert "severity: major" in item.inner_text()
    for width, height in ((1440, 900), (1024, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(
            path=str(artifacts / f"annotate-attributes-list-{width}.png"), full_page=True
        )

    from app.db import session_scope
    from app.models import Annotation

    def stored():
        with app.app_context(), session_scope() as session:
            return session.scalars(select(Annotation).order_by(Annotation.id)).all()

    rows = stored()
    assert [r.category for r in rows] == ["omission", "language"]
    assert rows[1].mark == rows[0].id and rows[0].mark is None
    assert {r.paired_text for r in rows} == {"Ann met Bo"}
    assert rows[0].attributes == {"severity": "major"}

    # Edit in place: the mark as one (its categories as check boxes, its attribute values)
    page.set_viewport_size({"width": 1440, "height": 900})
    item.locator(".edit-btn").click()
    form = item.locator("form.annot-edit")
    form.locator('.edit-category-choice:has-text("Language") input').uncheck()
    form.locator('select.edit-attribute[data-attribute="severity"]').select_option("critical")
    form.locator(".edit-comment").fill("Who is Bo?")
    assert axe.check(page, "annotate-edit-attributes") == []
    for width, height in ((1440, 900), (1024, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(
            path=str(artifacts / f"annotate-attributes-edit-{width}.png"), full_page=True
        )
    # On a phone the fixed new-annotation sheet never covers the open edit form's buttons.
    form.locator("button:has-text('Cancel')").click()
    item.locator(".edit-btn").click()
    for selector in (".edit-comment", ".save-edit"):
        assert page.evaluate(
            """(selector) => {
                const target = document.querySelector("form.annot-edit " + selector);
                const box = target.getBoundingClientRect();
                const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
                return target.contains(hit);
            }""",
            selector,
        ), f"{selector} is hidden behind the new-annotation sheet at 390 px"
    form.locator('.edit-category-choice:has-text("Language") input').uncheck()
    form.locator('select.edit-attribute[data-attribute="severity"]').select_option("critical")
    form.locator(".edit-comment").fill("Who is Bo?")
    page.screenshot(path=str(artifacts / "annotate-attributes-edit-390-viewport.png"))
    page.set_viewport_size({"width": 1440, "height": 900})
    form.locator(".save-edit").click()
    wait_saved(page)
    page.wait_for_function(
        "() => !document.querySelector('#annotation-list .annot-item.is-pending')"
    )
    shown = page.locator("#annotation-list .annot-item").first.inner_text()
    assert "severity: critical" in shown and "Language" not in shown
    rows = stored()
    live = [r for r in rows if r.removed_at is None]
    assert len(rows) == 3 and [r.category for r in live] == ["omission"]
    assert (live[0].attributes, live[0].comment, live[0].paired_text, live[0].mark) == (
        {"severity": "critical"},
        "Who is Bo?",
        "Ann met Bo",
        None,
    )


def test_review_shows_and_edits_attributes(
    app, client, live_server, pw_page, artifacts, tmp_path, axe_source
):
    from app.db import session_scope
    from app.models import AdjudicatedError
    from app.researchers.accounts import create_researcher
    from tests.helpers import api_add, open_token

    path = tmp_path / "summary.yaml"
    path.write_text(TAXONOMY, encoding="utf-8")
    make_study(
        app, slug="sum", taxonomy=str(path), documents=[("doc-1", SEGMENTS)], suggestions="off"
    )
    start = SEGMENTS[0].index("Bo left the the town")
    mark = {"segment": 0, "start": start, "end": start + 20, "text": "Bo left the the town"}
    for worker, severity in (("w1", "minor"), ("w2", "major")):
        token = open_token(client, worker, study="sum")
        body = {
            **mark,
            "categories": ["omission", "language"],
            "attributes": {"severity": severity},
        }
        assert api_add(client, token, body).status_code == 201
        for segment in (0, 1):
            client.put(f"/api/assignments/{token}/position", json={"segment": segment})
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        create_researcher(session, "r@example.org", "a long password 28", role="admin")
    page = pw_page
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_server.url, "r@example.org", "a long password 28")
    page.goto(f"{live_server.url}/admin/studies/sum/review")
    page.click("a:has-text('doc-1')")
    page.wait_for_selector("#review[data-ready]")
    if "omission" not in page.locator("#review-panel .cand-meta").inner_text():
        page.keyboard.press("j")  # candidates go by category within a place: language first
    assert "omission" in page.locator("#review-panel .cand-meta").inner_text()
    marks = page.locator("#review-panel ul.marks").first.inner_text()
    assert "severity: minor" in marks and "severity: major" in marks
    page.keyboard.press("e")
    page.select_option("#edit-attr-severity", "critical")
    page.fill("#edit-attr-confidence", "4")
    assert axe.check(page, "review-attributes") == []
    for width, height in ((1440, 900), (1024, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(artifacts / f"review-attributes-edit-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.click("#save-edit")
    page.wait_for_function(
        "() => (document.getElementById('review-summary').textContent || '').includes('1 decided')"
    )
    assert "severity: critical" in page.locator("#review-panel .decision").inner_text()
    with app.app_context(), session_scope() as session:
        (row,) = session.scalars(select(AdjudicatedError)).all()
    assert (row.category, row.attributes) == ("omission", {"severity": "critical", "confidence": 4})
