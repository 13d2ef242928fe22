"""Browser fixtures: the real app over real HTTP in a thread, driven by headless Chromium.

Chromium comes from Debian (/usr/bin/chromium, or $MARGINALIA_CHROMIUM); Playwright's own
browser download is never needed. Tests skip cleanly when neither Playwright nor a Chromium
binary is available.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / ".artifacts"  # git-ignored; never outside the checkout
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 800}


def chromium_path() -> str | None:
    """The Chromium binary to drive: $MARGINALIA_CHROMIUM, /usr/bin/chromium, or on PATH."""
    for candidate in (
        os.environ.get("MARGINALIA_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def pw_browser():
    """One headless Chromium for the whole session."""
    required = bool(os.environ.get("MARGINALIA_REQUIRE_BROWSER"))  # set by `make test`
    try:
        from playwright import sync_api
    except ImportError:
        if required:
            pytest.fail("the playwright package is missing (make test installs it)")
        pytest.skip("the playwright package is not installed")
    executable = chromium_path()
    if executable is None:
        if required:
            pytest.fail("no Chromium binary (make test installs the Debian package chromium)")
        pytest.skip("no Chromium binary (install the Debian package chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


class LiveServer:
    """The Flask app served by werkzeug on 127.0.0.1:<free port> in a background thread."""

    def __init__(self, app):
        from werkzeug.serving import make_server

        self.app = app
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> LiveServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=5)


@pytest.fixture
def live_server(app) -> Iterator[LiveServer]:
    """The real app (fresh migrated SQLite from tests/conftest.py) over real HTTP."""
    server = LiveServer(app).start()
    yield server
    server.stop()


@pytest.fixture
def pw_context(pw_browser):
    """A fresh browser context (own localStorage) at 1280x800."""
    context = pw_browser.new_context(viewport=VIEWPORT)
    yield context
    context.close()


@pytest.fixture
def pw_page(pw_context):
    """A page that records uncaught script errors and fails the test on any of them."""
    page = pw_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and "Content Security Policy" in msg.text
            else None
        ),
    )
    page.js_errors = errors  # type: ignore[attr-defined]
    yield page
    assert errors == [], f"script errors on the page: {errors}"


@pytest.fixture(scope="session")
def axe_source(pw_browser) -> str:
    """axe-core's script, installed from npm once (tests/browser/axe.py); skips without
    npm or the registry, fails where MARGINALIA_REQUIRE_BROWSER is set."""
    from tests.browser import axe

    try:
        path = axe.install()
    except RuntimeError as exc:
        if axe.required():
            pytest.fail(f"axe-core is needed for the accessibility checks: {exc}")
        pytest.skip(f"axe-core is not available: {exc}")
    axe.load(path)
    return path


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """tests/.artifacts/ (git-ignored) for screenshots."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
