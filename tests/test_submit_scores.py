"""Submit scores the worker against the document's suggestions before it marks the
assignment submitted (one write of the row) and reads rows instead of ORM objects; with no
suggestions it reads nothing more. The stored scores are the same, on SQLite and Postgres."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, Document, Suggestion
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import open_token

TEXTS = ["Anna is an only child. She lives in Paris.", "Pedro visits his sister Anna."]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def add_suggestions(app) -> None:
    with app.app_context(), session_scope() as session:
        document = session.scalar(select(Document))
        for segment, text, category in ((0, "only child", "CharE"), (1, "sister", "RefE")):
            start = TEXTS[segment].index(text)
            session.add(
                Suggestion(
                    document_id=document.id,
                    segment=segment,
                    start=start,
                    end=start + len(text),
                    text=text,
                    category=category,
                    score=0.9,
                    detector="test",
                    detector_version="1",
                )
            )


def submit_and_read(app, client, token: str) -> tuple[str, dict, str]:
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 200
    again = client.post(f"/api/assignments/{token}/submit").get_json()["completion_code"]
    assert again == answer.get_json()["completion_code"]
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment).where(Assignment.token == token))
        return row.status, row.scores, row.completion_code


@pytest.mark.parametrize("with_suggestions", [True, False])
def test_submit_stores_the_suggestion_recall(app, client, with_suggestions):
    make_study(app, documents=[("doc-1", TEXTS)], suggestions="shown")
    if with_suggestions:
        add_suggestions(app)
    token = open_token(client)
    start = TEXTS[0].index("only child")
    body = {
        "segment": 0,
        "start": start,
        "end": start + len("only child"),
        "text": "only child",
        "category": "CharE",
        "client_id": "c1",
    }
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    status, scores, code = submit_and_read(app, client, token)
    assert status == "submitted" and code.startswith("MG-")
    if not with_suggestions:
        assert scores == {
            "suggestions": {
                "recall": None,
                "caught": 0,
                "total": 0,
                "per_category": {},
                "missed": [],
                "detector": [],
            }
        }
        return
    recall = scores["suggestions"]
    assert (recall["recall"], recall["caught"], recall["total"]) == (0.5, 1, 2)
    assert recall["per_category"] == {
        "CharE": {"recall": 1.0, "caught": 1, "total": 1},
        "RefE": {"recall": 0.0, "caught": 0, "total": 1},
    }
    assert [m["text"] for m in recall["missed"]] == ["sister"]
    assert recall["detector"] == ["test"]
