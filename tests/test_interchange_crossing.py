"""A paired span whose earlier span runs across a segment break (taxonomy
``pair_across_segments: true``) goes out through Label Studio, brat, Thresh and Parquet with
offsets that hold its text, and comes back in (Label Studio, brat, Thresh) as the very same
annotation, ``paired_end_segment`` included, on SQLite and Postgres."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from app.documents.locating import crossing_text
from app.errors import InvalidInput
from app.formats import iter_export_files, parse_documents
from app.formats.bundles import write_folder
from app.models import Document
from tests.conftest import BACKENDS, REPO, make_database_url, make_study
from tests.helpers import api_add, count_rows, open_token
from tests.test_interchange_roundtrip import annotations

#          0         1         2
#          012345678901234567890
TEXTS = [
    "A cat sat. She grows",
    "taller and shorter. Then it ends.",
    "She grows taller and shorter again.",
]
EARLIER = {"segment": 0, "start": 11, "end_segment": 1, "end": 19}
EARLIER["text"] = "She grows taller and shorter."  # "She grows" + " " + "taller and shorter."
REPEAT = {"segment": 2, "start": 0, "end": 28, "text": "She grows taller and shorter"}
WITHIN = {"segment": 1, "start": 0, "end": 18, "text": "taller and shorter"}
LATER = {"segment": 2, "start": 10, "end": 28, "text": "taller and shorter"}
CAT = {"segment": 0, "start": 2, "end": 5, "text": "cat"}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def marked(app, client) -> Counter:
    """w1: RepE with an earlier span across the break (and a comment) and CharE "cat";
    w2: RepE with its earlier span inside segment 1."""
    make_study(app, documents=[("doc-1", TEXTS)], suggestions="off")
    bodies = {
        "w1": [
            {**REPEAT, "category": "RepE", "paired": EARLIER, "comment": "twice | <b>"},
            {**CAT, "category": "CharE"},
        ],
        "w2": [{**LATER, "category": "RepE", "paired": WITHIN}],
    }
    for worker, own in bodies.items():
        token = open_token(client, worker)
        for n, body in enumerate(own):
            answer = api_add(client, token, {**body, "client_id": f"{worker}-{n}"})
            assert answer.status_code == 201, answer.get_json()
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    source = annotations(app, "demo")
    assert (0, 11, 19, EARLIER["text"]) in {row[7:11] for row in source}
    assert 1 in {row[12] for row in source}  # paired_end_segment
    return source


def export(app, fmt: str, out: Path) -> Path:
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        write_folder(out, iter_export_files(session, get_study(session, "demo"), fmt))
    return out


def reimport(app, slug: str, path: Path, fmt: str, taxonomy: Path | None = None) -> None:
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents

    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, slug, taxonomy or REPO / "taxonomies" / "snac.yaml")
        import_documents(session, study, parse_documents(path, fmt))


def test_label_studio_regions_hold_their_text_and_come_back(app, client, tmp_path):
    source = marked(app, client)
    folder = export(app, "labelstudio", tmp_path / "ls")
    (task,) = json.loads((folder / "tasks.json").read_text(encoding="utf-8"))
    text = task["data"]["text"]
    regions = [r for a in task["annotations"] for r in a["result"] if r["type"] == "labels"]
    assert len(regions) == 5  # three spans, two earlier halves
    for region in regions:
        value = region["value"]
        assert text[value["start"] : value["end"]] == value["text"]
    crossing = next(r["value"] for r in regions if r["value"]["text"].startswith("She grows\n"))
    assert crossing["text"] == "She grows\n\ntaller and shorter."  # the whole text's own gap
    reimport(app, "from-ls", folder / "tasks.json", "labelstudio")
    assert annotations(app, "from-ls") == source


def test_brat_spans_hold_their_text_and_come_back(app, client, tmp_path):
    source = marked(app, client)
    folder = export(app, "brat", tmp_path / "brat")
    text = (folder / "w1" / "doc-1.txt").read_text(encoding="utf-8")
    lines = (folder / "w1" / "doc-1.ann").read_text(encoding="utf-8").splitlines()
    spans = [line.split("\t") for line in lines if line.startswith("T")]
    assert len(spans) == 3
    for _, where, shown in spans:
        _, start, end = where.split(" ")
        assert " ".join(text[int(start) : int(end)].splitlines()) == shown
    # the earlier span runs over the blank line between segments 0 and 1 (offsets 20..22)
    assert "T3\tRepE 11 41\tShe grows  taller and shorter." in lines
    assert "R1\tpaired Arg1:T3 Arg2:T2" in lines
    reimport(app, "from-brat", folder, "brat")
    assert annotations(app, "from-brat") == source


def test_thresh_ranges_come_back(app, client, tmp_path):
    source = marked(app, client)
    folder = export(app, "thresh", tmp_path / "thresh")
    (path,) = folder.iterdir()
    (entry,) = json.loads(path.read_text(encoding="utf-8"))
    crossing = next(e for e in entry["edits"] if e.get("comment"))
    (earlier, later) = crossing["output_idx"]
    assert entry["target"][earlier[0] : earlier[1]] == "She grows\n\ntaller and shorter."
    assert entry["target"][later[0] : later[1]] == REPEAT["text"]
    reimport(app, "from-thresh", path.rename(path.with_suffix(".json")), "thresh")
    back = {row[:11] + row[12:] for row in annotations(app, "from-thresh")}
    assert back == {row[:11] + row[12:] for row in source}  # Thresh merges comments per edit


def test_parquet_offsets_hold_their_text(app, client, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    marked(app, client)
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        files = dict(iter_export_files(session, get_study(session, "demo"), "parquet"))
    rows = pq.read_table(io.BytesIO(files["data/annotations.parquet"])).to_pylist()
    (document,) = pq.read_table(io.BytesIO(files["data/documents.parquet"])).to_pylist()
    whole, segments = document["text"], document["segments"]
    assert segments == TEXTS and document["role"] == "real"
    for row in rows:
        assert segments[row["segment"]][row["start"] : row["end"]] == row["text"]
        assert whole[row["document_start"] : row["document_end"]] == row["text"]
        if row["paired_segment"] is None:
            assert row["paired_end_segment"] is row["paired_document_start"] is None
            continue
        at, start, to, end = (
            row[f"paired_{k}"] for k in ("segment", "start", "end_segment", "end")
        )
        held = segments[at][start:end] if to == at else crossing_text(segments, at, start, to, end)
        assert held == row["paired_text"]
        piece = whole[row["paired_document_start"] : row["paired_document_end"]]
        assert " ".join(piece.split()) == " ".join(row["paired_text"].split())
    crossing = next(r for r in rows if r["comment"])
    assert (crossing["paired_segment"], crossing["paired_end_segment"]) == (0, 1)
    assert (crossing["paired_start"], crossing["paired_end"]) == (11, 19)  # 19 in segment 1


def test_a_crossing_pair_into_a_taxonomy_without_the_flag_is_refused(app, client, tmp_path):
    marked(app, client)
    folder = export(app, "labelstudio", tmp_path / "ls")
    raw = yaml.safe_load((REPO / "taxonomies" / "snac.yaml").read_text(encoding="utf-8"))
    for category in raw["categories"]:
        category.pop("pair_across_segments", None)
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump(raw), encoding="utf-8")
    before = count_rows(app, Document)
    with pytest.raises(InvalidInput, match="pair_across_segments"):
        reimport(app, "strict", folder / "tasks.json", "labelstudio", strict)
    assert count_rows(app, Document) == before


def test_a_crossing_region_that_is_no_earlier_half_is_refused(tmp_path):
    text = "\n\n".join(TEXTS)
    region = {
        "id": "a",
        "from_name": "label",
        "to_name": "text",
        "type": "labels",
        "value": {"start": 11, "end": 41, "labels": ["CharE"]},
    }
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([{"data": {"text": text}, "annotations": [{"result": [region]}]}]))
    with pytest.raises(InvalidInput, match="crosses a segment boundary"):
        parse_documents(path, "labelstudio")
    ann = tmp_path / "brat"
    ann.mkdir()
    (ann / "d.txt").write_text(text, encoding="utf-8")
    (ann / "d.ann").write_text("T1\tCharE 11 41\tShe grows taller\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="crosses a segment boundary"):
        parse_documents(ann, "brat")
