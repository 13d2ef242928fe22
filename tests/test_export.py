"""CSV / JSONL / SNaC exports of work done through the HTTP API, on SQLite and Postgres."""

from __future__ import annotations

import csv
import io
import json
import types

import pytest

from app.formats import iter_export
from app.formats.rows import CSV_COLUMNS
from app.models import Annotation, Assignment
from app.rules.work import CHUNK_ROWS, Work
from tests.conftest import BACKENDS, REPO, make_database_url, make_study
from tests.helpers import annotation_body, api_add, export_text, span

CONTRACT_COLUMNS = [
    "study",
    "document",
    "segment",
    "span_text",
    "span_start",
    "span_end",
    "category",
    "paired_segment",
    "paired_text",
    "paired_start",
    "paired_end",
    "comment",
    "worker_id",
    "assignment",
    "completion_code",
    "created_at",
    "paired_end_segment",
]
TEXTS = [
    "Zoë met the cat 🐈 at the café. He left.",
    "Then 李雷 arrives, and \u0301odd accents follow. Zoë met the cat again.",
    "Nothing more.",
]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def work(app, client):
    """Three workers on one document: alice annotates (and removes one), bob submits with
    nothing, carol's annotations are all removed before submitting, dave never submits."""
    # four annotators per document: the policy keeps the limit for the API too
    make_study(app, documents=[("doc-1", TEXTS), ("doc-2", ["Untouched."])], annotators_per_doc=4)
    tokens = {}
    for worker in ("alice", "bob", "carol", "dave"):
        tokens[worker] = client.post(
            "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": worker}
        ).get_json()["token"]
    alice = tokens["alice"]
    bodies = [
        annotation_body(1, "李雷", "CharE", texts=TEXTS, comment='says "hi", then\nleaves'),
        annotation_body(0, "the café", "RefE", texts=TEXTS),
        annotation_body(
            1, "Zoë met the cat", "RepE", texts=TEXTS, paired=span(0, "Zoë met the cat", TEXTS)
        ),
        annotation_body(0, "He", "CorefE", texts=TEXTS),
        annotation_body(1, "\u0301odd", "GramE", texts=TEXTS),
    ]
    ids = [api_add(client, alice, body).get_json()["id"] for body in bodies]
    assert client.delete(f"/api/assignments/{alice}/annotations/{ids[3]}").status_code == 204
    carol = api_add(
        client, tokens["carol"], annotation_body(2, "Nothing", "GramE", texts=TEXTS)
    ).get_json()
    client.delete(f"/api/assignments/{tokens['carol']}/annotations/{carol['id']}")
    api_add(client, tokens["dave"], annotation_body(2, "more", "GramE", texts=TEXTS))
    codes = {
        w: client.post(f"/api/assignments/{tokens[w]}/submit").get_json()["completion_code"]
        for w in ("alice", "bob", "carol")
    }
    return {"tokens": tokens, "codes": codes}


def csv_rows(app, work: Work | None = None) -> tuple[list[str], list[dict[str, str]]]:
    if work is None:
        text = export_text(app, fmt="csv")
    else:
        from app.db import session_scope
        from app.documents.studies import get_study

        with app.app_context(), session_scope() as session:
            text = "".join(iter_export(session, get_study(session, "demo"), "csv", work))
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def test_csv_columns_are_the_contract(app, work):
    header, _ = csv_rows(app)
    assert header == CONTRACT_COLUMNS
    assert list(CSV_COLUMNS) == CONTRACT_COLUMNS


def test_csv_rows(app, work):
    _, rows = csv_rows(app)
    alice = [r for r in rows if r["worker_id"] == "alice"]
    # Ordered by segment then offset; the removed CorefE is absent.
    assert [(r["segment"], r["span_text"], r["category"]) for r in alice] == [
        ("0", "the café", "RefE"),
        ("1", "李雷", "CharE"),
        ("1", "\u0301odd", "GramE"),
        ("1", "Zoë met the cat", "RepE"),
    ]
    for row in alice:
        segment = TEXTS[int(row["segment"])]
        assert segment[int(row["span_start"]) : int(row["span_end"])] == row["span_text"]
        assert row["assignment"] == work["tokens"]["alice"]
        assert row["completion_code"] == work["codes"]["alice"]
        assert row["study"] == "demo" and row["document"] == "doc-1"
        assert row["created_at"]
    comment = next(r["comment"] for r in alice if r["category"] == "CharE")
    assert comment == 'says "hi", then\nleaves'
    paired = next(r for r in alice if r["category"] == "RepE")
    assert (paired["paired_segment"], paired["paired_text"]) == ("0", "Zoë met the cat")
    p_start, p_end = int(paired["paired_start"]), int(paired["paired_end"])
    assert TEXTS[0][p_start:p_end] == paired["paired_text"]
    for row in alice:
        if row["category"] != "RepE":
            assert row["paired_segment"] == row["paired_text"] == row["paired_start"] == ""
    assert "He" not in {r["span_text"] for r in rows}


def test_submitted_without_annotations_is_one_empty_row(app, work):
    _, rows = csv_rows(app)
    by_worker: dict[str, list[dict]] = {}
    for row in rows:
        by_worker.setdefault(row["worker_id"], []).append(row)
    assert set(by_worker) == {"alice", "bob", "carol"}  # dave never submitted
    for worker in ("bob", "carol"):  # carol removed her only annotation
        (row,) = by_worker[worker]
        assert row["category"] == ""
        for column in (
            "segment",
            "span_text",
            "span_start",
            "span_end",
            "paired_segment",
            "comment",
        ):
            assert row[column] == ""
        assert row["completion_code"] == work["codes"][worker]
        assert row["assignment"] == work["tokens"][worker]
        assert row["created_at"]
    assert "doc-2" not in {r["document"] for r in rows}
    # Asked for, an assignment still in progress adds its live annotations, never an empty row.
    _, with_active = csv_rows(app, Work(in_progress=True))
    assert [
        (r["span_text"], r["completion_code"]) for r in with_active if r["worker_id"] == "dave"
    ] == [("more", "")]
    assert [r for r in with_active if r["worker_id"] != "dave"] == rows


def test_jsonl_matches_csv(app, work):
    _, rows = csv_rows(app)
    lines = export_text(app, fmt="jsonl").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == len(rows)
    for record, row in zip(records, rows, strict=True):
        assert list(record) == CONTRACT_COLUMNS
        assert {k: "" if v is None else str(v) for k, v in record.items()} == row
        if record["category"] is not None:
            assert isinstance(record["span_start"], int)
    empty = next(r for r in records if r["worker_id"] == "bob")
    assert empty["category"] is None and empty["span_text"] is None


def test_snac_export(app, work):
    snac = json.loads(export_text(app, fmt="snac"))
    assert list(snac) == ["doc-1"]
    doc = snac["doc-1"]
    assert [doc[str(i)]["text"] for i in range(len(TEXTS))] == TEXTS
    errors = {(i, e["span"], e["error_type"]): e for i in range(3) for e in doc[str(i)]["errors"]}
    # dave has not submitted: his "more" is not there. Removed ones are not there.
    assert set(errors) == {
        (0, "the café", "RefE"),
        (1, "李雷", "CharE"),
        (1, "\u0301odd", "GramE"),
        (1, "Zoë met the cat", "RepE"),
    }
    assert all(e["votes"] == 1 for e in errors.values())
    assert errors[(1, "Zoë met the cat", "RepE")]["antecedants"] == ["Zoë met the cat"]
    assert "antecedants" not in errors[(0, "the café", "RefE")]


def test_snac_votes_count_distinct_workers(app, client):
    make_study(app, documents=[("doc-1", TEXTS)])
    body = annotation_body(0, "the café", "RefE", texts=TEXTS)
    for worker in ("w1", "w2", "w3"):
        token = client.post(
            "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": worker}
        ).get_json()["token"]
        api_add(client, token, body)
        if worker == "w1":  # the same text twice by one worker counts once
            api_add(
                client,
                token,
                {**span(0, "the café", TEXTS), "category": "RefE", "client_id": "again"},
            )
        if worker != "w3":
            client.post(f"/api/assignments/{token}/submit")
    snac = json.loads(export_text(app, fmt="snac"))
    start = TEXTS[0].index("the café")
    assert snac["doc-1"]["0"]["errors"] == [
        {"span": "the café", "error_type": "RefE", "votes": 2, "start": start, "end": start + 8}
    ]


def test_snac_export_keeps_different_occurrences_apart(app, client):
    """Two workers marking different occurrences of "the" are two errors of one vote each
    (merging on the text made them one error with 2 votes); paired spans carry offsets."""
    make_study(app, documents=[("doc-1", TEXTS)])
    antecedent = {**span(0, "Zoë met the cat", TEXTS)}
    for worker, occurrence in (("w1", 0), ("w2", 1)):
        token = client.post(
            "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": worker}
        ).get_json()["token"]
        body = {**span(0, "the", TEXTS, occurrence), "category": "RefE", "client_id": "a"}
        assert api_add(client, token, body).status_code == 201
        repeat = {
            **span(1, "Zoë met the cat", TEXTS),
            "category": "RepE",
            "paired": antecedent,
            "client_id": "b",
        }
        assert api_add(client, token, repeat).status_code == 201
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    snac = json.loads(export_text(app, fmt="snac"))
    first, second = TEXTS[0].index("the"), TEXTS[0].index("the", TEXTS[0].index("the") + 1)
    assert snac["doc-1"]["0"]["errors"] == [
        {"span": "the", "error_type": "RefE", "votes": 1, "start": first, "end": first + 3},
        {"span": "the", "error_type": "RefE", "votes": 1, "start": second, "end": second + 3},
    ]
    (repeat_error,) = snac["doc-1"]["1"]["errors"]
    assert repeat_error["votes"] == 2
    assert repeat_error["antecedants"] == ["Zoë met the cat"] * 2
    assert repeat_error["antecedant_offsets"] == [{"segment": 0, "start": 0, "end": 15}] * 2


def test_large_export_streams_in_chunks(app, client):
    """Over two chunks' worth of annotations come out as several pieces, all of them."""
    make_study(app, documents=[("doc-1", TEXTS)])
    token = client.post(
        "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": "w"}
    ).get_json()["token"]
    total = CHUNK_ROWS * 2 + 17
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        assignment = session.query(Assignment).filter_by(token=token).one()
        session.add_all(
            Annotation(
                assignment_id=assignment.id,
                segment=0,
                start=0,
                end=3,
                text="Zoë",
                category="CharE",
                comment=f"n{i}",
                client_id=f"c{i}",
            )
            for i in range(total)
        )
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200

    from app.documents.studies import get_study

    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        try:
            study = get_study(session, "demo")
            chunks = iter_export(session, study, "csv")
            assert isinstance(chunks, types.GeneratorType)
            pieces = list(chunks)
            lines = list(iter_export(session, study, "jsonl"))
        finally:
            session.close()
    assert len(pieces) >= 3
    rows = list(csv.DictReader(io.StringIO("".join(pieces))))
    assert len(rows) == total
    assert sorted(int(r["comment"][1:]) for r in rows) == list(range(total))
    assert len(lines) >= 3
    assert sum(chunk.count("\n") for chunk in lines) == total


def test_gold_spans_never_reach_the_exports(app, client):
    from app.formats import DocumentInput, GoldSpan

    gold = DocumentInput(
        "gold-1",
        TEXTS,
        gold=[
            GoldSpan(0, "the café", "RefE", 3),
            GoldSpan(1, "Zoë met the cat", "RepE", 2, ["Zoë met the cat"]),
        ],
    )
    make_study(app, documents=[gold], gold=True)
    token = client.post(
        "/api/assignments", json={"study": "demo", "document": "gold-1", "worker_id": "w"}
    ).get_json()["token"]
    api_add(client, token, annotation_body(2, "Nothing", "GramE", texts=TEXTS))
    client.post(f"/api/assignments/{token}/submit")
    rows = csv.DictReader(io.StringIO(export_text(app, fmt="csv")))
    assert [(r["span_text"], r["category"]) for r in rows] == [("Nothing", "GramE")]
    snac = json.loads(export_text(app, fmt="snac"))
    assert [e for i in range(3) for e in snac["gold-1"][str(i)]["errors"]] == [
        {"span": "Nothing", "error_type": "GramE", "votes": 1, "start": 0, "end": 7}
    ]
    jsonl = export_text(app, fmt="jsonl")
    assert "RefE" not in jsonl and "RepE" not in jsonl


def test_carriage_returns_do_not_break_csv_readers(app, client):
    """A lone CR (old Mac line ends, pasted comments) would end a CSV row unquoted."""
    from app.documents.studies import get_study, import_documents
    from app.formats import parse_documents

    raw = '{"crlf": ["First line.\\r\\nSecond line.\\rThird."]}'
    documents = parse_documents("crlf.json", "paragraphs", text=raw)
    assert documents[0].segments == ["First line.\nSecond line.\nThird."]
    make_study(app, documents=[("plain", ["Nothing here."])])
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        import_documents(session, get_study(session, "demo"), documents)
    token = client.post(
        "/api/assignments", json={"study": "demo", "document": "crlf", "worker_id": "w1"}
    ).get_json()["token"]
    body = {
        **span(0, "Second line.", ["First line.\nSecond line.\nThird."]),
        "category": "GramE",
        "comment": "odd\rbreak\r\nhere",
    }
    assert api_add(client, token, body).status_code == 201
    client.post(f"/api/assignments/{token}/submit")
    rows = list(csv.DictReader(io.StringIO(export_text(app), newline="")))
    assert [(r["span_text"], r["comment"]) for r in rows] == [("Second line.", "odd\nbreak\nhere")]


def test_snac_export_reimported_as_gold_keeps_its_occurrences(app, client, tmp_path):
    """Our snac export loads where SNaC's does; with --gold its start/end are used."""
    make_study(app, documents=[("doc-1", TEXTS)])
    token = client.post(
        "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": "w"}
    ).get_json()["token"]
    body = {**span(0, "the", TEXTS, 1), "category": "RefE", "client_id": "a"}
    assert api_add(client, token, body).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    path = tmp_path / "export.json"
    path.write_text(export_text(app, fmt="snac"), encoding="utf-8")

    from sqlalchemy import select

    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.formats import parse_documents
    from app.models import GoldError

    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "again", REPO / "taxonomies" / "snac.yaml")
        import_documents(session, study, parse_documents(path, "snac", gold=True), gold=True)
        (gold,) = session.scalars(select(GoldError)).all()
        assert (gold.start, gold.end) == (body["start"], body["end"])  # not the first "the"
