"""``marginalia researcher ...`` and the study ownership commands: accounts, roles, listing,
disabling, deleting (refused while the researcher owns studies unless they are reassigned),
``study create --owner``, ``share``/``unshare``/``set-owner``; and how migration 0002 treats
databases made before owners existed."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, select, text

from app.db import session_scope
from app.models import Researcher, Study, StudyCollaborator
from tests.conftest import BACKENDS, REPO, make_database_url

PASSWORD = "a long enough password"
TAXONOMY = str(REPO / "taxonomies" / "snac.yaml")


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
        else:
            assert result.exit_code == 1, result.output
            lines = result.output.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), result.output
        return result

    return run


def owners(app) -> dict[str, str | None]:
    with app.app_context(), session_scope() as session:
        emails = dict(session.execute(select(Researcher.id, Researcher.email)).all())
        return {
            slug: emails.get(owner)
            for slug, owner in session.execute(select(Study.slug, Study.owner_id))
        }


def test_accounts_roles_and_listing(app, cli):
    assert (
        "(researcher)"
        in cli("researcher", "create", "A@Example.org", "--password", PASSWORD).output
    )
    assert (
        "(admin)"
        in cli("researcher", "create", "b@example.org", "--password", PASSWORD, "--admin").output
    )
    cli("researcher", "create", "a@example.org", "--password", PASSWORD, ok=False)
    cli("researcher", "create", "not-an-address", "--password", PASSWORD, ok=False)
    cli("researcher", "create", "c@example.org", "--password", "short", ok=False)
    cli("researcher", "set-role", "a@example.org", "admin")
    cli("researcher", "set-role", "a@example.org", "boss", ok=False)
    cli("researcher", "set-role", "nobody@example.org", "admin", ok=False)
    cli("researcher", "disable", "b@example.org")
    cli("study", "create", "alpha", "--taxonomy", TAXONOMY, "--owner", "b@example.org")
    cli("researcher", "key", "b@example.org")
    lines = cli("researcher", "list").output.strip().splitlines()
    assert lines[0].split("\t") == ["email", "role", "state", "studies", "keys", "last_login"]
    rows = {line.split("\t")[0]: line.split("\t")[1:5] for line in lines[1:]}
    assert rows == {
        "a@example.org": ["admin", "active", "0", "0"],
        "b@example.org": ["admin", "disabled", "1", "1"],
    }


def test_study_owner_and_sharing_commands(app, cli):
    cli("researcher", "create", "own@example.org", "--password", PASSWORD)
    cli("researcher", "create", "col@example.org", "--password", PASSWORD)
    # an unknown owner is refused before anything is created
    cli("study", "create", "alpha", "--taxonomy", TAXONOMY, "--owner", "x@example.org", ok=False)
    assert owners(app) == {}
    cli("study", "create", "alpha", "--taxonomy", TAXONOMY, "--owner", "own@example.org")
    cli("study", "create", "orphan", "--taxonomy", TAXONOMY)
    assert owners(app) == {"alpha": "own@example.org", "orphan": None}
    cli("study", "share", "alpha", "col@example.org")
    cli("study", "share", "alpha", "col@example.org")  # again: no change
    cli("study", "share", "alpha", "own@example.org", ok=False)
    cli("study", "share", "alpha", "x@example.org", ok=False)
    cli("study", "share", "nope", "col@example.org", ok=False)
    with app.app_context(), session_scope() as session:
        assert len(session.scalars(select(StudyCollaborator)).all()) == 1
    cli("study", "unshare", "alpha", "col@example.org")
    cli("study", "unshare", "alpha", "col@example.org", ok=False)
    cli("study", "set-owner", "orphan", "col@example.org")
    assert owners(app) == {"alpha": "own@example.org", "orphan": "col@example.org"}


def test_delete_refuses_an_owner_unless_the_studies_are_reassigned(app, cli):
    cli("researcher", "create", "own@example.org", "--password", PASSWORD)
    cli("researcher", "create", "heir@example.org", "--password", PASSWORD)
    cli("researcher", "create", "col@example.org", "--password", PASSWORD)
    cli("study", "create", "alpha", "--taxonomy", TAXONOMY, "--owner", "own@example.org")
    cli("study", "share", "alpha", "col@example.org")
    refused = cli("researcher", "delete", "own@example.org", ok=False)
    assert "owns 1 studies (alpha)" in refused.output and "--reassign-to" in refused.output
    cli("researcher", "delete", "own@example.org", "--reassign-to", "own@example.org", ok=False)
    cli("researcher", "delete", "own@example.org", "--reassign-to", "x@example.org", ok=False)
    assert owners(app) == {"alpha": "own@example.org"}
    done = cli("researcher", "delete", "own@example.org", "--reassign-to", "heir@example.org")
    assert "1 studies now owned by heir@example.org" in done.output
    assert owners(app) == {"alpha": "heir@example.org"}
    cli("researcher", "delete", "col@example.org")  # a collaborator owns nothing: deleted
    with app.app_context(), session_scope() as session:
        assert session.scalars(select(StudyCollaborator)).all() == []
        assert sorted(session.scalars(select(Researcher.email))) == ["heir@example.org"]
    cli("researcher", "delete", "col@example.org", ok=False)


def test_migration_keeps_old_studies_for_admins_and_makes_the_first_researcher_one(
    database_url,
):
    """A database from before owners: its studies get no owner (admins only) and its
    earliest researcher becomes the admin who sees them."""
    from alembic import command

    from app.migrate import alembic_config, upgrade

    command.downgrade(alembic_config(database_url), "0001")
    engine = create_engine(database_url)
    try:
        with engine.begin() as connection:
            for email in ("first@example.org", "second@example.org"):
                connection.execute(
                    text(
                        "INSERT INTO researchers (email, password_hash, created_at) "
                        "VALUES (:email, 'x', CURRENT_TIMESTAMP)"
                    ),
                    {"email": email},
                )
            connection.execute(
                text(
                    "INSERT INTO studies (slug, title, taxonomy_name, taxonomy, taxonomy_hash, "
                    "annotators_per_doc, suggestions, entity_labels, platform, settings, "
                    "created_at) VALUES ('old', '', 't', '{}', 'h', 3, 'hidden', '[]', "
                    "'generic', '{}', CURRENT_TIMESTAMP)"
                )
            )
        upgrade(database_url)
        with engine.connect() as connection:
            roles = dict(connection.execute(text("SELECT email, role FROM researchers")).all())
            assert roles == {"first@example.org": "admin", "second@example.org": "researcher"}
            assert connection.execute(text("SELECT owner_id FROM studies")).all() == [(None,)]
            versions = connection.execute(text("SELECT session_version FROM researchers")).all()
            assert versions == [(0,), (0,)]
    finally:
        engine.dispose()


def test_demo_study_has_no_owner_unless_given_one(app, cli):
    cli("demo", "--owner", "nobody@example.org", ok=False)
    assert owners(app) == {}  # refused before anything was made
    cli("researcher", "create", "own@example.org", "--password", PASSWORD)
    cli("demo", "--slug", "demo-owned", "--owner", "own@example.org")
    cli("study", "create", "plain", "--taxonomy", TAXONOMY)
    assert owners(app) == {"demo-owned": "own@example.org", "plain": None}
