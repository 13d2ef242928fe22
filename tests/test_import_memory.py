"""Every import in bounded memory, whatever the file's size or way in: a 31 MB JSON file of ten
million empty objects took 870 MB to import with ``--format auto`` and 982 MB as an upload's
job, read whole (``json.loads`` builds every object first). Measured here as the peak resident
memory of the importing process (a fresh interpreter, as the command and the worker run):
at most :data:`BOUND_MB`, with the file refused by its first entry's clear message.

The process is started by a small parent whose only child it is, so the parent's
``RUSAGE_CHILDREN`` peak is the importing process's own (this test process's other children,
Postgres's among them, do not count).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Document, ImportJob
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.test_import_jobs import admin, csrf  # noqa: F401 - the fixture and its helper

ROOT = Path(__file__).resolve().parents[1]
BOUND_MB = 300
MEASURED = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stdout.write(done.stdout + done.stderr)\n"
    "print('PEAK_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture(scope="module")
def empty_objects(tmp_path_factory) -> Path:
    """The attacker's file: a JSON array of ten million empty objects (~30 MB)."""
    path = tmp_path_factory.mktemp("memory") / "empty.json"
    with path.open("w") as out:
        out.write("[" + ",".join(["{}"] * 10_000_000) + "]")
    return path


def measured(database_url: str, *args: str) -> tuple[str, float]:
    """``marginalia ARGS`` in a fresh interpreter: its output and its peak RSS in MB."""
    env = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "test"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-c", MEASURED, sys.executable, "-m", "app.cli", *args]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    output, _, peak = done.stdout.rpartition("PEAK_KB ")
    return output, int(peak) / 1024


@pytest.mark.parametrize("fmt", ["auto", "thresh", "labelstudio", "snac"])
def test_a_huge_file_is_refused_in_bounded_memory_by_the_command(
    app, empty_objects, database_url, fmt
):
    make_study(app, documents=[])
    output, peak = measured(database_url, "import", "demo", str(empty_objects), "--format", fmt)
    expected = {
        "auto": "cannot tell the format",
        "thresh": '"target" must be text',
        "labelstudio": 'task 0 must be an object with "data"',
        "snac": "snac format must be",
    }[fmt]
    assert expected in output, output
    assert peak <= BOUND_MB, f"{peak:.0f} MB"


def test_a_huge_upload_is_refused_in_bounded_memory_by_the_worker(
    app,
    admin,  # noqa: F811 - the fixture imported above
    empty_objects,
    database_url,
):
    make_study(app, documents=[])
    answer = admin.post(
        "/admin/studies/demo/documents",
        data={
            "csrf_token": csrf(admin),
            "file": (io.BytesIO(empty_objects.read_bytes()), "empty.json"),
            "format": "auto",
            "ner": "",
        },
        content_type="multipart/form-data",
    )
    assert answer.status_code == 302
    output, peak = measured(database_url, "worker", "--once", "--queue", "imports")
    with app.app_context(), session_scope() as session:
        job = session.scalar(select(ImportJob))
        assert (job.status, job.error) == (
            "failed",
            f"empty.json: cannot tell the format; pass --format {'|'.join(FORMATS)}",
        ), output
        stored = list(session.scalars(select(Document.external_id)))
        assert stored == ["doc-1"]  # make_study's document: nothing of the file
    assert peak <= BOUND_MB, f"{peak:.0f} MB"


SAMPLES = {
    "paragraphs": {f"d{n}": [f"Anna walks home {n}.", "Pedro waits."] for n in range(9)},
    "falte": {f"d{n}": {"sentences": [f"Anna walks {n}.", "Pedro waits."]} for n in range(9)},
    "snac": {
        f"d{n}": {"0": {"text": f"Anna walks {n}.", "errors": []}, "1": {"text": "Bo."}}
        for n in range(9)
    },
    "booookscore": {
        f"book{n}": {
            "summary": "Dee sang. Dee sang again.",
            "singles": [{"span": "sang", "questions": "Who?", "labels": ["salience"]}],
        }
        for n in range(9)
    },
    "labelstudio": [{"data": {"text": f"Anna walks {n}. Pedro waits."}} for n in range(9)],
    "jsonl": [{"id": f"d{n}", "segments": [f"Anna walks {n}.", "Bo."]} for n in range(9)],
}


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_every_json_format_streams_the_documents_the_whole_file_gives(tmp_path, monkeypatch, fmt):
    """Past the streaming size each format is read an entry at a time, in batches, with the
    documents (and their order) of the same file read whole, ``--format auto`` too."""
    from app.formats import parse_document_batches, parse_documents, streamed

    monkeypatch.setattr(streamed, "BATCH_DOCUMENTS", 2)
    data = SAMPLES[fmt]
    path = tmp_path / ("docs.jsonl" if fmt == "jsonl" else "docs.json")
    text = "\n".join(map(json.dumps, data)) if fmt == "jsonl" else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    for named in (fmt, "auto"):
        whole = parse_documents(path, named)
        batches = list(parse_document_batches(path, named, stream_bytes=0))
        assert len(batches) == 5 and [len(b) for b in batches[:4]] == [2, 2, 2, 2]
        assert [d for b in batches for d in b] == whole
        payload = list(
            parse_document_batches(path.name, named, payload=path.read_bytes(), stream_bytes=0)
        )
        assert [d for b in payload for d in b] == whole


FORMATS = ("falte", "paragraphs", "snac", "jsonl", "thresh", "labelstudio", "brat", "booookscore")


def test_a_zips_json_file_streams_too(tmp_path, monkeypatch):
    """A zip's one JSON file (a Label Studio export's ``tasks.json``) past the streaming
    size is read an entry at a time as well: the same documents, and a file of empty objects
    refused by its first one."""
    import zipfile

    from app.errors import InvalidInput
    from app.formats import parse_document_batches, parse_documents, streamed

    monkeypatch.setattr(streamed, "BATCH_DOCUMENTS", 4)
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as bundle:
        bundle.writestr("tasks.json", json.dumps(SAMPLES["labelstudio"]))
    whole = parse_documents(path, "auto")
    batches = list(parse_document_batches(path, "auto", stream_bytes=0))
    assert [len(b) for b in batches] == [4, 4, 1]
    assert [d for b in batches for d in b] == whole
    upload = parse_document_batches("export.zip", "auto", payload=path.read_bytes(), stream_bytes=0)
    assert [d for b in upload for d in b] == whole
    with zipfile.ZipFile(path, "w") as bundle:
        bundle.writestr("tasks.json", "[" + ",".join(["{}"] * 100_000) + "]")
    with pytest.raises(InvalidInput, match='task 0 must be an object with "data"'):
        list(parse_document_batches(path, "auto", stream_bytes=0))
