"""A Prolific-style study with a training phase (practice documents and a pass
mark) and attention checks. Practice work leaves every export, the report and the progress
figures unless asked for (``--include-practice``, ``?include_practice=1``: with a ``role``
column); the adjudicated layer holds documents marked done unless ``--review-status any``,
with a ``review_status`` column. Figures hand-computed; SQLite and Postgres; the command
line and the admin routes.

The study (2 annotators per document): real r1, r2, r3; c1 carrying an attention check;
practice p1, p2 (gold, pass mark F1 0.5). Through the API:

* W1: p1 with the three gold errors (F1 1, passes); r1 CharE "real"; r2 nothing.
* W2: p1 nothing (F1 0, fails); p2 with the three gold errors (passes); r1 GramE "Its";
  r2 GramE "More".
* W3: p1 RefE "Anna", not submitted.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.crowd import platforms
from app.db import session_scope
from app.formats import EXPORT_FORMATS, DocumentInput, GoldSpan, Work, iter_export_files
from app.models import Document, Study
from app.quality.reporting import format_report, study_report
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.test_training import span

PRACTICE = ["Anna met Bob. Bob said hello to the wrong person.", "Then Carla leaved the house."]
GOLD = [(0, "the wrong person", "CharE"), (0, "Anna", "RefE"), (1, "leaved", "GramE")]
REAL = [
    ("r1", ["A real text.", "Its second part."]),
    ("r2", ["Another real one.", "More."]),
    ("r3", ["Third.", "End."]),
]
CHECK = ["The cat was a dog today.", "Nothing else."]
PASSWORD = "a long enough password"
FORM_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def body(texts: list[str], segment: int, text: str, category: str) -> dict:
    return span(segment, text, category, texts)


def work(client, worker: str, document: str, marks: list[dict], *, submit: bool = True) -> None:
    answer = client.post(
        "/api/assignments", json={"study": "demo", "document": document, "worker_id": worker}
    )
    assert answer.status_code in (200, 201), answer.get_json()
    token = answer.get_json()["token"]
    for n, mark in enumerate(marks):
        added = client.post(
            f"/api/assignments/{token}/annotations", json={**mark, "client_id": f"c{n}"}
        )
        assert added.status_code == 201, added.get_json()
    if submit:
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200


@pytest.fixture
def study(app, client):
    from app.documents.studies import import_documents

    make_study(app, documents=REAL, annotators_per_doc=2, suggestions="off")
    gold = [GoldSpan(segment=s, text=t, category=c, votes=1) for s, t, c in GOLD]
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Study))
        check = GoldSpan(segment=0, text="The cat was a dog", category="CharE", votes=1)
        import_documents(session, row, [DocumentInput("c1", CHECK, gold=[check])], checks=True)
        practice = [DocumentInput(f"p{n}", list(PRACTICE), gold=list(gold)) for n in (1, 2)]
        import_documents(session, row, practice, gold=True)
    with app.app_context(), session_scope() as session:
        platforms.configure_study(
            session.scalar(select(Study)), qualification_f1=0.5, qualification_attempts=2
        )
    every_gold = [body(PRACTICE, s, t, c) for s, t, c in GOLD]
    work(client, "W1", "p1", every_gold)
    work(client, "W1", "r1", [body(REAL[0][1], 0, "real", "CharE")])
    work(client, "W1", "r2", [])
    work(client, "W2", "p1", [])
    work(client, "W2", "p2", every_gold)
    work(client, "W2", "r1", [body(REAL[0][1], 1, "Its", "GramE")])
    work(client, "W2", "r2", [body(REAL[1][1], 1, "More", "GramE")])
    work(client, "W3", "p1", [body(PRACTICE, 0, "Anna", "RefE")], submit=False)


def cli(app, *args: str):
    from app.cli import main

    return CliRunner().invoke(main, list(args), env={"DATABASE_URL": app.config["DATABASE_URL"]})


def exported(app, fmt: str, work: Work) -> dict[str, bytes]:
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        return dict(iter_export_files(session, get_study(session, "demo"), fmt, work))


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def documents_in(fmt: str, files: dict[str, bytes]) -> set[str]:
    """The documents an export holds (and, for row formats, that have a row)."""
    if fmt in ("assignments-csv", "assignments-jsonl"):
        return set()
    if fmt == "parquet":
        pq = pytest.importorskip("pyarrow.parquet")
        tables = {
            name: pq.read_table(io.BytesIO(data)).to_pylist()
            for name, data in files.items()
            if name.endswith(".parquet")
        }
        return {r["document"] for rows in tables.values() for r in rows}
    if fmt == "brat":
        return {name.rsplit("/", 1)[-1][:-4] for name in files if name.endswith(".txt")}
    (text,) = [data.decode() for name, data in files.items() if not name.endswith(".xml")]
    if fmt == "csv":
        return {r["document"] for r in csv_rows(text)}
    if fmt == "jsonl":
        return {json.loads(line)["document"] for line in text.splitlines()}
    if fmt in ("snac", "booookscore"):
        return set(json.loads(text))
    if fmt == "thresh":
        return {entry["id"] for entry in json.loads(text)}
    return {task["data"]["document"] for task in json.loads(text)}  # labelstudio


def test_every_export_leaves_practice_out_unless_asked(app, study):
    with_rows = {"r1", "r2"}  # the documents with submitted work
    everyone = {"r1", "r2", "r3", "c1"}
    expected = {"csv": with_rows, "jsonl": with_rows, "snac": with_rows}
    for fmt in EXPORT_FORMATS:
        if fmt.startswith("assignments"):
            continue
        plain = documents_in(fmt, exported(app, fmt, Work()))
        assert plain == expected.get(fmt, everyone), fmt
        practice = documents_in(fmt, exported(app, fmt, Work(include_practice=True)))
        assert practice == plain | {"p1", "p2"}, fmt

    # CSV by hand: 4 rows of real work; with practice 7 more (W1's 3 on p1, W2's empty row
    # on p1, W2's 3 on p2), each with its role; W3's unsubmitted mark in neither
    rows = csv_rows(exported(app, "csv", Work())["demo.csv"].decode())
    assert [(r["document"], r["worker_id"], r["span_text"]) for r in rows] == [
        ("r1", "W1", "real"),
        ("r1", "W2", "Its"),
        ("r2", "W1", ""),
        ("r2", "W2", "More"),
    ]
    assert "role" not in rows[0]
    rows = csv_rows(exported(app, "csv", Work(include_practice=True))["demo.csv"].decode())
    assert len(rows) == 11 and "W3" not in {r["worker_id"] for r in rows}
    roles = {(r["document"], r["role"]) for r in rows}
    assert roles == {
        ("r1", "real"),
        ("r2", "real"),
        ("p1", "qualification"),
        ("p2", "qualification"),
    }
    jsonl = exported(app, "jsonl", Work(include_practice=True))["demo.jsonl"].decode()
    assert sum(json.loads(line)["role"] == "qualification" for line in jsonl.splitlines()) == 7

    pq = pytest.importorskip("pyarrow.parquet")
    files = exported(app, "parquet", Work(include_practice=True))
    documents = pq.read_table(io.BytesIO(files["data/documents.parquet"])).to_pylist()
    assert {d["document"]: d["role"] for d in documents} == {
        "r1": "real",
        "r2": "real",
        "r3": "real",
        "c1": "check",
        "p1": "qualification",
        "p2": "qualification",
    }
    annotations = pq.read_table(io.BytesIO(files["data/annotations.parquet"])).to_pylist()
    assert sorted(a["role"] for a in annotations) == ["qualification"] * 6 + ["real"] * 3


def test_the_command_line_export_takes_the_flags(app, study, tmp_path):
    plain = cli(app, "export", "demo")
    assert plain.exit_code == 0, plain.output
    assert {r["document"] for r in csv_rows(plain.output)} == {"r1", "r2"}
    practice = cli(app, "export", "demo", "--include-practice")
    assert {r["role"] for r in csv_rows(practice.output)} == {"real", "qualification"}
    active = cli(app, "export", "demo", "--include-practice", "--include-in-progress")
    assert "W3" in {r["worker_id"] for r in csv_rows(active.output)}
    wrong = cli(app, "export", "demo", "--review-status", "any")
    assert wrong.exit_code == 1 and "--layer adjudicated only" in wrong.output
    folder = tmp_path / "ls"
    assert (
        cli(app, "export", "demo", "--format", "labelstudio", "--out", str(folder)).exit_code == 0
    )
    tasks = json.loads((folder / "tasks.json").read_text(encoding="utf-8"))
    assert [t["data"]["document"] for t in tasks] == ["r1", "r2", "r3", "c1"]


def test_the_report_counts_real_documents(app, study):
    """Real: r1 and r2 have 2 submitted of 2 needed (complete), r3 and c1 none: 4 documents,
    2 complete, 4 of 8 slots (50 %). With practice: p1 has 2 submitted (W3's is active), p2
    one: 6 documents, 3 complete, 7 of 12 slots."""
    with app.app_context(), session_scope() as session:
        study_row = session.scalar(select(Study))
        report = study_report(session, study_row)
        included = study_report(session, study_row, include_practice=True)
    progress = report["progress"]
    assert (progress["documents"], progress["complete_documents"]) == (4, 2)
    assert (progress["practice_documents"], progress["gold_documents"]) == (2, 0)
    assert progress["assignments"] == {"total": 4, "active": 0, "submitted": 4}
    assert [(d["document"], d["role"]) for d in progress["per_document"]] == [
        ("r1", "real"),
        ("r2", "real"),
        ("r3", "real"),
        ("c1", "check"),
    ]
    workers = {w["worker_id"]: w for w in report["workers"]}
    assert list(workers) == ["W1", "W2"]  # W3 has done no real document
    assert (workers["W1"]["documents_done"], workers["W1"]["annotations"]) == (2, 1)
    assert (workers["W2"]["documents_done"], workers["W2"]["annotations"]) == (2, 2)
    assert workers["W1"]["gold"] is None  # practice scores are not in the real figures
    assert report["categories"]["total"] == 3
    assert (report["categories"]["overall"]["CharE"], report["categories"]["overall"]["GramE"]) == (
        1,
        2,
    )
    assert report["agreement"]["documents"] == 2  # r1 and r2

    progress = included["progress"]
    assert (progress["documents"], progress["complete_documents"]) == (6, 3)
    assert progress["assignments"] == {"total": 8, "active": 1, "submitted": 7}
    workers = {w["worker_id"]: w for w in included["workers"]}
    assert (workers["W1"]["documents_done"], workers["W1"]["annotations"]) == (3, 4)
    assert (workers["W2"]["documents_done"], workers["W2"]["annotations"]) == (4, 5)
    assert workers["W1"]["gold"]["overall"]["f1"] == 1.0
    assert (workers["W3"]["documents_done"], workers["W3"]["documents_active"]) == (0, 1)
    assert included["categories"]["total"] == 9
    assert included["agreement"]["documents"] == 3  # and p1

    text = format_report(report)
    assert "Documents 4 (0 gold; 2 of the training phase left out), complete 2" in text
    assert "p1" not in text
    command = cli(app, "report", "demo", "--include-practice")
    assert command.exit_code == 0, command.output
    assert "Documents 6 (2 gold; 2 of the training phase included), complete 3" in command.output
    assert "p1 (qualification)" in command.output


def researcher(app):
    from app.researchers.accounts import create_researcher

    with app.app_context(), session_scope() as session:
        create_researcher(session, "ada@example.org", PASSWORD).role = "admin"
    client = app.test_client()
    token = FORM_TOKEN.search(client.get("/admin/login").get_data(as_text=True)).group(1)
    answer = client.post(
        "/admin/login",
        data={"email": "ada@example.org", "password": PASSWORD, "csrf_token": token},
    )
    assert answer.status_code == 302
    return client


def test_dashboard_progress_and_downloads_take_the_toggle(app, study):
    ada = researcher(app)
    live = ada.get("/admin/studies/demo/progress.json").get_json()
    assert (live["documents"], live["complete_documents"], live["percent"]) == (4, 2, 50.0)
    assert (live["slots_submitted"], live["slots"]) == (4, 8)
    assert live["annotations"] == {"in_progress": 0, "submitted": 3}
    live = ada.get("/admin/studies/demo/progress.json?include_practice=1").get_json()
    assert (live["documents"], live["complete_documents"], live["percent"]) == (6, 3, 58.3)
    assert live["annotations"] == {"in_progress": 1, "submitted": 9}
    page = ada.get("/admin/studies/demo").get_data(as_text=True)
    assert "2 practice documents of the training phase left out" in page
    assert 'href="/admin/studies/demo?include_practice=1"' in page
    page = ada.get("/admin/studies/demo?include_practice=1").get_data(as_text=True)
    assert "Leave practice out" in page
    assert "/admin/studies/demo/export.csv?include_practice=1" in page
    assert "/admin/studies/demo/progress.json?include_practice=1" in page
    report = ada.get("/admin/studies/demo/report.json?include_practice=1").get_json()
    assert report["progress"]["documents"] == 6
    studies = ada.get("/admin/").get_data(as_text=True)
    assert re.search(r'<td class="num">4</td>\s*<td class="num">0</td>', studies)

    download = ada.get("/admin/studies/demo/export.csv?include_practice=1")
    assert download.status_code == 200
    assert {r["role"] for r in csv_rows(download.get_data(as_text=True))} == {
        "real",
        "qualification",
    }
    plain = csv_rows(ada.get("/admin/studies/demo/export.csv").get_data(as_text=True))
    assert {r["document"] for r in plain} == {"r1", "r2"}
    for bad in ("review_status=any", "layer=adjudicated&review_status=some"):
        answer = ada.get(f"/admin/studies/demo/export.csv?{bad}")
        assert answer.status_code == 400 and "review" in answer.get_data(as_text=True)
    assert (
        ada.get("/admin/studies/demo/export.assignments-csv?include_practice=1").status_code == 400
    )


def test_the_adjudicated_layer_holds_documents_marked_done(app, study):
    """Auto-accept at 1 vote puts r1 and r2 in review with their candidates (the study-wide
    auto-accept leaves practice documents out unless named: named, p1 and p2 go in review
    too); r1 is then marked done. By default only r1's two errors; any status adds r2's one;
    practice adds p1's three (W1's) and p2's three (W2's)."""
    from app.quality.adjudication import set_status

    study_wide = cli(app, "review", "auto-accept", "demo", "--min-workers", "1")
    assert study_wide.exit_code == 0 and "(2 practice documents left out)" in study_wide.output
    named = cli(
        app,
        "review",
        "auto-accept",
        "demo",
        "--min-workers",
        "1",
        "--document",
        "p1",
        "--document",
        "p2",
    )
    assert named.exit_code == 0, named.output
    with app.app_context(), session_scope() as session:
        r1 = session.scalar(select(Document).where(Document.external_id == "r1"))
        set_status(session, r1, {"status": "done", "version": 1}, "ada")
    done = cli(app, "export", "demo", "--layer", "adjudicated")
    assert done.exit_code == 0, done.output
    rows = csv_rows(done.output)
    assert [(r["document"], r["span_text"], r["review_status"]) for r in rows] == [
        ("r1", "real", "done"),
        ("r1", "Its", "done"),
    ]
    assert "role" not in rows[0]
    rows = csv_rows(
        cli(app, "export", "demo", "--layer", "adjudicated", "--review-status", "any").output
    )
    assert [(r["document"], r["review_status"]) for r in rows] == [
        ("r1", "done"),
        ("r1", "done"),
        ("r2", "in_review"),
    ]
    every = cli(
        app,
        "export",
        "demo",
        "--layer",
        "adjudicated",
        "--review-status",
        "any",
        "--include-practice",
    )
    rows = csv_rows(every.output)
    assert [(r["document"], r["role"], r["review_status"]) for r in rows][3:] == [
        ("p1", "qualification", "in_review")
    ] * 3 + [("p2", "qualification", "in_review")] * 3
    snac = json.loads(
        cli(app, "export", "demo", "--layer", "adjudicated", "--format", "snac").output
    )
    assert list(snac) == ["r1"]

    ada = researcher(app)
    web = ada.get("/admin/studies/demo/export.jsonl?layer=adjudicated&review_status=any")
    assert web.status_code == 200
    lines = [json.loads(line) for line in web.get_data(as_text=True).splitlines()]
    assert [(line["document"], line["review_status"]) for line in lines][-1] == ("r2", "in_review")
    status = cli(app, "review", "status", "demo")
    assert [line.split("\t")[:3] for line in status.output.splitlines()] == [
        ["r1", "2 workers", "done"],
        ["r2", "2 workers", "in_review"],
        ["r3", "0 workers", "unreviewed"],
        ["c1", "0 workers", "unreviewed"],
    ]


def test_a_practice_document_and_a_qualification_document_have_their_own_roles(app, study):
    """The training phase has two roles: a document imported with ``--practice`` teaches
    (``practice``), the other gold documents grade (``qualification``); both are out of
    the counted work by default and back with ``include_practice``."""
    from app.documents.studies import import_documents
    from app.rules.work import role, select_documents

    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Study))
        gold = [GoldSpan(segment=s, text=t, category=c, votes=1) for s, t, c in GOLD]
        teach = DocumentInput("p0", list(PRACTICE), gold=gold)
        import_documents(session, row, [teach], gold=True, practice=True)
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Study))
        every = session.execute(
            select_documents(row, Work(include_practice=True), Document.external_id, role(row))
        ).all()
        counted = session.scalars(select_documents(row, Work(), Document.external_id)).all()
    roles = dict(every)
    assert (roles["p0"], roles["p1"], roles["c1"], roles["r1"]) == (
        "practice",
        "qualification",
        "check",
        "real",
    )
    assert sorted(counted) == ["c1", "r1", "r2", "r3"]
