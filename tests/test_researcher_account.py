"""The account page: a researcher changes their password and manages their own API keys.

A new key is shown once (``no-store``), works as ``Authorization: Bearer``, and is stored only
as a hash; revoking it refuses it at once; another researcher's key cannot be seen or revoked
(404, and it keeps working). A password change needs the current password (a wrong one counts
as a failed login), ends every other session and keeps this browser logged in. SQLite and
Postgres.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import ApiKey, LoginFailure, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, count_rows

OWNER, OTHER = "owner@example.org", "other@example.org"
PASSWORD = "a long enough password"
TOKEN_PATTERN = re.compile(r'name="csrf_token" value="([^"]+)"')
KEY_PATTERN = re.compile(r'<code class="secret">(mgk_[0-9a-f]{8}_[A-Za-z0-9_-]+)</code>')


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def accounts(app):
    """Study `demo` owned by OWNER; OTHER is a researcher without access to it."""
    from app.researchers.accounts import create_researcher

    make_study(app, documents=DOCUMENTS)
    with app.app_context(), session_scope() as session:
        owner = create_researcher(session, OWNER, PASSWORD)
        create_researcher(session, OTHER, PASSWORD)
        session.scalar(select(Study).where(Study.slug == "demo")).owner_id = owner.id


def csrf(client, path: str = "/admin/login") -> str:
    return TOKEN_PATTERN.search(client.get(path).get_data(as_text=True)).group(1)


def logged_in(app, email: str = OWNER):
    client = app.test_client()
    answer = client.post(
        "/admin/login", data={"email": email, "password": PASSWORD, "csrf_token": csrf(client)}
    )
    assert answer.status_code == 302
    return client


def create_key(client, label: str = "nightly export"):
    return client.post(
        "/admin/account/keys", data={"label": label, "csrf_token": csrf(client, "/admin/account")}
    )


def open_with(client, key: str):
    return client.post(
        "/api/assignments",
        json={"study": "demo", "document": "doc-2", "worker_id": "w1"},
        headers={"Authorization": f"Bearer {key}"},
    )


def test_a_new_key_is_shown_once_works_and_is_stored_as_a_hash(app, accounts):
    owner = logged_in(app)
    answer = create_key(owner)
    assert answer.status_code == 201
    assert "no-store" in answer.headers["Cache-Control"]
    key = KEY_PATTERN.search(answer.get_data(as_text=True)).group(1)
    assert key not in answer.headers.get("Set-Cookie", "")  # never in the cookie (flash)

    later = owner.get("/admin/account").get_data(as_text=True)
    assert key not in later and key.split("_")[1] in later and "nightly export" in later

    with app.app_context(), session_scope() as session:
        (row,) = session.scalars(select(ApiKey)).all()
        assert row.secret_hash == hashlib.sha256(key.encode()).hexdigest()
    assert open_with(app.test_client(), key).status_code in (200, 201)  # opened with the key


def test_revoking_a_key_refuses_it_at_once(app, accounts):
    owner = logged_in(app)
    key = KEY_PATTERN.search(create_key(owner).get_data(as_text=True)).group(1)
    prefix = "_".join(key.split("_")[:2])
    answer = owner.post(
        f"/admin/account/keys/{prefix}/revoke", data={"csrf_token": csrf(owner, "/admin/account")}
    )
    assert answer.status_code == 302
    assert open_with(app.test_client(), key).status_code == 401
    assert "revoked" in owner.get("/admin/account").get_data(as_text=True)


def test_another_researchers_key_is_neither_listed_nor_revocable(app, accounts):
    owner = logged_in(app)
    key = KEY_PATTERN.search(create_key(owner).get_data(as_text=True)).group(1)
    prefix = "_".join(key.split("_")[:2])
    other = logged_in(app, OTHER)
    assert prefix not in other.get("/admin/account").get_data(as_text=True)
    answer = other.post(
        f"/admin/account/keys/{prefix}/revoke", data={"csrf_token": csrf(other, "/admin/account")}
    )
    assert answer.status_code == 404
    assert open_with(app.test_client(), key).status_code in (200, 201)  # opened with the key


def test_account_forms_need_a_login_and_a_csrf_token(app, accounts):
    anonymous = app.test_client()
    assert anonymous.get("/admin/account").status_code == 302
    assert anonymous.post("/admin/account/keys", data={"label": "x"}).status_code in (302, 400)
    owner = logged_in(app)
    assert owner.post("/admin/account/keys", data={"label": "x"}).status_code == 400
    assert count_rows(app, ApiKey) == 0


def test_a_hostile_label_is_text_and_a_control_character_is_refused(app, accounts):
    owner = logged_in(app)
    assert create_key(owner, "<img src=x onerror=alert(1)>").status_code == 201
    page = owner.get("/admin/account").get_data(as_text=True)
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    answer = create_key(owner, "bad\x00label")
    assert answer.status_code == 400 and "cannot be stored" in answer.get_data(as_text=True)
    assert create_key(owner, "x" * 201).status_code == 400
    assert count_rows(app, ApiKey) == 1


def change(client, current: str, new: str, again: str | None = None):
    return client.post(
        "/admin/account/password",
        data={
            "current": current,
            "new": new,
            "again": new if again is None else again,
            "csrf_token": csrf(client, "/admin/account"),
        },
    )


def test_a_password_change_needs_the_current_password_and_ends_other_sessions(app, accounts):
    owner = logged_in(app)
    elsewhere = logged_in(app)  # the same account in another browser

    wrong = change(owner, "not the password", "a new long password")
    assert wrong.status_code == 400 and "nothing changed" in wrong.get_data(as_text=True)
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(LoginFailure.email)) == OWNER
    differ = change(owner, PASSWORD, "a new long password", "another new password")
    assert differ.status_code == 400 and "differ" in differ.get_data(as_text=True)
    short = change(owner, PASSWORD, "short")
    assert short.status_code == 400 and "at least" in short.get_data(as_text=True)
    assert elsewhere.get("/admin/").status_code == 200  # nothing changed so far

    assert change(owner, PASSWORD, "a new long password").status_code == 302
    assert owner.get("/admin/").status_code == 200  # this browser stays in
    assert elsewhere.get("/admin/").status_code == 302  # every other session ended
    fresh = app.test_client()
    old = fresh.post(
        "/admin/login", data={"email": OWNER, "password": PASSWORD, "csrf_token": csrf(fresh)}
    )
    assert old.status_code == 401


def test_passwords_are_hashed_with_scrypt_unless_the_suite_says_otherwise(app, database_url):
    """The suite's app fixture hashes cheaply (tests/conftest.py TEST_PASSWORD_HASH); an app
    configured as in production, and the CLI, use scrypt, and both kinds log in."""
    from app import create_app
    from app.researchers.accounts import authenticate, create_researcher

    with app.app_context(), session_scope() as session:
        cheap = create_researcher(session, "cheap@example.org", PASSWORD)
        assert cheap.password_hash.startswith("pbkdf2:sha256:1$")
    production = create_app({"DATABASE_URL": database_url, "SECRET_KEY": "test"})
    try:
        with production.app_context(), session_scope() as session:
            strong = create_researcher(session, "strong@example.org", PASSWORD)
            assert strong.password_hash.startswith("scrypt:32768:8:1$")
            assert authenticate(session, "strong@example.org", PASSWORD) is not None
            assert authenticate(session, "cheap@example.org", PASSWORD) is not None
            assert authenticate(session, "nobody@example.org", PASSWORD) is None
    finally:
        production.extensions["db_engine"].dispose()
