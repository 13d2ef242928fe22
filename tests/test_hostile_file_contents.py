"""What a hostile file's contents could do to an import or an export: a text that made the
sentence splitter quadratic (minutes of worker CPU), worker IDs ``..`` and ``.`` that made
the brat export write outside its folder, a zip bomb that took gigabytes of memory, and
imported Thresh pairs that broke the API's rule that a pair's earlier span ends before the
span starts. Each test is named for the attack it replays."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
import zipfile

import pytest

from app.errors import InvalidInput
from app.formats import iter_export_files, parse_documents
from app.formats.bundles import write_folder, zip_stream
from app.formats.records import MAX_WHOLE_TEXT_CHARS
from tests.test_interchange_brat import collection, study_with


def thresh_file(tmp_path, target: str, edits=()) -> str:
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps([{"id": "d1", "source": "", "target": target, "edits": list(edits)}])
    )
    return str(path)


# --- a text that made sentence splitting quadratic -----------------------------------------


def test_a_thresh_target_of_abbreviations_is_refused_in_under_a_second(tmp_path):
    """``"Mr. A " * 16000`` with --sentences-per-segment: the quadratic rescan took 30-50 s
    of worker CPU before the segment-size error."""
    path = thresh_file(tmp_path, "Mr. A " * 16000)
    started = time.process_time()
    with pytest.raises(InvalidInput, match="longer than 20000 characters"):
        parse_documents(path, "thresh", sentences_per_segment=1)
    assert time.process_time() - started < 1.0


def test_a_whole_text_over_the_limit_is_refused_before_splitting(tmp_path):
    path = thresh_file(tmp_path, "Mr. A " * (MAX_WHOLE_TEXT_CHARS // 6 + 1))
    started = time.process_time()
    with pytest.raises(InvalidInput, match=f"longer than {MAX_WHOLE_TEXT_CHARS} characters"):
        parse_documents(path, "thresh", sentences_per_segment=1)
    assert time.process_time() - started < 1.0


# --- worker IDs that name folders in the brat export ---------------------------------------


@pytest.mark.parametrize("worker", ["..", ".", "x" * 200, "é" * 40])
def test_worker_ids_dot_dot_and_dot_stay_inside_the_brat_export(app, tmp_path, worker):
    documents = parse_documents(collection(tmp_path / "c"), "brat")
    for span in documents[0].work:
        span.worker_id = worker
    study_with(app, documents)
    from app.db import session_scope
    from app.documents.studies import get_study

    out = tmp_path / "sub" / "out"
    out.parent.mkdir()
    with app.app_context(), session_scope() as session:
        files = list(iter_export_files(session, get_study(session, "b"), "brat"))
    write_folder(out, iter(files))
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # nothing beside --out
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert len(written) == len(files) == len({name for name, _ in files})  # nothing overwritten
    assert all(".." not in name.split("/") and len(name) < 200 for name in written)
    with zipfile.ZipFile(io.BytesIO(b"".join(zip_stream(iter(files))))) as bundle:
        assert all(".." not in n.split("/") and not n.startswith("/") for n in bundle.namelist())
    (again,) = parse_documents(out, "brat")  # the names file maps them back
    assert {s.worker_id for s in again.work} == {worker}
    (from_zip,) = parse_documents("e.zip", "brat", archive=b"".join(zip_stream(iter(files))))
    assert {s.worker_id for s in from_zip.work} == {worker}


def test_an_export_name_that_leaves_its_folder_is_never_written(tmp_path):
    with pytest.raises(ValueError, match="unsafe file name"):
        write_folder(tmp_path / "out", iter([("../w.txt", b"x")]))
    with pytest.raises(ValueError, match="unsafe file name"):
        b"".join(zip_stream(iter([("./w.txt", b"x")])))
    assert not (tmp_path / "w.txt").exists()


# --- a zip bomb ----------------------------------------------------------------------------


def bomb(members: int, mib_each: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as bundle:
        for n in range(members):
            with bundle.open(f"d{n}.txt", "w") as handle:
                for _ in range(mib_each):
                    handle.write(b"a" * 2**20)
    return buffer.getvalue()


@pytest.mark.parametrize(("members", "mib_each"), [(1, 199), (100, 2)], ids=["one", "many"])
def test_a_202_kb_brat_zip_of_199_mib_is_refused_within_100_mb(members, mib_each):
    archive = bomb(members, mib_each)
    assert len(archive) < 2**20
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInput, match="unpacks to more than"):
            parse_documents("bomb.zip", "brat", archive=archive)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"peak {peak / 2**20:.0f} MiB"


# --- imported pairs that break the order rule ----------------------------------------------

TARGET = "Anna met Tom at the station. Tom left early."


def edit(*ranges, category="RepE"):
    return {"category": category, "output_idx": [list(r) for r in ranges], "annotator": "w1"}


def test_imported_thresh_pairs_equal_to_or_overlapping_their_span_are_skipped(tmp_path, app):
    tom, tom2 = TARGET.index("Tom"), TARGET.rindex("Tom")
    edits = [
        edit((tom, tom + 3), (tom2, tom2 + 3)),  # kept: the pair ends before the span
        edit((tom2, tom2 + 3), (tom2, tom2 + 3)),  # the pair is the span itself
        edit((tom2, tom2 + 9), (tom2 + 4, tom2 + 14)),  # they overlap
    ]
    path = thresh_file(tmp_path, TARGET, edits)
    (document,) = parse_documents(path, "thresh")
    assert document.skipped_pairs == 2
    assert [(s.start, s.paired[1] if s.paired else None) for s in document.work] == [(tom2, tom)]
    assert len(document.meta["thresh"]["unlocated_edits"]) == 2  # written back on export
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.models import Annotation
    from tests.conftest import REPO

    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "t", REPO / "taxonomies" / "snac.yaml", suggestions="off")
        result = import_documents(session, study, [document])
        assert result.skipped_pairs == 2 and result.imported_annotations == 1
        (stored,) = session.query(Annotation).all()
        assert (stored.start, stored.paired_start, stored.paired_end) == (tom2, tom, tom + 3)
