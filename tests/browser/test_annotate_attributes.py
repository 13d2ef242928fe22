"""Issue 28: on the annotate page a worker gives one mark several categories (keys toggle
them in a multi-label taxonomy), answers its attributes with the keyboard, links it to
another span, and the mark is stored as one; screenshots at 1440, 1024 and 390 px."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.browser.helpers import (
    category_button,
    drag_select,
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
    app, live_server, pw_page, artifacts, tmp_path
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

    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(Annotation).order_by(Annotation.id)).all()
    assert [r.category for r in rows] == ["omission", "language"]
    assert rows[1].mark == rows[0].id and rows[0].mark is None
    assert {r.paired_text for r in rows} == {"Ann met Bo"}
    assert rows[0].attributes == {"severity": "major"}
