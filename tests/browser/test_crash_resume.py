"""A browser killed mid-document (SIGKILL of the Chromium process, as when a laptop dies)
resumes with everything the worker had added: on relaunch the same URL shows it all, and an
annotation still waiting in the page's outbox (the server unreachable at the time) is sent
when the page comes back."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import urllib.request
import uuid

import pytest

from tests.browser.conftest import CHROMIUM_ARGS, VIEWPORT, chromium_path
from tests.browser.helpers import (
    annotation_texts,
    category_button,
    drag_select,
    open_assignment,
    progress_text,
    wait_loaded,
    wait_saved,
)
from tests.conftest import make_study

pytestmark = pytest.mark.browser

SEGMENTS = [
    "Anna Berg runs a bakery in the harbour town of Lisle. She is an only child.",
    "Every morning Anna bakes rye bread for the fishermen, who pay her in herring.",
    "Anna's brother visits her and they argue about the shop. Tomas leaves before dawn.",
]


def chromium_processes(marker: str) -> list:
    """Every process of the Chromium instance launched with ``marker`` on its command line."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if any(marker in part for part in process.info["cmdline"] or []):
            found.append(process)
    return found


def kill_browser(marker: str) -> None:
    """SIGKILL the browser process (and its helpers): no unload handlers, no clean shutdown."""
    import psutil

    processes = chromium_processes(marker)
    main = [p for p in processes if not any(a.startswith("--type=") for a in p.cmdline())]
    assert main, "the launched Chromium process was not found"
    for process in main + processes:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
    psutil.wait_procs(processes, timeout=10)
    assert all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in processes)


def wait_on_disk(profile, text: str, timeout: float = 30) -> None:
    """Wait until Chromium has written ``text`` into the profile's localStorage files (it
    commits in batches a few seconds apart; a crash before that loses the write anyway)."""
    needles = (text.encode(), text.encode("utf-16-le"))
    deadline = time.time() + timeout
    while time.time() < deadline:
        for path in profile.glob("**/Local Storage/leveldb/*"):
            with contextlib.suppress(OSError):
                data = path.read_bytes()
                if any(n in data for n in needles):
                    return
        time.sleep(0.25)
    raise AssertionError(f"{text!r} never reached the profile's localStorage on disk")


def launch(pw_browser, profile, marker: str):
    """A separate Chromium process (not the session's), with a profile kept on disk."""
    return pw_browser.browser_type.launch_persistent_context(
        str(profile),
        executable_path=chromium_path(),
        headless=True,
        viewport=VIEWPORT,
        args=[*CHROMIUM_ARGS, f"--marginalia-test-instance={marker}"],
    )


def server_annotations(base_url: str, token: str) -> list[str]:
    with urllib.request.urlopen(f"{base_url}/api/assignments/{token}") as answer:
        return [a["text"] for a in json.load(answer)["annotations"]]


def add(page, segment: int, text: str, category: str) -> None:
    drag_select(page, segment, text)
    page.wait_for_function("(t) => document.getElementById('span-field').value === t", arg=text)
    category_button(page, category).click()
    page.click("#add-button")


def test_killed_browser_resumes_with_everything_added(app, live_server, pw_browser, tmp_path):
    make_study(app, slug="bakery", documents=[("bakery-1", SEGMENTS)])
    profile = tmp_path / "profile"
    marker = uuid.uuid4().hex

    context = launch(pw_browser, profile, marker)
    page = context.new_page()
    token = open_assignment(page, live_server.url, "bakery", "crash-worker")
    add(page, 0, "Anna Berg", "CharE")
    page.click("#next-button")
    add(page, 1, "rye bread", "RefE")
    wait_saved(page)
    # The third one is marked while the server is unreachable: it waits in the outbox.
    page.route("**/api/assignments/*/annotations", lambda route: route.abort())
    add(page, 1, "herring", "GramE")
    page.wait_for_function(
        "(k) => (localStorage.getItem(k) || '').includes('herring')",
        arg=f"marginalia.outbox.{token}",
    )
    assert annotation_texts(page) == ["Anna Berg", "rye bread", "herring"]
    assert server_annotations(live_server.url, token) == ["Anna Berg", "rye bread"]
    wait_on_disk(profile, "herring")
    kill_browser(marker)
    with contextlib.suppress(Exception):  # the connection to the killed browser is gone
        context.close()

    relaunched = launch(pw_browser, profile, marker)
    try:
        page = relaunched.new_page()
        page.goto(f"{live_server.url}/a/{token}")
        wait_loaded(page)
        assert progress_text(page) == "Segment 2 of 3"
        wait_saved(page)
        assert annotation_texts(page) == ["Anna Berg", "rye bread", "herring"]
        assert server_annotations(live_server.url, token) == ["Anna Berg", "rye bread", "herring"]
    finally:
        relaunched.close()


def test_killed_browser_on_a_new_machine_gets_the_saved_work_back(
    app, live_server, pw_browser, tmp_path
):
    """Without the old profile (another computer), what the server acknowledged is all there."""
    make_study(app, slug="bakery", documents=[("bakery-1", SEGMENTS)])
    marker = uuid.uuid4().hex
    context = launch(pw_browser, tmp_path / "first", marker)
    page = context.new_page()
    token = open_assignment(page, live_server.url, "bakery", "crash-worker-2")
    add(page, 0, "harbour town", "RefE")
    add(page, 0, "only child", "CharE")
    wait_saved(page)
    kill_browser(marker)
    with contextlib.suppress(Exception):  # the connection to the killed browser is gone
        context.close()

    other = launch(pw_browser, tmp_path / "second", uuid.uuid4().hex)
    try:
        page = other.new_page()
        page.goto(f"{live_server.url}/a/{token}")
        wait_loaded(page)
        assert annotation_texts(page) == ["harbour town", "only child"]
    finally:
        other.close()
