"""brat standoff in and out: a collection another tool wrote (top-level files, CR LF line
ends, attributes it does not know), zips, per-worker folders, hostile names, bad lines."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import select

from app.errors import InvalidInput
from app.formats import iter_export_files, parse_documents
from app.formats.bundles import write_folder
from app.models import Annotation, Assignment
from tests.conftest import REPO

TEXT = "Anna is an only child.\r\n\r\nHer brother Tom visits.\r\n"
ANN = (
    "T1\tInconE 26 37\tHer brother\n"
    "T2\tInconE 0 22\tAnna is an only child.\n"
    "R1\tContradicts Arg1:T1 Arg2:T2\n"
    "#1\tAnnotatorNotes T1\tno brother before\n"
    "T3\tCharE 38 41\tTom\n"
    "A1\tNegated T3\n"
)


def collection(folder: Path) -> Path:
    folder.mkdir()
    (folder / "story 1.txt").write_bytes(TEXT.encode())
    (folder / "story 1.ann").write_text(ANN, encoding="utf-8")
    (folder / "annotation.conf").write_text("[entities]\nInconE\nCharE\n", encoding="utf-8")
    return folder


def study_with(app, documents, slug: str = "b") -> None:
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents

    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, slug, REPO / "taxonomies" / "snac.yaml", suggestions="off")
        import_documents(session, study, documents)


def test_a_collection_from_another_tool_imports_with_offsets_mapped(app, tmp_path):
    (document,) = parse_documents(collection(tmp_path / "c"), "brat")
    assert document.external_id == "story 1"
    assert document.segments == ["Anna is an only child.", "Her brother Tom visits."]
    study_with(app, [document])
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        (assignment,) = session.scalars(select(Assignment)).all()
        assert (assignment.worker_id, assignment.status) == ("import-1", "submitted")
        marks = {m.text: m for m in session.scalars(select(Annotation))}
    assert set(marks) == {"Her brother", "Tom"}
    paired = marks["Her brother"]
    assert (paired.segment, paired.start, paired.paired_segment, paired.paired_text) == (
        1,
        0,
        0,
        "Anna is an only child.",
    )
    assert paired.comment == "no brother before"


def test_a_zip_imports_like_its_folder_and_auto_detects(tmp_path):
    folder = collection(tmp_path / "c")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for item in folder.iterdir():
            bundle.write(item, f"../../{item.name}")  # a hostile member name changes nothing
    from_zip = parse_documents("upload.zip", "auto", archive=buffer.getvalue())
    assert [(d.external_id, d.segments, d.work) for d in from_zip] == [
        (d.external_id, d.segments, d.work) for d in parse_documents(folder, "brat")
    ]


def test_export_writes_per_worker_folders_and_safe_names(app, tmp_path):
    documents = parse_documents(collection(tmp_path / "c"), "brat")
    documents[0].external_id = "../../etc/passwd"
    for span in documents[0].work:
        span.worker_id = "w/../x"
    study_with(app, documents)
    from app.db import session_scope
    from app.documents.studies import get_study

    out = tmp_path / "out"
    with app.app_context(), session_scope() as session:
        write_folder(out, iter_export_files(session, get_study(session, "b"), "brat"))
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == [
        "..%2F..%2Fetc%2Fpasswd.ann",
        "..%2F..%2Fetc%2Fpasswd.txt",
        "annotation.conf",
        "visual.conf",
        "w%2F..%2Fx/..%2F..%2Fetc%2Fpasswd.ann",
        "w%2F..%2Fx/..%2F..%2Fetc%2Fpasswd.txt",
    ]
    assert "[entities]\nCharE\n" in (out / "annotation.conf").read_text()
    ann = (out / "w%2F..%2Fx" / "..%2F..%2Fetc%2Fpasswd.ann").read_text()
    assert "\tpaired Arg1:" in ann and "AnnotatorNotes" in ann
    (again,) = parse_documents(out, "brat")
    assert again.external_id == "../../etc/passwd"
    assert {s.worker_id for s in again.work} == {"w/../x"}
    key = [(s.segment, s.start, s.end, s.category, s.paired, s.comment) for s in again.work]
    assert sorted(key, key=str) == sorted(
        [(s.segment, s.start, s.end, s.category, s.paired, s.comment) for s in documents[0].work],
        key=str,
    )


@pytest.mark.parametrize(
    ("ann", "message"),
    [
        ("T1\tCharE 0 4;6 8\tAnna is\n", "discontinuous"),
        ("T1\tCharE 0 400\tAnna\n", "outside the text"),
        ("T1\tCharE 0 4\tAnna\nR1\tpaired Arg1:T1 Arg2:T9\n", "names a span that is not there"),
        ("R1\tpaired T1 T2\n", "not a relation line"),
        (
            "T1\tRepE 0 4\tAnna\nT2\tRepE 26 29\tHer\nT3\tRepE 5 7\tis\n"
            "R1\tpaired Arg1:T1 Arg2:T2\nR2\tpaired Arg1:T3 Arg2:T2\n",
            "later half of two relations",
        ),
    ],
)
def test_bad_ann_lines_are_refused_with_a_message(tmp_path, ann, message):
    folder = collection(tmp_path / "c")
    (folder / "story 1.ann").write_text(ann, encoding="utf-8")
    with pytest.raises(InvalidInput, match=message):
        parse_documents(folder, "brat")


def test_not_a_zip_and_not_utf8_are_refused(tmp_path):
    with pytest.raises(InvalidInput, match="neither a folder nor a zip"):
        parse_documents("x.zip", "brat", archive=b"plain text")
    folder = collection(tmp_path / "c")
    (folder / "story 1.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(InvalidInput, match="not UTF-8"):
        parse_documents(folder, "brat")


def test_a_json_format_reads_the_one_json_file_of_a_folder(tmp_path):
    with pytest.raises(InvalidInput, match="holds 0 JSON files"):
        parse_documents(tmp_path, "thresh")
    (tmp_path / "t.json").write_text('[{"target": "Some text.", "edits": []}]')
    assert parse_documents(tmp_path, "thresh")[0].segments == ["Some text."]


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    buffer = io.BytesIO()
    bundle = zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED)
    with bundle, bundle.open("big.txt", "w") as handle:
        for _ in range(201):
            handle.write(b" " * 2**20)
    assert len(buffer.getvalue()) < 2**20  # small on the wire
    with pytest.raises(InvalidInput, match="unpacks to more than 64 MiB"):
        parse_documents("bomb.zip", "brat", archive=buffer.getvalue())


COLLIDING_WORKERS = (
    ".",  # hashed: "id~cdb4ee2aea69cc6a"
    "id~cdb4ee2aea69cc6a",  # an id that is that very name
    "Bob",
    "bob",  # one folder with Bob's on a case-insensitive file system (macOS, Windows)
    "annotation.conf",  # a folder where the export writes a file
    "story 1.txt",  # a folder where the document's text file is
    "aux",  # a device name on Windows: no such folder can be made there
    "trailing.",  # Windows drops the dot: "trailing"'s folder
    "trailing",
)


def test_worker_ids_can_never_share_a_brat_folder(app, tmp_path):
    """The attack: worker ``.`` is written under the hashed name ``id~cdb4ee2aea69cc6a``;
    a worker who takes that very id shared its folder, one ``.ann`` overwrote the other and
    the names file named only one of them. Every worker's marks must come back as theirs,
    whatever the ids: no two names equal (case aside), none where another file lies."""
    from dataclasses import replace

    (document,) = parse_documents(collection(tmp_path / "c"), "brat")
    tom = next(s for s in document.work if s.text == "Tom")
    document.work = [
        replace(tom, worker_id=worker, comment=f"by {worker}") for worker in COLLIDING_WORKERS
    ]
    study_with(app, [document])
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        files = list(iter_export_files(session, get_study(session, "b"), "brat"))
    names = [name for name, _ in files]
    assert len({name.casefold() for name in names}) == len(names), names
    folders = {name.rsplit("/", 1)[0] for name in names if "/" in name}
    tops = {name.casefold() for name in names if "/" not in name}
    assert len(folders) == len(COLLIDING_WORKERS), folders
    for folder in folders:
        assert folder.casefold() not in tops, folder
        assert folder.rstrip(". ") == folder and folder.split(".")[0].casefold() != "aux"
    out = tmp_path / "out"
    write_folder(out, iter(files))
    (again,) = parse_documents(out, "brat")
    assert sorted((s.worker_id, s.comment) for s in again.work) == sorted(
        (w, f"by {w}") for w in COLLIDING_WORKERS
    )


def test_a_mark_on_the_offsets_of_another_marks_earlier_span_comes_back(app, tmp_path):
    """One worker's RefE "only child" inside their CharE "Anna is an only child" (both ending
    at the same character), and their InconE "Her brother" whose earlier span is that very
    RefE span: the export writes one ``T`` line there (strict readers refuse two) and needs
    no ``pair_only`` flag, so a reader that took a file without flags for another tool's
    dropped the RefE as "only a relation's earlier half" (on SNaC train as imported work, 5
    of 6,046 marks were lost so). Every mark comes back."""
    from dataclasses import replace

    (document,) = parse_documents(collection(tmp_path / "c"), "brat")
    first = document.segments[0]
    base = document.work[0]

    def mark(category, segment, start, end, paired=None):
        text = document.segments[segment][start:end]
        return replace(base, worker_id="w", segment=segment, start=start, end=end, text=text,
                       category=category, paired=paired, comment="")  # fmt: skip

    only_child = (0, first.index("only child"), first.index("only child") + 10, "only child")
    document.work = [
        mark("CharE", 0, 0, 21),
        mark("RefE", 0, *only_child[1:3]),
        mark("InconE", 1, 0, 11, only_child),
        mark("SceneE", 0, 0, 22),
        mark("RepE", 1, 12, 15, (0, 0, 22, first)),
    ]
    study_with(app, [document])
    from app.db import session_scope
    from app.documents.studies import get_study

    out = tmp_path / "out"
    with app.app_context(), session_scope() as session:
        write_folder(out, iter_export_files(session, get_study(session, "b"), "brat"))
    assert "pair_only" not in (out / "w" / "story 1.ann").read_text()  # no flag needed

    def key(spans):
        return sorted((s.segment, s.start, s.end, s.category, s.paired) for s in spans)

    (again,) = parse_documents(out, "brat")
    assert key(again.work) == key(document.work)
    # a file of another tool (no pair_only declared in its annotation.conf) keeps its rule:
    # a span that is only a relation's earlier half is not a mark
    (out / "annotation.conf").write_text("[entities]\nCharE\n", encoding="utf-8")
    (other,) = parse_documents(out, "brat")
    assert len(other.work) == len(document.work) - 2
