"""Researchers' API keys: printed once, stored hashed, sent as ``Authorization: Bearer``;
``POST /api/assignments`` with the key of the study's owner, a collaborator or an admin
names any document and gets the existing token back; every other key is refused (401 for a
bad, revoked or disabled one, 404 for a study its researcher may not see), on SQLite and
Postgres."""

from __future__ import annotations

import hashlib

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.db import session_scope
from app.models import ApiKey, Assignment, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, count_rows, db_snapshot

PASSWORD = "a long enough password"
OWNER, HELPER, OUTSIDER, ADMIN = (
    "owner@example.org",
    "helper@example.org",
    "outsider@example.org",
    "admin@example.org",
)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def cli(database_url, monkeypatch):
    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    runner = CliRunner()

    def run(*args: str, ok: bool = True):
        result = runner.invoke(main, list(args))
        if ok:
            assert result.exit_code == 0, result.output
        return result

    return run


@pytest.fixture
def study(app, cli):
    """Study `demo` owned by OWNER, shared with HELPER; OUTSIDER and ADMIN exist too."""
    for email in (OWNER, HELPER, OUTSIDER):
        cli("researcher", "create", email, "--password", PASSWORD)
    cli("researcher", "create", ADMIN, "--password", PASSWORD, "--admin")
    make_study(app, documents=DOCUMENTS)
    cli("study", "set-owner", "demo", OWNER)
    cli("study", "share", "demo", HELPER)
    return "demo"


def new_key(cli, email: str) -> str:
    key = cli("researcher", "key", email).output.strip()
    assert key.startswith("mgk_") and len(key) > 40
    return key


def open_with(client, key: str | None, worker: str = "w1", document: str = "doc-2"):
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return client.post(
        "/api/assignments",
        json={"study": "demo", "document": document, "worker_id": worker},
        headers=headers,
    )


def test_key_is_printed_once_and_stored_only_as_a_hash(app, cli, study):
    key = new_key(cli, OWNER)
    assert new_key(cli, OWNER) != key
    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(ApiKey)).all()
        assert len(rows) == 2
        digests = {row.secret_hash for row in rows}
        assert hashlib.sha256(key.encode()).hexdigest() in digests
        assert any(key.startswith(row.prefix + "_") for row in rows)
    dump = repr(db_snapshot(app))
    assert key.split("_", 2)[2] not in dump  # the secret itself is nowhere in the database
    listing = cli("researcher", "keys", OWNER).output
    assert key[:12] in listing and key not in listing


@pytest.mark.parametrize("holder", [OWNER, HELPER, ADMIN])
def test_owner_collaborator_and_admin_keys_open_and_resume_any_document(
    app, client, cli, study, holder
):
    key = new_key(cli, holder)
    first = open_with(client, key, document="doc-2")
    assert first.status_code == 201, first.get_json()
    again = open_with(client, key, document="doc-2")
    assert again.status_code == 200
    assert again.get_json()["token"] == first.get_json()["token"]
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(ApiKey.last_used_at)) is not None


def test_keys_that_must_not_work_change_nothing(app, client, cli, study):
    outsider_key = new_key(cli, OUTSIDER)
    owner_key = new_key(cli, OWNER)
    before = count_rows(app, Assignment)
    # a key of a researcher who may not see the study: as if the study did not exist
    answer = open_with(client, outsider_key)
    assert answer.status_code == 404 and "error" in answer.get_json()
    # forged, malformed and non-Bearer credentials
    for header in (
        "Bearer mgk_00000000_" + "x" * 43,
        "Bearer " + owner_key[:-1] + ("A" if owner_key[-1] != "A" else "B"),
        "Bearer ",
        "Basic " + owner_key,
        owner_key,
    ):
        answer = client.post(
            "/api/assignments",
            json={"study": "demo", "document": "doc-2", "worker_id": "w1"},
            headers={"Authorization": header},
        )
        assert answer.status_code == 401, header
        assert "error" in answer.get_json()
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    # revoked
    prefix = owner_key[:12]  # "mgk_" and 8 hex digits
    cli("researcher", "revoke-key", prefix)
    assert open_with(client, owner_key).status_code == 401
    assert count_rows(app, Assignment) == before
    missing = cli("researcher", "revoke-key", "mgk_nothere", ok=False)
    assert missing.exit_code == 1 and missing.output.startswith("error: no API key")


def test_disabled_and_deleted_researchers_keys_stop_at_once(app, client, cli, study):
    key = new_key(cli, HELPER)
    assert open_with(client, key, worker="w1").status_code == 201
    cli("researcher", "disable", HELPER)
    assert open_with(client, key, worker="w2").status_code == 401
    cli("researcher", "enable", HELPER)
    assert open_with(client, key, worker="w2").status_code == 201
    cli("study", "unshare", "demo", HELPER)
    assert open_with(client, key, worker="w3").status_code == 404
    cli("researcher", "delete", HELPER)
    assert open_with(client, key, worker="w3").status_code == 401
    with app.app_context(), session_scope() as session:
        assert session.scalars(select(ApiKey)).all() == []  # its keys went with it
        assert session.scalar(select(Study.owner_id)) is not None
