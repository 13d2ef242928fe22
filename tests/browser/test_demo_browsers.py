"""The demo URL `make run` prints (``/s/demo``, no worker ID) in several browsers: each
browser is given its own worker ID, kept in its localStorage, so two browsers (or two
colleagues) both get a document and annotate it, where one printed ID gave the second
browser "work in progress elsewhere" until ``marginalia demo --reset``; the same browser
comes back to its own work; an ID that has done every demo document is offered a new one.
A real study never invents an ID: its start page asks for one."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Annotation, Assignment, Study
from tests.browser import axe
from tests.browser.conftest import VIEWPORT
from tests.browser.helpers import wait_loaded, wait_saved
from tests.conftest import make_study

pytestmark = pytest.mark.browser

DOCUMENTS = [
    ("demo-a", ["Mara keeps the lighthouse.", "Tomas visits in spring."]),
    ("demo-b", ["The lamp fails twice.", "Mara mends it."]),
]
DEMO_ID = re.compile(r"^demo-[0-9a-f]{16}$")


def make_demo(app, documents=DOCUMENTS) -> None:
    make_study(app, slug="demo", documents=documents, annotators_per_doc=1)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "demo"))
        study.settings = {**(study.settings or {}), "demo": True}


def arrive_and_mark(page, base: str) -> tuple[str, str]:
    """Open the printed demo URL, mark the first word with the keyboard, wait until stored;
    the assignment's token and the worker ID the page was given."""
    page.goto(f"{base}/s/demo")
    page.wait_for_url("**/a/**")
    wait_loaded(page)
    page.focus("#text-area")
    for key in ("Enter", "1", "Control+Enter"):
        page.keyboard.press(key)
    wait_saved(page)
    token = page.url.rstrip("/").rsplit("/", 1)[-1]
    return token, page.get_attribute("#annotate", "data-worker")


def work(app) -> dict[str, tuple[str, int]]:
    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(Assignment)).all()
        return {
            a.token: (
                a.worker_id,
                len(
                    session.scalars(
                        select(Annotation).where(Annotation.assignment_id == a.id)
                    ).all()
                ),
            )
            for a in rows
        }


def test_two_browsers_on_the_demo_url_each_get_their_own_work(app, live_server, pw_browser):
    make_demo(app)
    first, second = (pw_browser.new_context(viewport=VIEWPORT) for _ in range(2))
    try:
        page_a, page_b = first.new_page(), second.new_page()
        token_a, worker_a = arrive_and_mark(page_a, live_server.url)
        token_b, worker_b = arrive_and_mark(page_b, live_server.url)
        assert DEMO_ID.match(worker_a) and DEMO_ID.match(worker_b) and worker_a != worker_b
        assert work(app) == {token_a: (worker_a, 1), token_b: (worker_b, 1)}
        # the same browser, back on the printed URL: its own work again, nothing new made
        page_a.goto(f"{live_server.url}/s/demo")
        page_a.wait_for_url(f"**/a/{token_a}")
        wait_loaded(page_a)
        assert page_a.locator("#annotation-list .annot-span").all_inner_texts() == ["Mara"]
        assert len(work(app)) == 2
    finally:
        first.close()
        second.close()


def test_a_browser_done_with_the_demo_is_offered_a_new_id(
    app, live_server, pw_page, artifacts, axe_source
):
    make_demo(app, documents=[("only", ["One short segment to read."])])
    page = pw_page
    token, worker = arrive_and_mark(page, live_server.url)
    page.click("#submit-button")
    page.wait_for_url(f"**/a/{token}/done")
    page.goto(f"{live_server.url}/s/demo")  # the kept ID has done every demo document
    page.wait_for_selector("#start-error")
    assert "another ID" in page.inner_text("#start-error")
    assert page.url.endswith(f"worker_id={worker}")
    assert axe.check(page, "demo-done") == []
    for width in (1440, 1024, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.screenshot(path=str(artifacts / f"demo-done-{width}.png"), full_page=True)
    page.set_viewport_size(VIEWPORT)
    page.click("#demo-new-id")
    page.wait_for_url("**/a/**")
    wait_loaded(page)
    fresh = page.get_attribute("#annotate", "data-worker")
    assert DEMO_ID.match(fresh) and fresh != worker
    assert page.evaluate("localStorage.getItem('marginalia.demo-worker:demo')") == fresh


def test_a_real_study_never_invents_a_worker_id(app, live_server, pw_page):
    make_study(app, slug="real", documents=DOCUMENTS)
    page = pw_page
    page.goto(f"{live_server.url}/s/real")
    page.wait_for_selector("#worker-id")
    assert page.url.endswith("/s/real") and page.input_value("#worker-id") == ""
    assert page.locator("#demo-starting").count() == 0
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Assignment.id)) is None


def test_the_demo_start_page_while_it_arrives(app, live_server, pw_page, artifacts, axe_source):
    """What a browser shows for the moment before its arrival (kept here: the arrival is
    answered 204, so the browser stays on the page)."""
    make_demo(app)
    page = pw_page
    page.route("**/s/demo?worker_id=*", lambda route: route.fulfill(status=204))
    page.goto(f"{live_server.url}/s/demo", wait_until="commit")
    page.wait_for_selector("#demo-starting:not([hidden])")
    assert (
        page.inner_text("#demo-starting") == "Starting the demo with this browser's own worker ID…"
    )
    assert axe.check(page, "demo-start") == []
    for width in (1440, 1024, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.screenshot(path=str(artifacts / f"demo-start-{width}.png"))
