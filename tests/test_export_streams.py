"""Every export in bounded memory: the JSON formats written a document at a time
give exactly ``json.dumps`` of the whole, the parquet tables a row group per batch of
documents give the same rows, the zip of several files is written as its files are read,
and over HTTP a zipped export is a true stream (bench/export_big.py measures the memory)."""

from __future__ import annotations

import io
import json
import os
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.db import session_scope
from app.documents.studies import get_study
from app.formats import json_stream
from app.formats.bundles import ZIP_CHUNK, whole, zip_stream
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import SEGMENTS, annotation_body, open_token, span
from tests.test_interchange_entry_points import admin  # noqa: F401 (a fixture)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.characters(codec="utf-8")),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=30, deadline=None)
@given(st.lists(JSON, max_size=5), st.dictionaries(st.text(max_size=8), JSON, max_size=5))
def test_streamed_json_is_exactly_the_whole_dump(items, pairs):
    """Newlines, U+2028, empty containers and nesting included: the same text."""
    whole = json.dumps(items, ensure_ascii=False, indent=1) + "\n"
    assert "".join(json_stream.array(iter(items))) == whole
    whole = json.dumps(pairs, ensure_ascii=False, indent=1) + "\n"
    assert "".join(json_stream.obj(iter(pairs.items()))) == whole


def test_streamed_json_comes_in_chunks_as_the_items_come():
    taken = []

    def items():
        for n in range(400):
            taken.append(n)
            yield {"n": n, "text": "x" * 1000}

    chunks = json_stream.array(items())
    first = next(chunks)
    assert len(first) >= json_stream.CHUNK_CHARS and len(taken) < 100  # not all read yet
    assert json.loads(first + "".join(chunks)) == [{"n": n, "text": "x" * 1000} for n in range(400)]


def test_a_zip_member_in_chunks_is_written_as_it_is_read():
    read = []

    def body():
        for n in range(64):
            read.append(n)
            yield os.urandom(64 * 1024)  # incompressible: the zip grows with each chunk

    chunks = zip_stream([("small.txt", b"hello"), ("big.bin", body())])
    first = next(chunks)
    assert len(first) >= ZIP_CHUNK and len(read) < 16  # the zip came out before the body ended
    data = first + b"".join(chunks)
    with zipfile.ZipFile(io.BytesIO(data)) as bundle:
        assert bundle.testzip() is None
        assert bundle.read("small.txt") == b"hello"
        assert len(bundle.read("big.bin")) == 64 * 64 * 1024


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def annotated(app, client) -> None:
    """Two documents, two workers each, a pair and a comment each."""
    make_study(app, documents=[("doc-1", SEGMENTS), ("doc-2", SEGMENTS)], suggestions="off")
    for n, worker in enumerate(("w1", "w2", "w3", "w4")):
        token = open_token(client, worker, f"doc-{1 + n // 2}")
        body = annotation_body(0, "Anna", "CharE", client_id=f"{worker}-1", comment=f"c{n}")
        assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
        paired = annotation_body(
            2, "Anna is an only child.", "RepE", paired=span(0, "Anna"), client_id=f"{worker}-2"
        )
        assert client.post(f"/api/assignments/{token}/annotations", json=paired).status_code == 201
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def test_parquet_in_row_groups_has_the_rows_of_one_table(app, client):
    pq = pytest.importorskip("pyarrow.parquet")
    from app.formats import parquet

    annotated(app, client)
    with app.app_context(), session_scope() as session:
        study = get_study(session, "demo")
        one = {n: whole(b) for n, b in parquet.export_files(session, study)}
        small = {n: whole(b) for n, b in parquet.export_files(session, study, batch_rows=1)}
    for name in ("data/annotations.parquet", "data/documents.parquet"):
        single, grouped = (pq.ParquetFile(io.BytesIO(files[name])) for files in (one, small))
        assert single.metadata.num_row_groups == 1
        assert grouped.metadata.num_row_groups == 2  # a row group per document
        assert grouped.read().to_pylist() == single.read().to_pylist()
        assert grouped.schema_arrow == single.schema_arrow
    assert small["README.md"] == one["README.md"]
    assert "- Annotations: 8" in one["README.md"].decode()


def test_zipped_downloads_stream_and_match_the_files(app, client, admin, monkeypatch):  # noqa: F811
    """The zip comes out as the work is read (server-side cursors on Postgres, a row per
    fetch here) and holds exactly the export's files."""
    from app.formats import bundles, iter_export_files
    from app.rules import work

    annotated(app, client)
    monkeypatch.setattr(work, "CHUNK_ROWS", 1)  # every row its own fetch from the cursor
    monkeypatch.setattr(bundles, "ZIP_CHUNK", 1)  # and the zip handed on as it grows
    for fmt in ("brat", "labelstudio", "parquet"):
        answer = admin.get(f"/admin/studies/demo/export.{fmt}", buffered=False)
        assert answer.status_code == 200 and answer.is_streamed
        with zipfile.ZipFile(io.BytesIO(answer.get_data())) as bundle:
            got = {name: bundle.read(name) for name in bundle.namelist()}
        with app.app_context(), session_scope() as session:
            files = dict(iter_export_files(session, get_study(session, "demo"), fmt))
        if fmt == "parquet":
            pq = pytest.importorskip("pyarrow.parquet")
            for name in ("data/annotations.parquet", "data/documents.parquet"):
                assert pq.read_table(io.BytesIO(got.pop(name))).equals(
                    pq.read_table(io.BytesIO(files.pop(name)))
                )
        assert got == files
