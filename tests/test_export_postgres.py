"""On Postgres the CSV export is formatted by the server (app.formats.csv_postgres.postgres_csv_lines);
it must give exactly the bytes the csv-module path gives, for awkward text and for fields a
spreadsheet would run as formulas (both paths prefix those with ')."""

from __future__ import annotations

import csv
import io

import pytest

from app.formats import csv as csv_format
from app.formats.csv_postgres import postgres_csv_lines
from app.formats.rows import CSV_COLUMNS, row_values
from app.formats.spreadsheet import safe_row, spreadsheet_safe
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


def python_csv(session, study) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(safe_row(row) for row in row_values(session, study))
    return buffer.getvalue()


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

    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        try:
            study = get_study(session, "demo")
            assert postgres_csv_lines(session, study) is not None
            fast = "".join(csv_format.export(session, study))
            slow = python_csv(session, study)
        finally:
            session.close()
    assert fast == slow
    rows = list(csv.DictReader(io.StringIO(fast)))
    assert len(rows) == 3 * len(spans) - 1 + 1
    assert {r["span_text"] for r in rows} >= {spreadsheet_safe(text) for _, text in spans}
    assert {r["worker_id"] for r in rows} == {"w,1", 'w"2', "'=w3", "w4"}
    assert all(
        not value.startswith(("=", "+", "-", "@", "\t")) for r in rows for value in r.values()
    )
    assert rows[-1]["category"] == "" and rows[-1]["worker_id"] == "w4"
