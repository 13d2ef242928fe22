"""On Postgres the CSV export is formatted by the server (app.formats.csv_postgres.postgres_csv_lines);
it must give exactly the bytes the csv-module path gives, for awkward text and for fields a
spreadsheet would run as formulas (both paths prefix those with ')."""

from __future__ import annotations

import csv
import io

import pytest

from app.formats import csv as csv_format
from app.formats.csv_postgres import postgres_csv_lines
from app.formats.rows import OPTIONAL_COLUMNS, column_names, row_values
from app.formats.spreadsheet import safe_row, spreadsheet_safe
from app.models import AdjudicatedError, DocumentReview
from app.rules.work import Work
from tests.conftest import make_database_url, make_study

pytestmark = pytest.mark.postgres

SEGMENTS = [
    'Anna said, "hello" to Zoë 🙂 at the café.',
    "Line one\nline two; tab\there and a carriage\nreturn, then ' quotes'.",
    "=SUM(A1) and -2+3 or @me; +cmd",
]


@pytest.fixture
def database_url(request, tmp_path):
    return make_database_url("postgres", request, tmp_path)


def python_csv(session, study, work: Work | None = None, extra: tuple[str, ...] = ()) -> str:
    work = work or Work()
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(column_names(work, extra))
    writer.writerows(safe_row(row) for row in row_values(session, study, work, extra))
    return buffer.getvalue()


def adjudicate(session, study) -> None:
    """An adjudicated layer with awkward text: doc "doc, 1" in review with two accepted rows
    (one paired, one rejected row besides), doc-2 marked done with none."""
    documents = {d.external_id: d for d in study.documents}
    first = documents["doc, 1"]
    for n, (segment, text, decision) in enumerate(
        [
            (0, 'said, "hello"', "accepted"),
            (2, "=SUM(A1)", "accepted"),
            (1, "tab\there", "rejected"),
        ]
    ):
        start = SEGMENTS[segment].index(text)
        paired = {"paired_segment": 0, "paired_start": 0, "paired_end": 4, "paired_text": "Anna"}
        session.add(
            AdjudicatedError(
                document_id=first.id,
                candidate=f"c{n}",
                decision=decision,
                origin="reviewed",
                segment=segment,
                start=start,
                end=start + len(text),
                text=text,
                category="RepE" if segment == 2 else "CharE",
                comment='-note, "x"' if n else "",
                decided_by="@ada",
                **(paired if segment == 2 else {}),
            )
        )
    session.add(DocumentReview(document_id=first.id, status="in_review", updated_by="ada"))
    session.add(DocumentReview(document_id=documents["doc-2"].id, status="done", updated_by="ada"))
    session.commit()


def test_server_formatted_csv_is_byte_identical(app, client):
    make_study(app, documents=[("doc, 1", SEGMENTS), ("doc-2", ["Plain."])])
    spans = [
        (0, 'said, "hello"'),
        (0, "Zoë 🙂"),
        (1, "Line one\nline two"),
        (1, "tab\there"),
        (1, "carriage\nreturn"),
        (1, "' quotes'"),
        (2, "=SUM(A1)"),
        (2, "-2+3"),
        (2, "@me;"),
    ]
    comments = ["", 'a "quoted", comment', "multi\nline", " padded ", "%(x)s %s", "\\."]
    comments += ["\t=tab first", "-minus, first", "@at\nfirst"]
    tokens = []
    for worker in ("w,1", 'w"2', "=w3"):
        token = client.post(
            "/api/assignments", json={"study": "demo", "document": "doc, 1", "worker_id": worker}
        ).get_json()["token"]
        tokens.append(token)
        for n, ((segment, text), comment) in enumerate(zip(spans, comments, strict=True)):
            start = SEGMENTS[segment].index(text)
            answer = client.post(
                f"/api/assignments/{token}/annotations",
                json={
                    "segment": segment,
                    "start": start,
                    "end": start + len(text),
                    "text": text,
                    "category": "CharE",
                    "comment": comment,
                    "client_id": f"{worker}-{n}",
                },
            )
            assert answer.status_code == 201, answer.get_json()
    removed = client.get(f"/api/assignments/{tokens[0]}").get_json()["annotations"][0]["id"]
    assert client.delete(f"/api/assignments/{tokens[0]}/annotations/{removed}").status_code == 204
    for token in tokens[:2]:
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    empty = client.post(
        "/api/assignments", json={"study": "demo", "document": "doc-2", "worker_id": "w4"}
    ).get_json()["token"]
    assert client.post(f"/api/assignments/{empty}/submit").status_code == 200
    client.post(
        "/api/assignments", json={"study": "demo", "document": "doc-2", "worker_id": "w5"}
    )  # active, nothing: not exported

    from app.documents.studies import get_study

    # Both paths read the one statement of app.rules.work: the same bytes for every layer,
    # filter and optional column (w"3 never submitted: only with in-progress work).
    works = [
        (Work(), ()),
        (Work(in_progress=True), OPTIONAL_COLUMNS),
        (Work(include_practice=True), ("category_label",)),
        (Work(layer="adjudicated"), ()),
        (Work(layer="adjudicated", review_status="any", include_practice=True), OPTIONAL_COLUMNS),
    ]
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        try:
            study = get_study(session, "demo")
            adjudicate(session, study)
            assert postgres_csv_lines(session, study) is not None
            texts = {}
            for work, extra in works:
                fast = "".join(csv_format.export(session, study, work, extra))
                assert fast == python_csv(session, study, work, extra), (work, extra)
                texts[work, extra] = fast
        finally:
            session.close()
    rows = list(csv.DictReader(io.StringIO(texts[works[0]])))
    assert len(rows) == 2 * len(spans) - 1 + 1
    assert {r["span_text"] for r in rows} >= {spreadsheet_safe(text) for _, text in spans}
    assert {r["worker_id"] for r in rows} == {"w,1", 'w"2', "w4"}
    assert all(
        not value.startswith(("=", "+", "-", "@", "\t")) for r in rows for value in r.values()
    )
    assert rows[-1]["category"] == "" and rows[-1]["worker_id"] == "w4"
    active = list(csv.DictReader(io.StringIO(texts[works[1]])))
    assert len(active) == 3 * len(spans) - 1 + 1
    assert "'=w3" in {r["worker_id"] for r in active}
    assert {r["role"] for r in csv.DictReader(io.StringIO(texts[works[2]]))} == {"real"}
    done = list(csv.DictReader(io.StringIO(texts[works[3]])))
    assert [(r["document"], r["category"], r["review_status"]) for r in done] == [
        ("doc-2", "", "done")  # marked done with no error: one empty row
    ]
    layer = list(csv.DictReader(io.StringIO(texts[works[4]])))
    assert [(r["span_text"], r["review_status"], r["comment"]) for r in layer] == [
        ('said, "hello"', "in_review", ""),
        ("'=SUM(A1)", "in_review", '\'-note, "x"'),
        ("", "done", ""),
    ]
    assert layer[1]["paired_end_segment"] == "0" and layer[1]["category_label"]
