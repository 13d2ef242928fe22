"""WCAG 2.2 AA on every page a worker or researcher sees: axe-core (tests/browser/axe.py) run
in Chromium against the real pages with real data (tests/browser/a11y_site.py), in the states
worth checking (hints, a paired span being made, practice feedback, errors shown). A serious
or critical violation fails the page's test.

A new page is one more line in PAGES: a name, its path (``{token}`` names come from the
site), whether it needs a researcher's log-in, and optionally what to do on it first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from app import create_app
from app.migrate import upgrade
from tests.browser import a11y_site, axe
from tests.browser.conftest import VIEWPORT, LiveServer
from tests.browser.helpers import category_button, drag_select, log_in, wait_loaded, wait_value

pytestmark = pytest.mark.browser


def _annotating(page) -> None:
    """Hints shown, a span selected and a paired category chosen (the paired row open)."""
    wait_loaded(page)
    page.click("#next-button")
    page.wait_for_selector("#hint-list .hint-item")
    drag_select(page, 1, "schooner")
    wait_value(page, "#span-field", "schooner")
    category_button(page, "InconE").click()
    page.wait_for_selector("#paired-row:not([hidden])")


def _added(page) -> None:
    """An annotation just added: the list, the "Added" message and the Saved status."""
    wait_loaded(page)
    drag_select(page, 0, "lighthouse")
    wait_value(page, "#span-field", "lighthouse")
    page.keyboard.press("2")
    page.click("#add-button")
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'")


def _practice_feedback(page) -> None:
    wait_loaded(page)
    page.click("#next-button")
    page.wait_for_selector("#practice-panel:not([hidden])")


def _keyboard(page) -> None:
    """The keyboard cursor in the text, a span taken with it, the live region speaking."""
    wait_loaded(page)
    page.focus("#text-area")
    for key in ("ArrowRight", "Shift+ArrowRight", "Enter"):
        page.keyboard.press(key)
    page.wait_for_selector("#kb-status:not(:empty)")


def _questionnaire_error(page) -> None:
    page.click("#questionnaire-submit")
    page.wait_for_selector("#questionnaire-error")


def _loaded(page) -> None:
    wait_loaded(page)


def _review(page) -> None:
    page.wait_for_selector("#review-panel .proposal")
    page.wait_for_selector(".votes")


@dataclass(frozen=True)
class Page:
    name: str
    path: str
    admin: bool = False
    prepare: Callable | None = None
    width: int = VIEWPORT["width"]


PROLIFIC_NEW = "/s/lights?STUDY_ID=st1&SESSION_ID=se-new&PROLIFIC_PID=P-new"
PAGES = [
    Page("home", "/"),
    Page("start", "/s/plain"),
    Page("start-error", "/s/plain?worker_id=%00"),
    Page("consent", PROLIFIC_NEW),
    Page("annotate-hints-paired", "/a/{hints}", prepare=_annotating),
    Page("annotate-added", "/a/{plain-open}", prepare=_added),
    Page("annotate-narrow-sheet", "/a/{narrow}", prepare=_annotating, width=390),
    Page("annotate-keyboard", "/a/{arabic}", prepare=_keyboard),
    Page("annotate-rtl-narrow", "/a/{arabic}", prepare=_loaded, width=390),
    Page("annotate-practice-feedback", "/a/{practice}", prepare=_practice_feedback),
    Page("annotate-read-only", "/a/{P-read}", prepare=_loaded),
    Page("questionnaire", "/a/{P-done}/done"),
    Page("questionnaire-error", "/a/{P-two}/done", prepare=_questionnaire_error),
    Page("done", "/a/{plain-done}/done"),
    Page("session-next", "/a/{session-next}/done"),
    Page("qualification-try-again", "/a/{failed}/done"),
    Page("screened-out", "/a/{screened-out}/done"),
    Page("returned-paused", "/s/paused?worker_id=w-late"),
    Page("consent-declined", PROLIFIC_NEW, prepare=lambda page: page.click("#consent-decline")),
    Page("resume", "/s/plain?worker_id=w-open"),
    Page("mturk-preview", "/s/hits?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1"),
    Page("login", "/admin/login"),
    Page("studies", "/admin/", admin=True),
    Page("new-study", "/admin/studies/new", admin=True),
    Page("account", "/admin/account", admin=True),
    Page("dashboard", "/admin/studies/lights", admin=True),
    Page("workers", "/admin/studies/lights/workers", admin=True),
    Page("worker", "/admin/studies/lights/worker?id=P-done", admin=True),
    Page("manage", "/admin/studies/lights/manage", admin=True),
    Page("researcher-preview", "/admin/studies/lights/preview", admin=True),
    Page("review-list", "/admin/studies/lights/review", admin=True),
    Page("compare", "/admin/studies/lights/compare", admin=True),
    Page(
        "review",
        "/admin/studies/lights/review/document?document=story-1",
        admin=True,
        prepare=_review,
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("a11y")
    url = f"sqlite:///{folder / 'a11y.db'}"
    upgrade(url)
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "test"})
    built = a11y_site.build(app)
    server = LiveServer(app).start()
    yield server, built
    server.stop()
    app.extensions["db_engine"].dispose()


@pytest.fixture(scope="module")
def admin_state(site, pw_browser):
    """A logged-in researcher's cookies, made once."""
    server, _ = site
    context = pw_browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    log_in(page, server.url, a11y_site.EMAIL, a11y_site.PASSWORD)
    page.wait_for_url(f"{server.url}/admin/")
    state = context.storage_state()
    context.close()
    return state


@pytest.mark.parametrize("spec", PAGES, ids=[p.name for p in PAGES])
def test_no_serious_accessibility_violation(spec, site, admin_state, pw_browser, axe_source):
    server, built = site
    context = pw_browser.new_context(
        viewport={"width": spec.width, "height": 900},
        storage_state=admin_state if spec.admin else None,
    )
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.route("https://app.prolific.com/**", lambda route: route.fulfill(body="Prolific"))
        page.goto(server.url + spec.path.format(**built.tokens))
        if spec.prepare:
            spec.prepare(page)
        problems = axe.check(page, spec.name)
        assert problems == [], "\n".join(problems)
        assert errors == []
    finally:
        context.close()
