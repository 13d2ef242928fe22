"""Imports say what they did with every part of the file: a SNaC file's
errors imported without --gold are counted as not imported, with the options that keep them;
--as-work keeps them as imported work, one imported worker per vote rank, so that the SNaC
export gives the same votes back; --checks says how many checks it planted and where; the
Manage page shows each document's role. The command line and the admin upload, on SQLite."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment
from tests.conftest import make_study
from tests.helpers import export_text

TEXT = "Anna met Bob at the station. Bob said hello to the wrong person."
SNAC = {
    "story-1": {
        "0": {
            "text": TEXT,
            "errors": [
                {"span": "the wrong person", "error_type": "CharE", "votes": 3},
                {"span": "Anna", "error_type": "RefE", "votes": 1},
                {"span": "nowhere to be found", "error_type": "GramE", "votes": 2},
            ],
        }
    }
}


@pytest.fixture
def cli(database_url, monkeypatch, tmp_path):
    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args))

    path = tmp_path / "snac.json"
    path.write_text(json.dumps(SNAC))
    invoke.snac = str(path)  # type: ignore[attr-defined]
    return invoke


def test_a_snac_file_without_gold_says_its_errors_were_not_imported(app, cli):
    make_study(app, documents=[("other", ["Other."])])
    result = cli("import", "demo", cli.snac, "--no-ner")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("imported 1 document (1 segment), ")
    assert (
        "3 annotations in the file not imported (--gold keeps them as gold, --checks as "
        "attention checks, --as-work as imported work)" in result.output
    )


def test_as_work_keeps_a_snac_file_as_one_worker_per_vote_rank(app, cli):
    make_study(app, documents=[("other", ["Other."])])
    result = cli("import", "demo", cli.snac, "--no-ner", "--as-work")
    assert result.exit_code == 0, result.output
    # 3 + 1 votes placed; "nowhere to be found" is in no segment: said, not stored
    assert "4 annotations kept as 3 imported workers' assignments" in result.output
    assert "1 annotation not found in their segment (not stored)" in result.output
    assert "not imported" not in result.output
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(Assignment.worker_id, Assignment.status, Assignment.platform).order_by(
                Assignment.worker_id
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("vote-1", "submitted", "import"),
        ("vote-2", "submitted", "import"),
        ("vote-3", "submitted", "import"),
    ]
    # the SNaC export aggregates them back: the same votes
    snac = json.loads(export_text(app, "demo", "snac"))
    errors = sorted((e["span"], e["votes"]) for e in snac["story-1"]["0"]["errors"])
    assert errors == [("Anna", 1), ("the wrong person", 3)]
    both = cli("import", "demo", cli.snac, "--no-ner", "--as-work", "--gold")
    assert both.exit_code == 1 and "--as-work cannot be combined" in both.output


def test_checks_say_how_many_they_planted_and_the_manage_page_shows_roles(app, client, cli):
    from app.researchers.accounts import create_researcher
    from tests.test_admin import EMAIL, PASSWORD, login

    make_study(app, documents=[("other", ["Other."])])
    result = cli("import", "demo", cli.snac, "--no-ner", "--checks")
    assert result.exit_code == 0, result.output
    assert "3 attention checks planted in 1 document" in result.output
    assert "1 gold span not found verbatim in their segment" in result.output
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    login(client)
    page = client.get("/admin/studies/demo/manage").get_data(as_text=True)
    assert '<tr data-document="story-1" data-role="check">' in page
    assert "real work with attention checks (3)" in page
    assert '<tr data-document="other" data-role="real">' in page


def test_the_upload_says_what_it_did_on_the_dashboard(app, client):
    from tests.test_admin import EMAIL, PASSWORD, login, upload
    from tests.test_import_jobs import imports

    make_study(app, documents=[("other", ["Other."])])
    with app.app_context(), session_scope() as session:
        from app.researchers.accounts import create_researcher

        create_researcher(session, EMAIL, PASSWORD, role="admin")
    login(client)
    content = json.dumps(SNAC).encode()
    assert upload(client, content, "plain.json", format="snac", ner="").status_code == 302
    checks = {"story-2": SNAC["story-1"]}
    answer = upload(
        client, json.dumps(checks).encode(), "c.json", format="snac", checks="1", ner=""
    )
    assert answer.status_code == 302
    messages = [job["message"] for job in imports(client)]
    assert any(
        "3 annotations in the file not imported (tick" in m and "Keep the annotations" in m
        for m in messages
    ), messages
    assert any("3 attention checks planted in 1 document" in m for m in messages), messages
