"""The Alembic revisions and ``app/models.py`` describe the same schema, on both databases,
and the revisions form one line (one head), each downgradable back to an empty database."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

from app.migrate import alembic_config, upgrade
from app.models import Base
from tests.conftest import BACKENDS, make_database_url


def _differences(url: str) -> list:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True, "render_as_batch": True}
            )
            return compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_migrated_schema_equals_the_models(backend, request, tmp_path) -> None:
    """A database migrated to head: autogenerate finds nothing left to do."""
    differences = _differences(make_database_url(backend, request, tmp_path))
    assert differences == [], "models.py and migrations/ disagree:\n" + "\n".join(
        map(str, differences)
    )


def test_revisions_form_one_line() -> None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    heads = script.get_heads()
    assert len(heads) == 1, f"several heads {heads}: re-chain the new revisions"
    assert len(script.get_bases()) == 1


def test_downgrade_to_base_and_up_again(tmp_path) -> None:
    from alembic import command

    url = f"sqlite:///{tmp_path / 'roundtrip.db'}"
    upgrade(url)
    command.downgrade(alembic_config(url), "base")
    engine = create_engine(url)
    try:
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    finally:
        engine.dispose()
    upgrade(url)
    assert _differences(url) == []
