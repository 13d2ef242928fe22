"""Slow and oversized request bodies against the deployed web server (``marginalia web``, its
defaults: 2 processes x 8 threads): they hold no thread, their memory is bounded, nothing is
spooled to disk, and the access log is private with tokens masked.

Before the front (``WEB_FRONT=0``, granian's WSGI interface), 24 clients sending a 60 KB body
one byte a second held every thread and the GET below waited for ever. The attacks after
that one were found against the first front (an ASGI one): a 32 MB body declared to a
worker's route was read, under a deadline that grew with the declared length (hours);
bodies over 1 MB were spooled to temporary files; bodies held open took the process's
memory (400 of 1 MB to ``/healthz``: +300 MB). Each test below reproduces one of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest

from app.migrate import upgrade
from tests.conftest import REPO

BODY_TIMEOUT = 2
BODY_MAX_SECONDS = 4
BUFFER_MB = 2
RESEARCHER_ID = 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_web(folder: Path, env_extra: dict[str, str]) -> tuple[subprocess.Popen, str, int]:
    port = free_port()
    env = {
        **os.environ,
        "SECRET_KEY": "t",
        "PORT": str(port),
        "WEB_HOST": "127.0.0.1",
        "WEB_LOG_LEVEL": "warning",
        "TMPDIR": str(folder / "tmp"),
        **env_extra,
    }
    (folder / "tmp").mkdir(exist_ok=True)
    for name in ("WEB_CONCURRENCY", "WEB_THREADS", "GUNICORN_THREADS", "WEB_FRONT"):
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
                return process, base, port
        except OSError:
            assert process.poll() is None, (folder / "web.err").read_text()
            assert time.monotonic() < deadline, (folder / "web.err").read_text()
            time.sleep(0.2)


def stop_web(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("slow")
    url = f"sqlite:///{folder / 'web.db'}"
    upgrade(url)
    from app import create_app
    from tests.conftest import make_study

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "t"})
    make_study(app, slug="slow")
    with app.app_context():
        # A session cookie the app signed for a researcher: what a signed-in browser sends.
        cookie = app.session_interface.get_signing_serializer(app).dumps(
            {"researcher_id": RESEARCHER_ID}
        )
    app.extensions["db_engine"].dispose()
    log = folder / "access.log"
    process, base, port = start_web(
        folder,
        {
            "DATABASE_URL": url,
            "WEB_ACCESS_LOG": str(log),
            "WEB_BODY_TIMEOUT": str(BODY_TIMEOUT),
            "WEB_BODY_MAX_SECONDS": str(BODY_MAX_SECONDS),
            "WEB_BODY_BUFFER_MB": str(BUFFER_MB),
        },
    )
    yield {
        "base": base,
        "port": port,
        "log": log,
        "pid": process.pid,
        "tmp": folder / "tmp",
        "cookie": f"session={cookie}",
    }
    stop_web(process)


def post_head(path: str, length: int, cookie: str | None = None) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n"
    )
    if cookie:
        head += f"Cookie: {cookie}\r\n"
    return (head + "\r\n").encode()


def slow_body(port: int, length: int = 60000, path: str = "/api/assignments") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(post_head(path, length) + b"{")
    return sock


def answer_of(sock: socket.socket, timeout: float) -> bytes:
    """What the server answers (b"" if it closes without answering) within ``timeout``."""
    sock.settimeout(timeout)
    try:
        return sock.recv(4096)
    except (ConnectionResetError, TimeoutError):
        return b""


def closed_after_answer(sock: socket.socket, timeout: float = 10) -> bool:
    """Whether the server closes the connection after its answer."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return False


def server_rss(pid: int) -> int:
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])


def test_slow_body_clients_do_not_hold_an_ordinary_get(server):
    clients = [slow_body(server["port"]) for _ in range(24)]
    try:
        time.sleep(0.5)  # every one has sent its headers and is trickling
        for _ in range(3):
            for sock in clients:
                sock.send(b" ")
            with urllib.request.urlopen(server["base"] + "/healthz", timeout=10) as answer:
                assert answer.status == 200
            with urllib.request.urlopen(server["base"] + "/admin/login", timeout=10) as answer:
                assert answer.status == 200
            time.sleep(0.5)
    finally:
        for sock in clients:
            sock.close()


def test_a_trickling_body_is_cut_with_a_408(server):
    sock = slow_body(server["port"])
    started = time.monotonic()
    try:
        answer = answer_of(sock, BODY_TIMEOUT + 30)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert time.monotonic() - started > BODY_TIMEOUT - 0.5
        assert closed_after_answer(sock)
    finally:
        sock.close()


def trickle(sock: socket.socket, chunk: int, seconds: float) -> bytes:
    """Send ``chunk`` bytes every half second until the server answers (its answer) or
    ``seconds`` pass (b"")."""
    sock.setblocking(False)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        send_quietly(sock, b" " * chunk)
        time.sleep(0.5)
        try:
            answer = sock.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            return b""
        return answer
    return b""


def send_quietly(sock: socket.socket, data: bytes) -> None:
    """Send, whether or not the server has already answered and closed."""
    with contextlib.suppress(OSError):
        sock.sendall(data)


def test_a_small_body_sent_steadily_is_still_cut_at_its_deadline(server):
    """The deadline no longer grows with the bytes received: a worker's JSON (at most 64 KB)
    has WEB_BODY_TIMEOUT seconds, whatever rate it trickles at (the first front gave
    one more second per 500 bytes, so 60 KB at 2 KB/s was read for 30 s)."""
    sock = slow_body(server["port"])
    try:
        answer = trickle(sock, 1000, 40)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_a_large_upload_is_cut_at_the_fixed_ceiling_however_it_trickles(server):
    """An upload (a signed-in researcher's) gets a second per WEB_BODY_MIN_RATE bytes, but
    never past WEB_BODY_MAX_SECONDS: the first front's deadline grew with the body (a 32 MB
    body at 500 bytes a second: ~18 hours)."""
    sock = socket.create_connection(("127.0.0.1", server["port"]))
    sock.sendall(post_head("/admin/studies/new", 1_000_000, server["cookie"]))
    try:
        answer = trickle(sock, 5000, 40)  # 10 KB a second: far above the minimum rate
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_a_body_over_the_routes_limit_is_refused_unread_and_the_connection_closed(server):
    """32 MB (the upload limit) declared to a worker's route: refused at once, not read (the
    first front read it, as its cap was the app's largest limit)."""
    sock = socket.create_connection(("127.0.0.1", server["port"]))
    try:
        sock.sendall(post_head("/api/assignments", 32 * 2**20))
        answer = answer_of(sock, 30)
        assert answer.startswith(b"HTTP/1.1 413"), answer
        assert b"65536 bytes" in answer  # the app's wording, naming the route's limit
        assert closed_after_answer(sock)
    finally:
        sock.close()


def test_a_body_over_every_limit_gets_413_unread(server):
    sock = socket.create_connection(("127.0.0.1", server["port"]))
    try:
        sock.sendall(post_head("/admin/studies/new", 40 * 2**20, server["cookie"]))
        answer = answer_of(sock, 30)
        assert answer.startswith(b"HTTP/1.1 413"), answer
        assert b"32 MB" in answer
    finally:
        sock.close()


def test_an_anonymous_upload_is_refused_before_its_body(server):
    sock = socket.create_connection(("127.0.0.1", server["port"]))
    try:
        sock.sendall(post_head("/admin/studies/new", 3 * 2**20))
        answer = answer_of(sock, 30)
        assert answer.startswith(b"HTTP/1.1 403"), answer
        assert closed_after_answer(sock)
    finally:
        sock.close()


def _spooled(pid: int, folder: Path) -> list[str]:
    """The server's open files under ``folder``, deleted ones too (a spooled temporary file
    is unlinked at once: only /proc shows it)."""
    root = psutil.Process(pid)
    paths = []
    for process in [root, *root.children(recursive=True)]:
        fds = Path(f"/proc/{process.pid}/fd")
        for fd in fds.iterdir() if fds.exists() else []:
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith(str(folder)):
                    paths.append(target)
    return paths


def test_no_body_is_spooled_to_disk(server):
    """Five 3 MB bodies held one byte short: the first front spooled each to a temporary file
    (100 such connections: +3.2 GB of disk); nothing reaches the disk now."""
    socks = []
    try:
        for _ in range(5):
            sock = socket.create_connection(("127.0.0.1", server["port"]))
            sock.sendall(post_head("/admin/studies/new", 3 * 2**20))
            send_quietly(sock, b" " * (3 * 2**20 - 1))  # refused and closed first, now
            socks.append(sock)
        time.sleep(1)
        assert _spooled(server["pid"], server["tmp"]) == []
        assert list(server["tmp"].iterdir()) == []
    finally:
        for sock in socks:
            sock.close()


def test_bodies_held_open_leave_the_servers_memory_alone(server):
    """100 bodies of 1 MB declared to /healthz, sent one byte short and held: the first front
    read each into memory (400 of them: 215 -> 509 MB)."""
    before = server_rss(server["pid"])
    socks = []
    try:
        for _ in range(100):
            sock = socket.create_connection(("127.0.0.1", server["port"]))
            sock.sendall(post_head("/healthz", 2**20))
            send_quietly(sock, b" " * (2**20 - 1))
            socks.append(sock)
        time.sleep(1)
        grown = server_rss(server["pid"]) - before
        assert grown < 40 * 2**20, f"the server grew {grown / 2**20:.0f} MB"
    finally:
        for sock in socks:
            sock.close()


def test_the_bytes_held_across_connections_are_capped(server):
    """Past WEB_BODY_BUFFER_MB of bodies being received, a new body is refused at once
    with 503 and Retry-After instead of being held (the first front had no such cap: every
    one of these was held, then cut with a 408)."""
    count = 100  # 100 x 60 KB: more than both processes' budgets (2 x 2 MB)
    socks = [slow_body(server["port"]) for _ in range(count)]
    try:
        answers = [answer_of(sock, BODY_TIMEOUT + 30) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    statuses = [a[9:12] for a in answers]
    held = 2 * ((BUFFER_MB * 2**20) // 60000)  # what the two processes' budgets hold at once
    assert set(statuses) <= {b"503", b"408"}, statuses
    assert statuses.count(b"503") >= count - held, statuses
    assert 0 < statuses.count(b"408") <= held  # the held ones, cut at their deadline
    assert all(b"retry-after:" in a.lower() for a in answers if a[9:12] == b"503")


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


# --- a long answer through the real server -------------------------------------------------

STREAM_CHUNKS = 200


def streaming_app():
    """``WEB_APP`` for the test below: echoes what the environ says and streams a long
    answer; its iterable's close() writes the file named by MARGINALIA_TEST_STREAM_CLOSED."""

    class Export:
        def __iter__(self):
            return (b"x" * 4096 for _ in range(STREAM_CHUNKS))

        def close(self):
            Path(os.environ["MARGINALIA_TEST_STREAM_CLOSED"]).write_text("closed")

    def app(environ, start_response):
        body = environ["wsgi.input"].read()
        start_response(
            "200 OK",
            [
                ("Content-Type", "text/csv"),
                # PEP 3333: the percent-decoded path's bytes as latin-1
                ("X-Path", quote(environ["PATH_INFO"].encode("latin-1"))),
                ("X-Query", environ["QUERY_STRING"]),
                ("X-Body", body.decode()),
                ("X-Remote", environ["REMOTE_ADDR"]),
            ],
        )
        return Export()

    return app


def test_a_long_answer_streams_whole_and_is_closed(tmp_path):
    closed = tmp_path / "closed"
    process, base, port = start_web(
        tmp_path,
        {
            "WEB_APP": "tests.test_slow_clients:streaming_app",
            "MARGINALIA_TEST_STREAM_CLOSED": str(closed),
        },
    )
    try:
        request = urllib.request.Request(base + "/%C3%BC%20x?a=%20", data=b"body", method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            content = answer.read()
            assert answer.headers["X-Path"] == quote("/ü x".encode())
            assert answer.headers["X-Query"] == "a=%20"
            assert answer.headers["X-Body"] == "body"
            assert answer.headers["X-Remote"] == "127.0.0.1"
        assert content == b"x" * 4096 * STREAM_CHUNKS
        deadline = time.monotonic() + 10
        while not closed.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert closed.read_text() == "closed"
    finally:
        stop_web(process)
