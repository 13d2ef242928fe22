"""Big Thresh files read an entry at a time and stored in batches
(app/formats/streamed.py): the same documents as the whole file gives, the same stored work,
the same refusals, all or nothing (bench/import_big.py measures the memory)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from app.formats import parse_document_batches, parse_documents, streamed
from tests.conftest import make_study
from tests.test_thresh_mqm import ENTRIES as MQM_ENTRIES

TARGET = "Anna walks home.\n\nShe meets Pedro there.\n\nPedro smiles at Anna."


def entries(count: int = 7) -> list[dict]:
    """Thresh entries with singles, a pair, an unlocated edit, comments and empty workers."""
    out = []
    for n in range(count):
        edits = [
            {"id": 0, "category": "CharE", "output_idx": [[0, 4]], "annotators": ["a", "b"]},
            {
                "id": 1,
                "category": "RepE",
                "output_idx": [[0, 4], [58, 62]],
                "annotators": ["b"],
                "comment": f"again {n}",
            },
            {"id": 2, "category": "GramE", "output_idx": [], "annotators": ["a"]},
        ]
        out.append(
            {"id": f"d{n}", "source": "s", "target": TARGET, "edits": edits[: 1 + n % 3]}
            | ({"annotators": ["a", "b", "c"]} if n % 2 else {})
        )
    return out


@pytest.mark.parametrize("file", ["crowd", "mqm"])
@pytest.mark.parametrize("batch", [1, 3])
def test_batches_hold_the_documents_of_the_whole_file(tmp_path, monkeypatch, file, batch):
    monkeypatch.setattr(streamed, "BATCH_DOCUMENTS", batch)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(entries() if file == "crowd" else MQM_ENTRIES), encoding="utf-8")
    for gold in (False, True):
        whole = parse_documents(path, "thresh", gold=gold, source="sys")
        batches = list(
            parse_document_batches(path, "thresh", gold=gold, source="sys", stream_bytes=0)
        )
        if file == "crowd":
            assert [len(b) for b in batches][0] == batch and len(batches) > 1
        assert [d for b in batches for d in b] == whole
    # small files are read whole, as before
    assert list(parse_document_batches(path, "thresh")) == [parse_documents(path, "thresh")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[{"id": "d", "target": "x", "edits": []}, {"id": "d", "target": "y", "edits": []}]',
            "appears twice in the file",
        ),
        ('[{"id": "d", "target": "x", "target": "y", "edits": []}]', "key 'target' appears twice"),
        ('[{"id": "d", "target": "x", "edits": []}, {"id": ', "invalid JSON"),
        ('[{"id": "d", "target": "x", "edits": [], "n": NaN}]', "invalid JSON"),
        ("[]", "contains no documents"),
        ('[{"id": "d", "target": 3, "edits": []}]', '"target" must be text'),
    ],
)
def test_a_streamed_file_is_refused_as_a_whole_one_is(tmp_path, monkeypatch, text, message):
    monkeypatch.setattr(streamed, "BATCH_DOCUMENTS", 1)
    path = tmp_path / "t.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(Exception, match=message):
        for _ in parse_document_batches(path, "thresh", stream_bytes=0):
            pass
    path.write_bytes(b'[{"id": "d\xff", "target": "x", "edits": []}]')
    with pytest.raises(Exception, match="not UTF-8"):
        list(parse_document_batches(path, "thresh", stream_bytes=0))


def test_cli_stores_batches_as_one_import_and_nothing_on_a_late_error(app, monkeypatch, tmp_path):
    from app.cli import main
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.formats import iter_export
    from app.models import Document

    monkeypatch.setenv("DATABASE_URL", app.config["DATABASE_URL"])
    monkeypatch.setenv("SECRET_KEY", "test")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(entries()), encoding="utf-8")
    make_study(app, "whole", documents=[])
    make_study(app, "batches", documents=[])
    run = CliRunner()
    whole = run.invoke(main, ["import", "whole", str(path), "--format", "thresh", "--no-ner"])
    assert whole.exit_code == 0, whole.output
    monkeypatch.setattr(streamed, "STREAM_BYTES", 0)
    monkeypatch.setattr(streamed, "BATCH_DOCUMENTS", 2)
    batches = run.invoke(main, ["import", "batches", str(path), "--format", "thresh", "--no-ner"])
    assert batches.exit_code == 0, batches.output
    assert batches.output == whole.output  # the same summary: 7 documents, 11 annotations ...
    assert "7 documents" in whole.output
    with app.app_context(), session_scope() as session:
        texts = [
            "".join(iter_export(session, get_study(session, slug), fmt))
            for slug in ("whole", "batches")
            for fmt in ("thresh", "snac")
        ]
    assert texts[:2] == texts[2:]

    with app.app_context(), session_scope() as session:
        study = get_study(session, "batches")
        before = session.query(Document).filter_by(study_id=study.id).count()
    late = entries(9)
    late[-1]["edits"] = [{"category": "Nope", "output_idx": [[0, 4]], "annotators": ["a"]}]
    path.write_text(json.dumps(late).replace('"d', '"e'), encoding="utf-8")
    failed = run.invoke(main, ["import", "batches", str(path), "--format", "thresh", "--no-ner"])
    assert failed.exit_code == 1 and "Nope" in failed.output
    with app.app_context(), session_scope() as session:
        study = get_study(session, "batches")
        assert session.query(Document).filter_by(study_id=study.id).count() == before
