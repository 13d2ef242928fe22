"""Issue 26 rows 1 and 13 against the deployed web server (``marginalia web``, its defaults:
2 processes x 8 threads): slow request bodies hold no thread, a trickling body is cut, an
oversized one gets the app's own 413, and the access log is private with tokens masked.

Before the front (``WEB_FRONT=0``, granian's WSGI interface as it was), 24 clients sending
a 60 KB body one byte a second held every thread and the GET below waited for ever.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request

import pytest

from app.migrate import upgrade
from tests.conftest import REPO
from tests.helpers import run_in_own_loop

BODY_TIMEOUT = 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("slow")
    url = f"sqlite:///{folder / 'web.db'}"
    upgrade(url)
    from app import create_app
    from tests.conftest import make_study

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "t"})
    make_study(app, slug="slow")
    app.extensions["db_engine"].dispose()
    port = free_port()
    log = folder / "access.log"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SECRET_KEY": "t",
        "PORT": str(port),
        "WEB_HOST": "127.0.0.1",
        "WEB_LOG_LEVEL": "warning",
        "WEB_ACCESS_LOG": str(log),
        "WEB_BODY_TIMEOUT": str(BODY_TIMEOUT),
    }
    for name in ("WEB_CONCURRENCY", "WEB_THREADS", "GUNICORN_THREADS"):
        env.pop(name, None)  # the documented defaults
    env.setdefault("WEB_CONCURRENCY", "2")
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "web"],
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=(folder / "web.err").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=5):
                break
        except OSError:
            assert process.poll() is None, (folder / "web.err").read_text()
            assert time.monotonic() < deadline, (folder / "web.err").read_text()
            time.sleep(0.2)
    yield {"base": base, "port": port, "log": log}
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


def slow_body(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /api/assignments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 60000\r\n\r\n{"
    )
    return sock


def test_slow_body_clients_do_not_hold_an_ordinary_get(server):
    clients = [slow_body(server["port"]) for _ in range(24)]
    try:
        time.sleep(0.5)  # every one has sent its headers and is trickling
        for _ in range(3):
            for sock in clients:
                sock.send(b" ")
            started = time.monotonic()
            with urllib.request.urlopen(server["base"] + "/healthz", timeout=2) as answer:
                assert answer.status == 200
            with urllib.request.urlopen(server["base"] + "/admin/login", timeout=2) as answer:
                assert answer.status == 200
            assert time.monotonic() - started < 2
            time.sleep(0.5)
    finally:
        for sock in clients:
            sock.close()


def test_a_trickling_body_is_cut_with_a_408(server):
    sock = slow_body(server["port"])
    sock.settimeout(BODY_TIMEOUT + 8)
    started = time.monotonic()
    try:
        answer = sock.recv(4096)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408")
    assert BODY_TIMEOUT - 0.5 < time.monotonic() - started < BODY_TIMEOUT + 6


def test_a_body_over_every_limit_gets_the_apps_413_unread(server):
    sock = socket.create_connection(("127.0.0.1", server["port"]))
    sock.settimeout(5)
    sock.sendall(
        b"POST /api/assignments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {40 * 2**20}\r\n\r\n".encode()
    )
    answer = sock.recv(4096)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert b"65536 bytes" in answer  # the app's own message, naming its limit


def test_ordinary_requests_pass_the_front_unchanged(server):
    body = json.dumps({"study": "slow", "worker_id": "front-1"}).encode()
    request = urllib.request.Request(
        server["base"] + "/api/assignments", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 201
        token = json.loads(answer.read())["token"]
    with urllib.request.urlopen(f"{server['base']}/api/assignments/{token}", timeout=10) as answer:
        assert json.loads(answer.read())["token"] == token
    server["token"] = token


def test_access_log_is_private_and_masks_tokens(server):
    token = server.get("token")
    if token is None:
        pytest.skip("needs the assignment of the test before")
    with urllib.request.urlopen(f"{server['base']}/a/{token}", timeout=10):
        pass
    log = server["log"]
    deadline = time.monotonic() + 5
    while f"/a/{token[:4]}" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    text = log.read_text()
    assert f"/a/{token[:4]}…" in text and f"/api/assignments/{token[:4]}…" in text
    assert token not in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_long_answer_streams_in_chunks_and_is_closed():
    from app.web.front import Front

    closed = []

    class Export:
        def __iter__(self):
            return (b"x" * 4096 for _ in range(200))

        def close(self):
            closed.append(True)

    def wsgi_app(environ, start_response):
        assert (
            environ["PATH_INFO"] == "/ü x".encode().decode("latin-1")
            and environ["QUERY_STRING"] == "a=%20"
        )
        assert environ["wsgi.input"].read() == b"body" and environ["CONTENT_LENGTH"] == "4"
        start_response("200 OK", [("Content-Type", "text/csv")])
        return Export()

    sent = []
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/ü x",
        "raw_path": b"/%C3%BC%20x",
        "query_string": b"a=%20",
        "headers": [(b"content-length", b"4"), (b"host", b"x")],
        "server": ("127.0.0.1", "80"),
        "client": ("127.0.0.1", "9"),
    }
    messages = iter([{"type": "http.request", "body": b"body", "more_body": False}])

    async def receive():
        return next(messages)

    async def send(message):
        sent.append(message)

    run_in_own_loop(Front(wsgi_app, threads=2)(scope, receive, send))
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert sent[0]["status"] == 200 and len(bodies) > 2
    assert all(m.get("more_body") for m in bodies[:-1]) and not bodies[-1].get("more_body")
    assert sum(len(m["body"]) for m in bodies) == 200 * 4096
    assert closed == [True]
