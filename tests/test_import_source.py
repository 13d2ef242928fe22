"""A document's source (the system ``marginalia compare`` groups by): ``--source`` on the
command line and the upload form, and the column of each format (docs/FORMATS.md)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.db import session_scope
from app.formats import parse_documents
from app.models import Document
from tests.conftest import make_study, shared_file
from tests.helpers import run_import_worker
from tests.test_import_jobs import admin, database_url, post_upload  # noqa: F401 (fixtures)


def sources(app) -> dict[str, str]:
    with app.app_context(), session_scope() as session:
        return dict(session.execute(select(Document.external_id, Document.source)).all())


def test_each_format_names_the_source(tmp_path):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text(json.dumps({"id": "a1", "segments": ["A."], "meta": {"source": "gpt-4"}}))
    assert parse_documents(jsonl)[0].source == "gpt-4"
    falte = tmp_path / "falte.json"
    falte.write_text(json.dumps({"s1": {"sentences": ["A."], "source": "claude"}}))
    assert parse_documents(falte, "falte")[0].source == "claude"
    thresh = tmp_path / "thresh.json"
    thresh.write_text(
        json.dumps([{"id": "t1", "target": "A b.", "system": "mixtral", "edits": []}])
    )
    assert parse_documents(thresh, "thresh")[0].source == "mixtral"
    studio = tmp_path / "tasks.json"
    studio.write_text(json.dumps([{"id": 1, "data": {"text": "A b.", "system": "llama"}}]))
    assert parse_documents(studio, "labelstudio")[0].source == "llama"
    # SNaC's ids encode the system (ours): book_175b13 -> book_175b
    snac = {d.external_id: d.source for d in parse_documents(shared_file("snac", "dev.json"))}
    assert snac["book_175b13"] == "book_175b" and snac["tripod7"] == "tripod"
    assert {d.source for d in parse_documents(falte, "falte", source="  human ")} == {"human"}
    for bad, message in (("", "is empty"), ("x" * 101, "longer than 100"), ("a\x00", "NUL")):
        with pytest.raises(Exception, match=message):
            parse_documents(falte, "falte", source=bad)


def test_import_and_upload_set_the_source(app, admin, database_url, tmp_path, monkeypatch):  # noqa: F811
    from app.cli import main

    make_study(app, documents=[("doc-0", ["Existing."])])
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    (tmp_path / "docs.json").write_text(json.dumps({"p1": ["One."], "p2": ["Two."]}))
    args = ["import", "demo", str(tmp_path / "docs.json"), "--no-ner", "--source", "bart"]
    cli = CliRunner().invoke(main, args)
    assert cli.exit_code == 0, cli.output
    bad = CliRunner().invoke(main, [*args[:4], "--source", "x" * 101])
    assert bad.exit_code == 1 and "longer than 100" in bad.output
    content = json.dumps({"u1": ["Three."]}).encode()
    assert post_upload(admin, content, source="pegasus").status_code == 302
    assert run_import_worker(app) == {"done": 1}
    assert post_upload(admin, content, name="again.json", source="\x07").status_code == 400
    assert sources(app) == {"doc-0": "doc", "p1": "bart", "p2": "bart", "u1": "pegasus"}
