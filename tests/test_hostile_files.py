"""Hostile document files and study fields, on SQLite and Postgres: each
input that gave a 500 (or a traceback from ``marginalia import``) is refused with a 400 page
and the same one-line CLI error, and nothing of the file is stored."""

from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner
from markupsafe import escape

from app.db import session_scope
from app.documents.studies import create_study, import_documents
from app.errors import InvalidInput
from app.formats import DocumentInput
from tests.conftest import BACKENDS, REPO, make_database_url, make_study
from tests.helpers import db_snapshot, run_import_worker
from tests.test_admin import admin, csrf, researcher  # noqa: F401 - fixtures

DEEP = 50_000
FALTE_OK = {"sentences": ["Anna walks home."]}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def snac_gold(**error) -> bytes:
    body = {"span": "Bob", "error_type": "CharE", "votes": 1, **error}
    return json.dumps({"gold-1": {"0": {"text": "Anna met Bob.", "errors": [body]}}}).encode()


def falte(**meta) -> bytes:
    return json.dumps({"story-1": {**FALTE_OK, **meta}}).encode()


# name: (file name, content, upload form fields, words of the message)
FILES = {
    "deeply nested JSON": (
        "deep.json",
        b'{"d": ' + b"[" * DEEP + b"]" * DEEP + b"}",
        {},
        "nested",
    ),
    "deeply nested JSON line": (
        "deep.jsonl",
        b'{"id": "d", "segments": ["A."], "meta": ' + b"[" * DEEP + b"]" * DEEP + b"}\n",
        {},
        "nested",
    ),
    "surrogate in FALTE source": ("s.json", falte(source="\ud800"), {}, "surrogate"),
    "NUL in FALTE source": ("n.json", falte(source="a\x00b"), {}, "NUL"),
    "surrogate in a meta key": ("k.json", falte(**{"x\udfff": 1}), {}, "surrogate"),
    "NUL deep in meta": ("m.json", falte(extra={"list": ["ok", "a\x00"]}), {}, "NUL"),
    "NaN in meta": ("nan.json", b'{"story-1": {"sentences": ["A."], "score": NaN}}', {}, "NaN"),
    "meta nested too deeply": (
        "md.json",
        falte(extra=json.loads("[" * 40 + "]" * 40)),
        {},
        "nested",
    ),
    "CR in a document id": ("cr.json", json.dumps({"a\rb": ["A."]}).encode(), {}, "control"),
    "surrogate in a gold span": (
        "g1.json",
        snac_gold(span="Bob\ud800"),
        {"gold": "1", "format": "snac"},
        "surrogate",
    ),
    "NUL in a gold span": (
        "g2.json",
        snac_gold(span="B\x00ob"),
        {"gold": "1", "format": "snac"},
        "NUL",
    ),
    "NUL in a gold category": (
        "g3.json",
        snac_gold(error_type="Char\x00E"),
        {"gold": "1", "format": "snac"},
        "NUL",
    ),
    "surrogate in antecedants": (
        "g4.json",
        snac_gold(antecedants=["\udc00"]),
        {"gold": "1", "format": "snac"},
        "surrogate",
    ),
    "votes beyond the integer column": (
        "g5.json",
        snac_gold(votes=2**70),
        {"gold": "1", "format": "snac"},
        "votes",
    ),
}


def upload(client, name: str, content: bytes, **fields):
    return client.post(
        "/admin/studies/demo/documents",
        data={"csrf_token": csrf(client), "file": (io.BytesIO(content), name), **fields},
        content_type="multipart/form-data",
    )


def without_import_jobs(snapshot: dict) -> dict:
    return {table: rows for table, rows in snapshot.items() if table != "import_jobs"}


@pytest.mark.parametrize("case", FILES)
def test_hostile_upload_fails_its_import_and_stores_nothing(app, admin, case):  # noqa: F811
    """Uploads are import jobs: the request queues the file, the worker refuses it with the
    CLI's message (shown on the dashboard), and no document, segment or gold row appears."""
    name, content, fields, words = FILES[case]
    make_study(app, documents=[("doc-0", ["Existing."])])
    before = db_snapshot(app)
    answer = upload(admin, name, content, ner="", **fields)
    assert answer.status_code == 302, answer.get_data(as_text=True)[-500:]
    assert run_import_worker(app).get("failed") == 1
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert "Import failed: " in page and str(escape(words)) in page, page[-2000:]
    assert without_import_jobs(db_snapshot(app)) == without_import_jobs(before)


@pytest.mark.parametrize("case", FILES)
def test_hostile_import_is_one_cli_line_and_stores_nothing(
    app, database_url, tmp_path, monkeypatch, case
):
    from app.cli import main

    name, content, fields, words = FILES[case]
    make_study(app, documents=[("doc-0", ["Existing."])])
    before = db_snapshot(app)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    (tmp_path / name).write_bytes(content)
    args = ["import", "demo", str(tmp_path / name), "--no-ner"]
    args += ["--gold", "--format", "snac"] if fields.get("gold") else []
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert db_snapshot(app) == before


def test_documents_given_directly_to_import_documents_are_checked(app):
    make_study(app, documents=[("doc-0", ["Existing."])])
    with app.app_context(), session_scope() as session:
        from app.documents.studies import get_study

        study = get_study(session, "demo")
        for bad in (DocumentInput("a\rb", ["A."]), DocumentInput("ok", ["A."], {"s": "\x00"})):
            with pytest.raises(InvalidInput):
                import_documents(session, study, [bad])
        import_documents(session, study, [DocumentInput("crlf", ["One\rtwo\r\nthree."])])
    with app.app_context(), session_scope() as session:
        from sqlalchemy import select

        from app.models import Document, Segment

        texts = session.scalars(
            select(Segment.text).join(Document).where(Document.external_id == "crlf")
        ).all()
    assert texts == ["One\ntwo\nthree."]


def taxonomy_upload(client, slug: str, yaml_text: str, **fields):
    return client.post(
        "/admin/studies/new",
        data={
            "csrf_token": csrf(client),
            "slug": slug,
            "taxonomy": "snac.yaml",
            "taxonomy_file": (io.BytesIO(yaml_text.encode("utf-8", "surrogatepass")), "t.yaml"),
            **fields,
        },
        content_type="multipart/form-data",
    )


TINY = "name: {name}\ncategories:\n  - {{id: A, label: Alpha, definition: An error.}}\n"


@pytest.mark.parametrize(
    ("yaml_text", "fields", "words"),
    [
        (TINY.format(name="N" * 301), {}, "longer than 200"),
        (TINY.format(name='"bad \\ud800"'), {}, "surrogate"),
        (TINY.format(name="ok"), {"title": "T" * 301}, "longer than 300"),
        (TINY.format(name="ok"), {"title": "a\x00b"}, "NUL"),
        (TINY.format(name="ok"), {"completion_url": "https://x.org/\x00"}, "NUL"),
        (TINY.format(name="ok"), {"completion_url": "http://[::1"}, "completion URL"),
        ("a: &x [1]\nb: *x\n", {}, "alias"),
        ("x: " + "[" * 3000 + "]" * 3000 + "\n", {}, "nested"),
    ],
)
def test_new_study_refuses_hostile_fields(app, admin, yaml_text, fields, words):  # noqa: F811
    before = db_snapshot(app)
    answer = taxonomy_upload(admin, "hostile", yaml_text, **fields)
    assert answer.status_code == 400
    assert str(escape(words)) in answer.get_data(as_text=True)
    assert db_snapshot(app) == before


def test_settings_refuse_an_unparsable_completion_url(app, admin):  # noqa: F811
    make_study(app)
    before = db_snapshot(app)
    for url in ("http://[::1", "https://x.org/\x00", "https://x.org/a\rb"):
        answer = admin.post(
            "/admin/studies/demo/settings",
            data={"csrf_token": csrf(admin), "completion_url": url},
        )
        assert answer.status_code == 400, url
    assert db_snapshot(app) == before


def test_study_create_refuses_a_long_title_in_one_line(app):
    with (
        app.app_context(),
        session_scope() as session,
        pytest.raises(InvalidInput, match="longer than 300"),
    ):
        create_study(session, "t", REPO / "taxonomies" / "snac.yaml", title="T" * 301)


@pytest.mark.parametrize(
    "slug", ["a\x00b", "x" * 5000, "\ud800".encode("utf-8", "replace").decode()]
)
def test_new_study_refuses_a_hostile_slug(app, admin, slug):  # noqa: F811
    before = db_snapshot(app)
    answer = taxonomy_upload(admin, slug, TINY.format(name="ok"))
    assert answer.status_code == 400
    assert "lower-case letters" in answer.get_data(as_text=True)
    assert db_snapshot(app) == before
