"""Curation is explicit and keeps what workers wrote: auto-accept runs
on one document from its page or on the study from the review list, each after a count the
researcher confirms (practice documents left out); accepting a candidate as proposed keeps its
workers' comments, an edit or an added error takes a comment. Real HTTP, SQLite and Postgres."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.documents.studies import import_documents
from app.formats import DocumentInput, GoldSpan
from app.models import AdjudicatedError, Document, DocumentReview, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, open_token
from tests.test_adjudication import FORM_TOKEN, Reviewer, researcher

PRACTICE = ["Anna met Bob. Bob said hello.", "Then Carla leaved the house."]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def submit(client, worker: str, document: str, bodies: list[dict]) -> None:
    token = open_token(client, worker, document)
    for body in bodies:
        answer = client.post(f"/api/assignments/{token}/annotations", json=body)
        assert answer.status_code == 201, answer.get_json()
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200


@pytest.fixture
def study(app, client):
    """doc-1 and doc-2 marked by two workers each (two candidates with 2 votes on doc-1, one
    on doc-2), w1 commenting on "Anna"; a practice document both workers did."""
    make_study(app, documents=DOCUMENTS, annotators_per_doc=2)
    gold = [GoldSpan(segment=0, text="Anna", category="CharE", votes=1)]
    with app.app_context(), session_scope() as session:
        import_documents(
            session,
            session.scalar(select(Study)),
            [DocumentInput("practice-1", PRACTICE, gold=gold)],
            gold=True,
        )
    anna = annotation_body(0, "Anna", "CharE")
    for worker, comment in (("w1", "who is Anna?"), ("w2", "")):
        submit(
            client,
            worker,
            "doc-1",
            [{**anna, "comment": comment}, annotation_body(0, "Paris", "RefE")],
        )
        submit(
            client,
            worker,
            "doc-2",
            [annotation_body(0, "Another", "GramE", texts=DOCUMENTS[1][1])],
        )
        submit(
            client,
            worker,
            "practice-1",
            [annotation_body(0, "Anna", "CharE", texts=PRACTICE)],
        )
    with app.app_context(), session_scope() as session:  # practice-1 is practice from now on
        study = session.scalar(select(Study))
        study.settings = {**(study.settings or {}), "qualification": {"min_f1": 0.5, "attempts": 2}}


def layer(app) -> dict[str, list[tuple[str, str, str]]]:
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(Document.external_id, AdjudicatedError.text, AdjudicatedError.origin)
            .join(Document, Document.id == AdjudicatedError.document_id)
            .order_by(AdjudicatedError.id)
        ).all()
        out: dict[str, list[tuple[str, str, str]]] = {}
        for doc, text, origin in rows:
            out.setdefault(doc, []).append((text, origin))
        return out


def in_review(app) -> set[str]:
    with app.app_context(), session_scope() as session:
        return set(
            session.scalars(
                select(Document.external_id).join(
                    DocumentReview, DocumentReview.document_id == Document.id
                )
            )
        )


def test_the_study_wide_auto_accept_counts_first_and_leaves_practice_out(app, study):
    ada = researcher(app, "ada@example.org")
    page = ada.get("/admin/studies/demo/review").get_data(as_text=True)
    token = FORM_TOKEN.search(page).group(1)
    asked = ada.post(
        "/admin/studies/demo/review/auto-accept", data={"csrf_token": token, "min_workers": "2"}
    )
    text = asked.get_data(as_text=True)
    assert asked.status_code == 200 and 'id="auto-accept-confirm"' in text
    assert "Accept 3 candidates in 2 documents?" in text
    plan = re.search(r'<ul class="plan-list" id="auto-accept-plan">(.*?)</ul>', text).group(1)
    assert "doc-1" in plan and "doc-2" in plan and "practice-1" not in plan
    assert "and the 1 practice document is left out" in text
    assert layer(app) == {} and in_review(app) == set()  # nothing written yet
    # a stale count is refused, nothing written
    stale = ada.post(
        "/admin/studies/demo/review/auto-accept",
        data={"csrf_token": token, "min_workers": "2", "expected": "4", "confirm": "yes"},
        follow_redirects=True,
    )
    assert "the count changed meanwhile: 3 candidates now qualify" in stale.get_data(as_text=True)
    assert layer(app) == {}
    done = ada.post(
        "/admin/studies/demo/review/auto-accept",
        data={"csrf_token": token, "min_workers": "2", "expected": "3", "confirm": "yes"},
        follow_redirects=True,
    )
    assert "Accepted 3 candidates marked by at least 2 workers, in 2 documents" in done.get_data(
        as_text=True
    )
    assert layer(app) == {
        "doc-1": [("Anna", "auto"), ("Paris", "auto")],
        "doc-2": [("Another", "auto")],
    }
    assert in_review(app) == {"doc-1", "doc-2"}  # the practice document untouched


def test_one_documents_auto_accept_changes_that_document_only(app, study):
    reviewer = Reviewer(researcher(app, "ada@example.org"), document="doc-2")
    stale = reviewer.post("auto-accept-document", {"min_workers": 2, "expected": 2})
    assert (
        stale.status_code == 409 and "1 candidates qualify now, not 2" in stale.get_json()["error"]
    )
    assert layer(app) == {}
    answer = reviewer.post("auto-accept-document", {"min_workers": 2, "expected": 1})
    assert answer.status_code == 200
    assert [c["decision"]["origin"] for c in answer.get_json()["candidates"]] == ["auto"]
    assert layer(app) == {"doc-2": [("Another", "auto")]}
    assert in_review(app) == {"doc-2"}
    bad = reviewer.post("auto-accept-document", {"min_workers": "two", "expected": 0})
    assert bad.status_code == 400


def comments(app) -> dict[str, str]:
    with app.app_context(), session_scope() as session:
        return {
            row.text: row.comment
            for row in session.scalars(select(AdjudicatedError).order_by(AdjudicatedError.id))
        }


def test_accepting_as_proposed_keeps_the_workers_comments(app, study):
    reviewer = Reviewer(researcher(app, "ada@example.org"))
    state = reviewer.state()
    anna = next(c for c in state["candidates"] if c["proposal"]["text"] == "Anna")
    assert anna["proposal"]["comment"] == "who is Anna?"  # what the page shows and edits
    answer = reviewer.post(f"candidates/{anna['key']}", {"decision": "accept", "version": 0})
    assert answer.status_code == 200, answer.get_json()
    assert comments(app) == {"Anna": "who is Anna?"}
    # auto-accept keeps them too
    Reviewer(reviewer.client, document="doc-1").post(
        "auto-accept-document", {"min_workers": 1, "expected": 1}
    )
    assert comments(app) == {"Anna": "who is Anna?", "Paris": ""}
    # an edit changes the comment; an added error takes one
    row = next(c for c in reviewer.state()["candidates"] if c["key"] == anna["key"])["decision"]
    edit = {**annotation_body(0, "Anna", "CharE"), "comment": "a name never introduced"}
    edit.pop("client_id", None)
    changed = reviewer.post(
        f"candidates/{anna['key']}", {"decision": "accept", "version": row["version"], "edit": edit}
    )
    assert changed.status_code == 200, changed.get_json()
    added = {**annotation_body(0, "only child", "RefE"), "comment": "which child?"}
    added.pop("client_id", None)
    assert reviewer.post("errors", {"edit": added}).status_code == 200
    assert comments(app) == {
        "Anna": "a name never introduced",
        "Paris": "",
        "only child": "which child?",
    }


def test_an_empty_span_is_refused_with_a_clear_message(app, study):
    reviewer = Reviewer(researcher(app, "ada@example.org"))
    empty = {"segment": 0, "start": 3, "end": 3, "text": "", "category": "CharE"}
    answer = reviewer.post("errors", {"edit": empty})
    assert answer.status_code == 400 and "the span is empty" in answer.get_json()["error"]
    assert layer(app) == {}
