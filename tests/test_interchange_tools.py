"""Exports that tools nobody here wrote accept, and round trips that keep every
mark. A study with paired (across a segment break), relation (other span after, and the
same span twice), multi-label, attribute-carrying and empty-submission work goes out as
Label Studio (read by ``label-studio-converter``: JSON_MIN and CSV), brat (read by
``pybrat`` in strict mode), Thresh and BooookScore, and comes back identical, worker by
worker, on SQLite and Postgres."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.formats import iter_export_files, parse_documents
from app.formats.bundles import write_folder
from app.models import Annotation, Assignment, Document
from app.rules.work import Work
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import api_add, open_token

TAXONOMY = """
name: Interchange
multi_label: true
categories:
  - id: omit
    label: Omission
    definition: Something is left out.
    attributes:
      - {id: severity, kind: choice, values: [minor, major, "a lot"], required: true}
      - {id: confidence, kind: scale, min: 1, max: 5}
  - id: lang
    label: Language
    definition: The wording gets in the way.
  - id: contra
    label: Contradiction
    kind: paired
    pair_across_segments: true
    definition: Contradicts an earlier span.
  - id: link
    label: Linked
    kind: relation
    definition: Goes with another span, anywhere.
"""
#          0         1         2
#          0123456789012345678901234567890
TEXTS = [
    "Ann \U0001f642 met Bo at noon. Bo left.",
    "Later Cy came back. The end came.",
    "Cy won. Ann met Bo again.",
]
OTHER_TEXTS = ["Dee sang.", "Dee sang again, louder."]


def at(segment: int, text: str, texts: list[str] = TEXTS) -> dict:
    start = texts[segment].index(text)
    return {"segment": segment, "start": start, "end": start + len(text), "text": text}


CROSSING = {**at(0, "Bo left."), "end_segment": 1, "end": 19}
CROSSING["text"] = "Bo left. Later Cy came back."
WORK = {
    ("doc-1", "w1"): [
        {
            **at(0, "Bo left."),
            "categories": ["omit", "lang"],
            "comment": "why? | <b>x</b>",
            "attributes": {"severity": "a lot", "confidence": 4},
        },
        {**at(2, "Ann met Bo again."), "category": "contra", "paired": CROSSING},
        {**at(0, "Ann \U0001f642 met Bo"), "category": "link", "paired": at(2, "Cy won.")},
    ],
    ("doc-1", "w2"): [],  # submitted with no mark
    ("doc-1", "w3"): [
        {
            **at(1, "The end came."),
            "categories": ["link", "lang"],
            "paired": at(1, "The end came."),
        },
        {**at(2, "Cy won."), "category": "omit", "attributes": {"severity": "minor"}},
        {**at(2, "Ann met Bo again."), "category": "lang", "comment": "odd"},
    ],
    ("doc-2", "w1"): [],
    ("doc-2", "w3"): [
        {
            **at(1, "louder", OTHER_TEXTS),
            "category": "link",
            "paired": at(0, "Dee sang.", OTHER_TEXTS),
        },
    ],
}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def work_of(app, slug: str) -> tuple[Counter, set]:
    """Every mark of the study's submitted work (its categories in order, its other span,
    comment and attributes) and every (document, worker) that submitted."""
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(
                Document.external_id,
                Assignment.worker_id,
                func.coalesce(Annotation.mark, Annotation.id),
                Annotation.category,
                Annotation.segment,
                Annotation.start,
                Annotation.end,
                Annotation.text,
                Annotation.paired_segment,
                Annotation.paired_start,
                Annotation.paired_end,
                Annotation.paired_text,
                Annotation.paired_end_segment,
                Annotation.comment,
                Annotation.attributes,
            )
            .join(Assignment, Assignment.id == Annotation.assignment_id)
            .join(Document, Document.id == Assignment.document_id)
            .where(Document.study.has(slug=slug), Annotation.removed_at.is_(None))
            .order_by(Annotation.id)
        ).all()
        submitted = session.execute(
            select(Document.external_id, Assignment.worker_id)
            .join(Document, Document.id == Assignment.document_id)
            .where(Document.study.has(slug=slug), Assignment.status == "submitted")
        ).all()
    marks: dict[tuple, list] = {}
    for doc, worker, mark, category, *rest in rows:
        entry = marks.setdefault((doc, worker, mark), [[], rest])
        entry[0].append(category)
    found = Counter(
        (doc, worker, tuple(categories), *rest[:-1], json.dumps(rest[-1], sort_keys=True))
        for (doc, worker, _), (categories, rest) in marks.items()
    )
    return found, set(submitted)


def marked(app, client, tmp_path: Path) -> tuple[Counter, set, Path]:
    taxonomy = tmp_path / "interchange.yaml"
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    make_study(
        app,
        taxonomy=str(taxonomy),
        documents=[("doc-1", TEXTS), ("doc-2", OTHER_TEXTS)],
        suggestions="off",
    )
    app.config["ALLOW_UNSEEN_SUBMIT"] = True
    for (doc, worker), bodies in WORK.items():
        token = open_token(client, worker, doc)
        for body in bodies:
            answer = api_add(client, token, body)
            assert answer.status_code == 201, answer.get_json()
        for segment in range(len(TEXTS if doc == "doc-1" else OTHER_TEXTS)):
            client.put(f"/api/assignments/{token}/position", json={"segment": segment})
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    source, submitted = work_of(app, "demo")
    assert sum(source.values()) == sum(len(b) for b in WORK.values()) - 0
    assert ("doc-1", "w1", ("omit", "lang")) in {k[:3] for k in source}
    assert ("doc-1", "w2") in submitted and ("doc-2", "w1") in submitted
    return source, submitted, taxonomy


def export(app, fmt: str, out: Path) -> Path:
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        write_folder(out, iter_export_files(session, get_study(session, "demo"), fmt))
    return out


def reimport(app, slug: str, path: Path, fmt: str, taxonomy: Path) -> tuple[Counter, set]:
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents

    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, slug, taxonomy, suggestions="off")
        import_documents(session, study, parse_documents(path, fmt))
    return work_of(app, slug)


def test_every_format_comes_back_identical(app, client, tmp_path):
    source, submitted, taxonomy = marked(app, client, tmp_path)
    folders = {fmt: export(app, fmt, tmp_path / fmt) for fmt in ("labelstudio", "brat")}
    files = {
        "labelstudio": folders["labelstudio"] / "tasks.json",
        "brat": folders["brat"],
        "thresh": next(export(app, "thresh", tmp_path / "thresh").iterdir()),
        "booookscore": next(export(app, "booookscore", tmp_path / "bs").iterdir()),
    }
    for fmt, path in files.items():
        again = reimport(app, f"from-{fmt}", path, fmt, taxonomy)
        assert again == (source, submitted), fmt


def test_label_studio_converter_reads_the_export(app, client, tmp_path):
    from label_studio_converter import Converter

    marked(app, client, tmp_path)
    folder = export(app, "labelstudio", tmp_path / "ls")
    tasks = json.loads((folder / "tasks.json").read_text(encoding="utf-8"))
    config = (folder / "labeling_config.xml").read_text(encoding="utf-8")
    converter = Converter(config, str(folder), download_resources=False)
    converter.convert_to_json_min(str(folder / "tasks.json"), str(tmp_path / "min"), is_dir=False)
    records = json.loads((tmp_path / "min" / "result.json").read_text(encoding="utf-8"))
    # one record per submission, the two with no mark included
    assert len(records) == sum(len(t["annotations"]) for t in tasks) == len(WORK)
    regions = [r for record in records for r in record.get("label", [])]
    assert len(regions) == 11  # 7 marks, 4 other spans
    for record in records:
        for region in record.get("label", []):
            assert record["text"][region["start"] : region["end"]] == region["text"]
    assert {tuple(r["labels"]) for r in regions} >= {("omit", "lang"), ("link", "lang")}
    assert {r.get("severity") for r in records} >= {"a lot", "minor"}
    converter.convert_to_csv(
        str(folder / "tasks.json"), str(tmp_path / "csv"), is_dir=False, sep=","
    )
    with (tmp_path / "csv" / "result.csv").open(encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == len(records)


def test_pybrat_reads_the_export_strictly(app, client, tmp_path):
    from pybrat.parser import BratParser

    marked(app, client, tmp_path)
    folder = export(app, "brat", tmp_path / "brat")
    parser = BratParser(error="raise")  # strict: refuses two T lines on one span
    for worker in ("w1", "w2", "w3"):
        for example in parser.parse(folder / worker):
            for entity in example.entities:  # the mention: the slice, line breaks as spaces
                shown = " ".join(example.text[entity.start : entity.end].splitlines())
                assert shown == entity.mention
            for relation in example.relations:
                assert relation.type in ("paired", "related")
    w2 = parser.parse(folder / "w2")
    assert [e.entities for e in w2] == [[]]  # an empty submission: an empty .ann
    # two marks of one worker on the very same span that differ in more than category would
    # need two T lines there: valid for brat itself, refused by pybrat (docs/FORMATS.md); the
    # study above has none, so every file is one T line per span
    conf = (folder / "annotation.conf").read_text(encoding="utf-8")
    assert "severity\tArg:<ENTITY>, Value:minor|major|a%20lot" in conf


def test_csv_jsonl_and_parquet_carry_marks_and_attributes(app, client, tmp_path):
    import io

    import pyarrow.parquet as pq

    from app.db import session_scope
    from app.documents.studies import get_study
    from app.formats import iter_export
    from app.formats.rows import column_names, row_values
    from app.formats.spreadsheet import safe_row

    marked(app, client, tmp_path)
    with app.app_context(), session_scope() as session:
        study = get_study(session, "demo")
        text = "".join(iter_export(session, study, "csv"))  # Postgres: the server's lines
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(column_names(Work(), (), study))
        writer.writerows(safe_row(row) for row in row_values(session, study, Work()))
        assert text == buffer.getvalue()  # the csv module's, byte for byte
        lines = [
            json.loads(x) for x in "".join(iter_export(session, study, "jsonl")).split("\n") if x
        ]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0])[-3:] == ["mark", "attribute.severity", "attribute.confidence"]
    both = [r for r in rows if r["span_text"] == "Bo left."]
    assert [r["category"] for r in both] == ["omit", "lang"]  # a row per category, one mark
    assert {r["mark"] for r in both} == {both[0]["mark"]}
    assert {(r["attribute.severity"], r["attribute.confidence"]) for r in both} == {("a lot", "4")}
    assert sum(1 for r in rows if not r["span_text"]) == 2  # the two empty submissions
    typed = [x["attributes"] for x in lines if x["span_text"] == "Bo left."]
    assert typed == [{"severity": "a lot", "confidence": 4}] * 2
    folder = export(app, "parquet", tmp_path / "pq")
    table = pq.read_table(folder / "data" / "annotations.parquet").to_pylist()
    row = next(r for r in table if r["text"] == "Bo left.")
    assert json.loads(row["attributes"]) == {"severity": "a lot", "confidence": 4}
    assert len({r["mark"] for r in table if r["text"] == "Bo left."}) == 1
