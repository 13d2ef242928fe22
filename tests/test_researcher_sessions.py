"""The session cookie's attributes, its end (logout, password change, a disabled or deleted
account, idle hours), and the login throttle shared by every process that uses the database
(failures only, per account and per client, counted before the password is checked, so
parallel attempts cannot pass the limit), on SQLite and Postgres."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from app import create_app
from app.db import session_scope
from tests.conftest import BACKENDS, REPO, make_database_url

EMAIL, PASSWORD = "researcher@example.org", "a long enough password"
TOKEN_PATTERN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def researcher(app):
    from app.researchers.accounts import create_researcher

    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD)


def csrf(client, **kwargs) -> str:
    page = client.get("/admin/login", **kwargs).get_data(as_text=True)
    return TOKEN_PATTERN.search(page).group(1)


def login(client, password: str = PASSWORD, email: str = EMAIL, **kwargs):
    return client.post(
        "/admin/login",
        data={"email": email, "password": password, "csrf_token": csrf(client, **kwargs)},
        **kwargs,
    )


def session_cookie_header(answer) -> str:
    cookies = [h for h in answer.headers.getlist("Set-Cookie") if h.startswith("session=")]
    assert cookies, answer.headers
    return cookies[-1]


def cookie_attributes(header: str) -> dict[str, str]:
    attributes = {}
    for part in header.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        attributes[name.lower()] = value
    return attributes


def is_logged_in(client) -> bool:
    answer = client.get("/admin/")
    return answer.status_code == 200


def run_cli(database_url: str, monkeypatch, *args: str):
    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    return CliRunner().invoke(main, list(args))


# --- the cookie ----------------------------------------------------------------------------------


def test_session_cookie_is_samesite_lax_httponly_and_lives_hours(app, client, researcher):
    answer = login(client)
    assert answer.status_code == 302
    attributes = cookie_attributes(session_cookie_header(answer))
    assert attributes["samesite"] == "Lax"
    assert "httponly" in attributes
    assert "secure" not in attributes  # plain HTTP on a laptop: a Secure cookie would be lost
    expires = parsedate_to_datetime(attributes["expires"])
    assert expires - datetime.now(UTC) <= timedelta(hours=12, minutes=1)
    assert expires - datetime.now(UTC) >= timedelta(hours=1)


def test_session_cookie_is_secure_over_https_behind_the_configured_proxy(database_url, researcher):
    proxied = create_app(
        {"DATABASE_URL": database_url, "TESTING": True, "SECRET_KEY": "test", "BEHIND_PROXY": 1}
    )
    try:
        client = proxied.test_client()
        # HTTPS as the proxy reports it (flask-wtf then also checks the Referer)
        https = {
            "headers": {"X-Forwarded-Proto": "https", "Referer": "https://localhost/admin/login"}
        }
        answer = login(client, **https)
        assert answer.status_code == 302
        attributes = cookie_attributes(session_cookie_header(answer))
        assert "secure" in attributes and attributes["samesite"] == "Lax"
        direct = create_app({"DATABASE_URL": database_url, "TESTING": True, "SECRET_KEY": "test"})
        try:
            answer = login(
                direct.test_client(),
                base_url="https://localhost",
                headers={"Referer": "https://localhost/admin/login"},
            )
            assert "secure" in cookie_attributes(session_cookie_header(answer))
        finally:
            direct.extensions["db_engine"].dispose()
    finally:
        proxied.extensions["db_engine"].dispose()


def test_session_idle_lifetime_is_configurable_in_hours(database_url, researcher, monkeypatch):
    monkeypatch.setenv("SESSION_LIFETIME_HOURS", "2")
    configured = create_app({"DATABASE_URL": database_url, "TESTING": True, "SECRET_KEY": "t"})
    try:
        assert configured.permanent_session_lifetime == timedelta(hours=2)
        answer = login(configured.test_client())
        expires = parsedate_to_datetime(cookie_attributes(session_cookie_header(answer))["expires"])
        assert timedelta(hours=1) < expires - datetime.now(UTC) <= timedelta(hours=2, minutes=1)
    finally:
        configured.extensions["db_engine"].dispose()


def test_an_idle_session_ends_even_if_the_browser_kept_the_cookie(database_url, researcher):
    """The server checks the cookie's signed age, not only the browser's expiry date."""
    import time

    short = create_app(
        {
            "DATABASE_URL": database_url,
            "TESTING": True,
            "SECRET_KEY": "test",
            "PERMANENT_SESSION_LIFETIME": timedelta(seconds=2),
        }
    )
    try:
        client = short.test_client()
        assert login(client).status_code == 302
        kept = client.get_cookie("session").value
        assert is_logged_in(client)
        time.sleep(3.5)
        replay = short.test_client()
        replay.set_cookie("session", kept)  # a browser that ignored the expiry date
        assert not is_logged_in(replay)
    finally:
        short.extensions["db_engine"].dispose()


def stolen_copy(app, client):
    """A second browser holding a copy of ``client``'s session cookie."""
    thief = app.test_client()
    thief.set_cookie("session", client.get_cookie("session").value)
    return thief


def test_a_copied_cookie_stops_working_after_logout(app, client, researcher):
    assert login(client).status_code == 302
    thief = stolen_copy(app, client)
    assert is_logged_in(thief)
    page = client.get("/admin/").get_data(as_text=True)
    token = TOKEN_PATTERN.search(page).group(1)
    assert client.post("/admin/logout", data={"csrf_token": token}).status_code == 302
    assert not is_logged_in(client)
    assert not is_logged_in(thief)


def test_a_cookie_stops_working_after_a_password_change(app, client, researcher, database_url):
    from app.researchers.accounts import set_password

    assert login(client).status_code == 302
    with app.app_context(), session_scope() as session:
        set_password(session, EMAIL, "another long password")
    assert not is_logged_in(client)
    assert login(client, "another long password").status_code == 302
    assert is_logged_in(client)


def test_disabled_or_deleted_researchers_are_out_at_once(
    app, client, researcher, database_url, monkeypatch
):
    assert login(client).status_code == 302
    result = run_cli(database_url, monkeypatch, "researcher", "disable", EMAIL)
    assert result.exit_code == 0, result.output
    assert not is_logged_in(client)
    assert login(client).status_code == 401  # nor can they log in again
    result = run_cli(database_url, monkeypatch, "researcher", "enable", EMAIL)
    assert result.exit_code == 0, result.output
    assert login(client).status_code == 302
    result = run_cli(database_url, monkeypatch, "researcher", "delete", EMAIL)
    assert result.exit_code == 0, result.output
    assert not is_logged_in(client)


# --- the login throttle --------------------------------------------------------------------------


def test_successful_logins_are_not_counted(app, client, researcher):
    for _ in range(15):
        assert login(client).status_code == 302


FAIL_LOGINS = """
import re, sys
from app import create_app
app = create_app({"TESTING": True, "SECRET_KEY": "test"})
client = app.test_client()
statuses = []
for i in range(int(sys.argv[1])):
    page = client.get("/admin/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    data = {"email": sys.argv[2], "password": sys.argv[3], "csrf_token": token}
    statuses.append(client.post("/admin/login", data=data).status_code)
print(" ".join(map(str, statuses)))
"""


def logins_in_another_process(database_url: str, count: int, password: str) -> list[int]:
    """``count`` logins from a separate Python process (a second gunicorn worker)."""
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", FAIL_LOGINS, str(count), EMAIL, password],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [int(s) for s in result.stdout.split()]


def test_throttle_holds_across_two_processes_sharing_the_database(database_url, researcher):
    """Two processes stand for two gunicorn workers: failures are counted in the database."""
    first = logins_in_another_process(database_url, 6, "wrong password one")
    second = logins_in_another_process(database_url, 6, "wrong password two")
    assert first == [401] * 6
    assert second == [401] * 4 + [429, 429]
    # the right password is refused too while the account is throttled
    assert logins_in_another_process(database_url, 1, PASSWORD) == [429]


def test_throttle_holds_against_gunicorn_with_two_workers(database_url, researcher, tmp_path):
    """Two gunicorn processes, failures over real HTTP connections, one after another."""
    import http.cookiejar
    import signal
    import socket
    import time
    import urllib.error
    import urllib.parse
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SECRET_KEY": "gunicorn-test",
        "PYTHONPATH": str(REPO),
        "PORT": str(port),
        "WEB_CONCURRENCY": "2",
        "GUNICORN_THREADS": "1",
    }
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    log = (tmp_path / "web.log").open("w")
    web = subprocess.Popen(
        [gunicorn, "--config", "gunicorn.conf.py", "app:create_app()"],
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )

    def attempt(password: str) -> int:
        page = opener.open(f"{base}/admin/login", timeout=10).read().decode()
        token = TOKEN_PATTERN.search(page).group(1)
        form = {"email": EMAIL, "password": password, "csrf_token": token}
        try:
            with opener.open(
                f"{base}/admin/login", urllib.parse.urlencode(form).encode(), timeout=10
            ) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    try:
        deadline = time.time() + 60
        while True:
            try:
                opener.open(f"{base}/admin/login", timeout=5).read()
                break
            except OSError:
                assert web.poll() is None, (tmp_path / "web.log").read_text()
                assert time.time() < deadline, (tmp_path / "web.log").read_text()
                time.sleep(0.3)
        answers = [attempt(f"wrong password {i}") for i in range(14)]
        assert answers == [401] * 10 + [429] * 4
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)
        log.close()


def test_throttle_counts_per_account_from_many_clients(app, researcher):
    """An attacker rotating addresses still hits the per-account limit."""
    answers = []
    for i in range(11):
        client = app.test_client()
        env = {"environ_base": {"REMOTE_ADDR": f"10.0.0.{i + 1}"}}
        answers.append(login(client, f"wrong {i} password", **env).status_code)
    assert answers[:10] == [401] * 10 and answers[10] == 429


def test_throttle_counts_per_client_across_accounts(app, client, researcher):
    """One client trying many e-mail addresses hits the per-client limit."""
    answers = [
        login(client, "wrong password!", email=f"guess{i}@example.org").status_code
        for i in range(11)
    ]
    assert answers[:10] == [401] * 10 and answers[10] == 429
    # another client may still log in to the real account
    assert login(app.test_client(), environ_base={"REMOTE_ADDR": "10.9.9.9"}).status_code == 302


def test_failures_older_than_the_longest_window_are_forgotten(app, client, researcher):
    """Each attempt deletes failures older than an hour, whoever they were for; newer ones
    stay and count."""
    from sqlalchemy import select

    from app.models import LoginFailure, utcnow

    with app.app_context(), session_scope() as session:
        for minutes, email in ((61, "old@example.org"), (59, "recent@example.org")):
            at = utcnow() - timedelta(minutes=minutes)
            session.add(LoginFailure(email=email, client="10.1.1.1", failed_at=at))
    assert login(client, "wrong password!").status_code == 401
    with app.app_context(), session_scope() as session:
        kept = session.scalars(select(LoginFailure.email).order_by(LoginFailure.id)).all()
    assert kept == ["recent@example.org", EMAIL]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "100000"])
def test_a_bad_session_lifetime_is_a_one_line_error(value, database_url, monkeypatch):
    monkeypatch.setenv("SESSION_LIFETIME_HOURS", value)
    result = run_cli(database_url, monkeypatch, "researcher", "list")
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: SESSION_LIFETIME_HOURS must be a number of hours above 0 (at most 744), "
        f"not {value!r}"
    )


# --- the throttle under parallel attempts --------------------------------------------------------


def web_server(database_url: str, log: Path) -> tuple[subprocess.Popen, str]:
    """``marginalia web`` as deployed (granian), 2 processes x 8 threads, in its own group."""
    import socket
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SECRET_KEY": "parallel-test",
        "PYTHONPATH": str(REPO),
        "PORT": str(port),
        "WEB_HOST": "127.0.0.1",
        "WEB_CONCURRENCY": "2",
        "WEB_THREADS": "8",
        "WEB_LOG_LEVEL": "warning",
    }
    with log.open("w") as handle:
        web = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "web"],
            cwd=REPO,
            env=env,
            start_new_session=True,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=5):
                return web, base
        except OSError:
            assert web.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)


def parallel_logins(base: str, logins: list[tuple[str, str]]) -> list[int]:
    """Each (e-mail, password) from a client of its own (its own cookie and CSRF token, read
    first), every POST released at the same moment; the statuses in the order given."""
    import threading

    import httpx

    clients = [httpx.Client(base_url=base, timeout=120) for _ in logins]
    try:
        tokens = [
            TOKEN_PATTERN.search(client.get("/admin/login").text).group(1) for client in clients
        ]
        start = threading.Barrier(len(logins))
        statuses: list[int] = [0] * len(logins)

        def post(n: int) -> None:
            email, password = logins[n]
            form = {"email": email, "password": password, "csrf_token": tokens[n]}
            start.wait()
            statuses[n] = clients[n].post("/admin/login", data=form).status_code

        threads = [threading.Thread(target=post, args=(n,)) for n in range(len(logins))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return statuses
    finally:
        for client in clients:
            client.close()


PARALLEL = 60  # the attack seen: 60 to 100 wrong passwords at once, 23 to 25 of them checked


@pytest.mark.parametrize("accounts", ["one account", "many accounts"])
def test_parallel_wrong_passwords_check_at_most_the_limit(database_url, tmp_path, accounts):
    """Sixty wrong passwords sent at once from one address to a deployed server (two
    processes): at most ten are checked (a 401), the others are refused unchecked (a 429),
    whether they name one account (both limits) or sixty (the per-client limit). The count of
    stored failures agrees, and afterwards even the right password is refused."""
    import signal

    from sqlalchemy import func, select

    from app.models import LoginFailure
    from app.researchers.accounts import create_researcher

    # The production hash (scrypt): each check takes tens of milliseconds, as for an attacker.
    setup = create_app({"DATABASE_URL": database_url, "SECRET_KEY": "test"})
    with setup.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD)
    setup.extensions["db_engine"].dispose()
    if accounts == "one account":
        emails = [EMAIL] * PARALLEL
    else:
        emails = [f"guess{n}@example.org" for n in range(PARALLEL)]
    web, base = web_server(database_url, tmp_path / "web.log")
    try:
        statuses = parallel_logins(base, [(e, f"wrong password {n}") for n, e in enumerate(emails)])
        after = parallel_logins(base, [(EMAIL, PASSWORD)])
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)
    assert sorted(set(statuses)) == [401, 429], statuses
    assert statuses.count(401) == 10, f"{statuses.count(401)} passwords checked: {statuses}"
    assert after == [429]
    with setup.app_context(), session_scope() as session:
        stored = session.scalar(select(func.count()).select_from(LoginFailure))
    setup.extensions["db_engine"].dispose()
    assert stored == 10
