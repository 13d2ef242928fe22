"""The arrival limit's page in Chromium, as a worker meets it (English and German): the
card of the other worker pages, no serious WCAG 2.2 AA violation (axe-core), and its
"Try again" link back to the same arrival. Screenshots at 1440, 1024 and 390 px go to
tests/.artifacts/."""

from __future__ import annotations

import pytest

from tests.browser import axe
from tests.conftest import make_study

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    ("accept", "heading"),
    [("en", "Please wait a moment"), ("de", "Bitte warten Sie einen Moment")],
)
def test_the_limit_page_as_a_worker_sees_it(
    app, live_server, pw_browser, axe_source, artifacts, accept, heading
):
    make_study(app, documents=[("d1", ["One.", "Two."])], annotators_per_doc=100)
    app.config["ARRIVAL_RATE_LIMIT"] = "2 per minute"
    context = pw_browser.new_context(extra_http_headers={"Accept-Language": accept})
    try:
        page = context.new_page()
        for n in range(2):
            page.goto(f"{live_server.url}/s/demo?worker_id=w{n}")
            page.wait_for_url("**/a/**")
        answer = page.goto(f"{live_server.url}/s/demo?worker_id=w9")
        assert answer.status == 429 and int(answer.headers["retry-after"]) >= 1
        assert page.get_by_role("heading", level=1).inner_text() == heading
        assert page.get_attribute("#try-again", "href") == "/s/demo?worker_id=w9"
        assert axe.check(page, f"arrival-limit-{accept}") == []
        for width in (1440, 1024, 390):
            page.set_viewport_size({"width": width, "height": 800})
            page.screenshot(path=str(artifacts / f"arrival-limit-{accept}-{width}.png"))
        page.click("#try-again")  # still within the minute: the same page again
        assert page.get_by_role("heading", level=1).inner_text() == heading
    finally:
        context.close()
