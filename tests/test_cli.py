"""The real ``marginalia`` console script, run as a subprocess against a temporary SQLite."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from app import create_app
from tests.conftest import REPO, make_database_url, make_study
from tests.helpers import annotation_body, export_text

MARGINALIA = str(Path(sys.executable).parent / "marginalia")
SNAC_YAML = str(REPO / "taxonomies" / "snac.yaml")
CSV_HEADER = (
    "study,document,segment,span_text,span_start,span_end,category,paired_segment,"
    "paired_text,paired_start,paired_end,comment,worker_id,assignment,"
    "completion_code,created_at,paired_end_segment"
)
DOCS = {
    "d1": ["Anna is an only child.", "Anna's brother, Zoë, visits."],
    "d2": ["Nothing happens here."],
}


def run_many(
    url: str, *commands: list[str], urls: list[str] | None = None
) -> list[subprocess.CompletedProcess]:
    """Run several ``marginalia`` commands at once (each is a fresh interpreter), against
    ``url`` or each against its own of ``urls``."""
    procs = []
    for args, database in zip(commands, urls or [url] * len(commands), strict=True):
        env = {**os.environ, "DATABASE_URL": database}
        procs.append(
            (
                args,
                subprocess.Popen(
                    [MARGINALIA, *args],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env,
                    cwd=REPO,
                ),
            )
        )
    results = []
    for args, proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
    return results


def run(url: str, *args: str) -> subprocess.CompletedProcess:
    return run_many(url, list(args))[0]


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def url(request, tmp_path) -> str:
    """A migrated SQLite database file."""
    return make_database_url("sqlite", request, tmp_path)


def create_study_in_process(url: str, documents: dict[str, list[str]] | None = None) -> None:
    """Set up a study without paying for another interpreter start."""
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "test"})
    try:
        make_study(
            app, documents=list((documents or {"seed": ["Seed."]}).items()), suggestions="off"
        )
    finally:
        app.extensions["db_engine"].dispose()


def table_count(url: str, table: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.scalar(text(f"SELECT count(*) FROM {table}"))
    finally:
        engine.dispose()


def test_db_upgrade_twice(tmp_path):
    url = f"sqlite:///{tmp_path / 'sub' / 'fresh.db'}"
    unmigrated, bad_url = run_many(
        url, ["export", "demo"], ["export", "demo"], urls=[url, "nosuchdb://x"]
    )
    assert_one_line_error(unmigrated, "database error", "db upgrade")
    assert_one_line_error(bad_url, "DATABASE_URL")
    first = run(url, "db", "upgrade")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("database created") and "up to date" not in first.stdout
    second = run(url, "db", "upgrade")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "database is up to date\n"
    engine = create_engine(url)
    try:
        tables = set(inspect(engine).get_table_names())
        with engine.connect() as connection:
            versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    finally:
        engine.dispose()
    assert {"studies", "documents", "segments", "assignments", "annotations"} <= tables
    assert len(versions) == 1


def test_study_create_is_idempotent(url, tmp_path):
    first = run(
        url,
        "study",
        "create",
        "demo",
        "--taxonomy",
        SNAC_YAML,
        "--annotators-per-doc",
        "2",
        "--suggestions",
        "off",
    )
    assert first.returncode == 0, first.stderr
    assert "created" in first.stdout
    again, changed, bad_yaml = run_many(
        url,
        [
            "study",
            "create",
            "demo",
            "--taxonomy",
            SNAC_YAML,
            "--annotators-per-doc",
            "2",
            "--suggestions",
            "off",
        ],
        [
            "study",
            "create",
            "demo",
            "--taxonomy",
            SNAC_YAML,
            "--annotators-per-doc",
            "5",
            "--suggestions",
            "off",
        ],
        ["study", "create", "other", "--taxonomy", str(_bad_taxonomy(tmp_path))],
    )
    assert again.returncode == 0, again.stderr
    assert "already exists" in again.stdout
    assert_one_line_error(changed, "'demo'", "already exists with a different")
    assert_one_line_error(bad_yaml, "bad.yaml:3: categories[0].kind: unknown kind")
    assert table_count(url, "studies") == 1


def _bad_taxonomy(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text("name: Bad\ncategories:\n  - {id: A, label: A, definition: a, kind: odd}\n")
    return path


def _annotate(url: str) -> dict[str, str]:
    """Do some work through the HTTP API: one submitted assignment with a removed and a
    paired annotation, one submitted with none, one still active."""
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "test"})
    client = app.test_client()
    tokens = {}
    try:
        for worker, doc in (("alice", "d1"), ("bob", "d2"), ("carol", "d1")):
            response = client.post(
                "/api/assignments", json={"study": "demo", "document": doc, "worker_id": worker}
            )
            tokens[worker] = response.get_json()["token"]
        texts = DOCS["d1"]
        alice = tokens["alice"]
        added = [
            client.post(f"/api/assignments/{alice}/annotations", json=body).get_json()
            for body in (
                annotation_body(1, "Zoë", "CharE", comment="who?", texts=texts),
                annotation_body(
                    1,
                    "Anna's brother",
                    "InconE",
                    texts=texts,
                    paired={"segment": 0, "start": 0, "end": 21, "text": "Anna is an only child"},
                ),
                annotation_body(0, "only", "GramE", texts=texts),
            )
        ]
        assert all("id" in a for a in added), added
        assert (
            client.delete(f"/api/assignments/{alice}/annotations/{added[2]['id']}").status_code
            == 204
        )
        for worker in ("alice", "bob"):
            assert client.post(f"/api/assignments/{tokens[worker]}/submit").status_code == 200
        return {
            "exports": {fmt: export_text(app, "demo", fmt) for fmt in ("csv", "jsonl", "snac")},
            **tokens,
        }
    finally:
        app.extensions["db_engine"].dispose()


def test_import_and_export(url, tmp_path):
    create_study_in_process(url, {})
    source = tmp_path / "docs.json"
    source.write_text(json.dumps(DOCS), encoding="utf-8")
    imported = run(url, "import", "demo", str(source), "--no-ner")
    assert imported.returncode == 0, imported.stderr
    assert "imported 2 documents (3 segments)" in imported.stdout
    assert table_count(url, "segments") == 4  # with make_study's default document

    work = _annotate(url)
    out = tmp_path / "out" / "export.csv"
    out.parent.mkdir()
    csv_out, jsonl_out, snac_out, to_file = run_many(
        url,
        ["export", "demo", "--format", "csv"],
        ["export", "demo", "--format", "jsonl"],
        ["export", "demo", "--format", "snac"],
        ["export", "demo", "--format", "csv", "--out", str(out)],
    )
    for result in (csv_out, jsonl_out, snac_out, to_file):
        assert result.returncode == 0, result.stderr
    assert csv_out.stdout == work["exports"]["csv"]
    assert jsonl_out.stdout == work["exports"]["jsonl"]
    assert snac_out.stdout == work["exports"]["snac"]
    assert to_file.stdout == ""
    assert out.read_text(encoding="utf-8") == csv_out.stdout
    assert sorted(p.name for p in out.parent.iterdir()) == ["export.csv"]

    assert csv_out.stdout.splitlines()[0] == CSV_HEADER
    rows = list(csv.DictReader(io.StringIO(csv_out.stdout)))
    assert [
        (r["worker_id"], r["document"], r["span_text"], r["category"], r["paired_text"])
        for r in rows
    ] == [
        ("alice", "d1", "Anna's brother", "InconE", "Anna is an only child"),
        ("alice", "d1", "Zoë", "CharE", ""),
        ("bob", "d2", "", "", ""),
    ]
    assert rows[0]["assignment"] == work["alice"]
    jsonl = [json.loads(line) for line in jsonl_out.stdout.splitlines()]
    assert [(r["worker_id"], r["span_text"], r["category"]) for r in jsonl] == [
        ("alice", "Anna's brother", "InconE"),
        ("alice", "Zoë", "CharE"),
        ("bob", None, None),
    ]
    snac = json.loads(snac_out.stdout)
    zoe = snac["d1"]["1"]["text"].index("Zoë")
    assert snac["d1"]["1"]["errors"] == [
        {
            "span": "Anna's brother",
            "error_type": "InconE",
            "votes": 1,
            "start": 0,
            "end": 14,
            "antecedants": ["Anna is an only child"],
            "antecedant_offsets": [{"segment": 0, "start": 0, "end": 21}],
        },
        {"span": "Zoë", "error_type": "CharE", "votes": 1, "start": zoe, "end": zoe + 3},
    ]
    assert snac["d2"] == {"0": {"text": "Nothing happens here.", "errors": []}}


def test_bad_input_gives_one_line_and_exit_1(url, tmp_path):
    create_study_in_process(url, {"a": ["Already here."]})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"a": ["One."], "b": ["Two."], "c": ["Three.", 4]}))
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": ["One."],\n "b": }\n')
    again = tmp_path / "again.json"
    again.write_text(json.dumps({"b": ["New."], "a": ["Already there."]}))
    results = run_many(
        url,
        ["import", "demo", str(bad), "--no-ner"],
        ["import", "demo", str(broken), "--no-ner"],
        ["import", "nope", str(again), "--no-ner"],
        ["import", "demo", str(again), "--gold", "--no-ner"],
        ["import", "demo", str(again), "--no-ner"],
        ["export", "nope", "--format", "csv"],
        ["export", "demo", "--out", str(tmp_path / "missing-dir" / "out.csv")],
        ["export", "demo", "--format", "xml"],
        ["import", "demo"],
    )
    expected = [
        ("document 'c': segment 1: must be text",),
        ("broken.json:2:", "invalid JSON"),
        ("no study 'nope'",),
        ("--gold needs a file with annotations",),
        ("already has document 'a'",),
        ("no study 'nope'",),
        ("missing-dir", "No such file or directory"),
        ("marginalia export:", "'--format'", "xml"),
        ("marginalia import:", "Missing argument 'FILE'"),
    ]
    for result, fragments in zip(results, expected, strict=True):
        assert_one_line_error(result, *fragments)
        assert result.stdout == ""
    assert table_count(url, "documents") == 1  # only the one that was there
