"""``marginalia study pause|close|reopen|archive|delete|remove-document|replace-documents|
instructions|questionnaire|return-codes|answers``, run in this process with their one-line
errors on stderr (tests/test_cli.py runs the real console script)."""

from __future__ import annotations

import json

from sqlalchemy import create_engine, text

from tests.helpers import cli_in_process
from tests.test_cli import (  # noqa: F401
    DOCS,
    assert_one_line_error,
    create_study_in_process,
    url,
)


def run(database: str, *args: str):
    return cli_in_process({"DATABASE_URL": database}, *args)


def _scalar(database: str, sql: str):
    engine = create_engine(database)
    try:
        with engine.connect() as connection:
            return connection.execute(text(sql)).scalar()
    finally:
        engine.dispose()


def test_status_commands_and_their_refusals(url) -> None:  # noqa: F811
    create_study_in_process(url, DOCS)
    assert run(url, "study", "pause", "demo").stdout.strip() == "study demo is paused"
    assert_one_line_error(run(url, "study", "pause", "demo"), "is paused: it cannot pause")
    assert run(url, "study", "archive", "demo").stdout.strip() == "study demo is archived"
    assert run(url, "study", "reopen", "demo").stdout.strip() == "study demo is open"
    assert_one_line_error(run(url, "study", "close", "nope"), "nope")
    assert _scalar(url, "select status from studies") == "open"


def test_delete_needs_the_slug_again(url) -> None:  # noqa: F811
    create_study_in_process(url, DOCS)
    assert_one_line_error(
        run(url, "study", "delete", "demo", "--confirm", "other"), "type the study's slug"
    )
    assert _scalar(url, "select count(*) from studies") == 1
    done = run(url, "study", "delete", "demo", "--confirm", "demo")
    assert done.returncode == 0 and "2 documents" in done.stdout
    assert _scalar(url, "select count(*) from documents") == 0


def test_questionnaire_errors_name_file_line_field(url, tmp_path) -> None:  # noqa: F811
    create_study_in_process(url, DOCS)
    bad = tmp_path / "journey.yaml"
    bad.write_text(
        "after_study:\n  - id: q\n    type: choice\n    prompt: Pick\n    options: [a]\n"
    )
    assert_one_line_error(
        run(url, "study", "questionnaire", "demo", str(bad)),
        f"{bad}:5: after_study[0].options: must be a list of at least 2 options",
    )
    bad.write_text("consent: Agree?\nafter_study:\n  - {id: q, type: text, prompt: Why}\n")
    shown = run(url, "study", "questionnaire", "demo", str(bad))
    assert shown.stdout.strip() == (
        "study demo: consent yes, 0 questions after each document, 1 question after the study"
    )
    assert run(url, "study", "questionnaire", "demo", "--clear").returncode == 0
    assert "journey" not in json.loads(_scalar(url, "select settings from studies"))


def test_instructions_return_codes_and_document_removal(url, tmp_path) -> None:  # noqa: F811
    create_study_in_process(url, DOCS)
    notes = tmp_path / "instructions.md"
    notes.write_text("Mark **every** error.\n")
    assert run(url, "study", "instructions", "demo", str(notes)).returncode == 0
    assert run(url, "study", "instructions", "demo").stdout.strip() == "Mark **every** error."
    assert_one_line_error(
        run(url, "study", "return-codes", "demo", "--no-places", "=HYPERLINK(x)"),
        "letters, digits",
    )
    codes = run(url, "study", "return-codes", "demo", "--no-places", "NOPLACES")
    assert codes.stdout.splitlines() == ["no_places: NOPLACES", "unavailable: -", "declined: -"]
    assert run(url, "study", "remove-document", "demo", "d2").returncode == 0
    assert_one_line_error(run(url, "study", "remove-document", "demo", "d2"), "no document")
    assert _scalar(url, "select count(*) from documents") == 1


def test_replace_documents_all_or_nothing(url, tmp_path) -> None:  # noqa: F811
    create_study_in_process(url, DOCS)
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"d2": ["Something happens now."], "d3": ["A third."]}))
    done = run(url, "study", "replace-documents", "demo", str(newer), "--no-ner")
    assert done.returncode == 0, done.stderr
    assert "2 documents stored, 1 document of them replacing" in done.stdout
    segment = _scalar(
        url,
        "select s.text from segments s join documents d on d.id = s.document_id "
        "where d.external_id = 'd2'",
    )
    assert segment == "Something happens now."
    assert _scalar(url, "select count(*) from documents") == 3
