"""The JSON API of CONTRACT.md, over HTTP (Flask test client) on SQLite and on Postgres."""

from __future__ import annotations

import json
import re

import pytest

from app.models import Annotation, Assignment
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import (
    CODE_PATTERN,
    DOCUMENTS,
    SEGMENTS,
    annotation_body,
    api_add,
    api_open,
    count_rows,
    db_snapshot,
    export_rows,
    export_text,
    open_token,
    span,
)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def study(app):
    make_study(app, documents=DOCUMENTS)
    return "demo"


# --- opening assignments ----------------------------------------------------------------


def test_open_assignment_never_returns_an_existing_token_without_a_key(app, client, study):
    # A token is a capability: a keyless open never hands back an existing one.
    first = api_open(client, "worker-a")
    assert first.status_code == 201
    body = first.get_json()
    assert body["segments"] == len(SEGMENTS)
    assert body["resume_segment"] == 0
    assert isinstance(body["token"], str) and len(body["token"]) >= 16

    before = db_snapshot(app)
    again = api_open(client, "worker-a")
    assert again.status_code == 409
    assert "token" not in again.get_json()
    assert "work in progress" in again.get_json()["error"]
    # one active assignment per worker: another document waits until this one is done
    assert api_open(client, "worker-a", document="doc-2").status_code == 409
    assert db_snapshot(app) == before

    other = api_open(client, "worker-b")
    assert other.status_code == 201
    assert other.get_json()["token"] != body["token"]

    assert client.post(f"/api/assignments/{body['token']}/submit").status_code == 200
    other_doc = api_open(client, "worker-a", document="doc-2")
    assert other_doc.status_code == 201
    assert other_doc.get_json()["segments"] == 2
    assert other_doc.get_json()["token"] not in {body["token"], other.get_json()["token"]}
    # never the same document twice, submitted or not
    assert (
        client.post(f"/api/assignments/{other_doc.get_json()['token']}/submit").status_code == 200
    )
    assert api_open(client, "worker-a").status_code == 409


def test_open_assignment_unknown_study_or_document_is_404(app, client, study):
    before = db_snapshot(app)
    missing_study = api_open(client, study="nope")
    assert missing_study.status_code == 404
    assert "nope" in missing_study.get_json()["error"]
    missing_doc = api_open(client, document="doc-99")
    assert missing_doc.status_code == 404
    assert "doc-99" in missing_doc.get_json()["error"]
    no_worker = client.post("/api/assignments", json={"study": "demo", "document": "doc-1"})
    assert no_worker.status_code == 400
    assert "worker_id" in no_worker.get_json()["error"]
    assert db_snapshot(app) == before


# --- reading ----------------------------------------------------------------------------


def test_get_payload_shape(client, study):
    token = open_token(client)
    response = client.get(f"/api/assignments/{token}")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    payload = response.get_json()
    assert set(payload) >= {
        "token",
        "status",
        "read_only",
        "study",
        "document",
        "taxonomy",
        "current_segment",
        "completion_code",
        "entities",
        "mentions",
        "suggestions",
        "annotations",
    }
    assert payload["token"] == token
    assert payload["status"] == "active"
    assert payload["read_only"] is False
    assert payload["study"]["slug"] == "demo"
    assert payload["study"]["suggestions"] == "hidden"
    assert isinstance(payload["study"]["title"], str) and payload["study"]["title"]
    assert payload["document"] == {
        "id": "doc-1",
        "segments": [{"index": i, "text": t} for i, t in enumerate(SEGMENTS)],
    }
    taxonomy = payload["taxonomy"]
    assert [c["id"] for c in taxonomy["categories"]] == [
        "CharE",
        "RefE",
        "SceneE",
        "InconE",
        "RepE",
        "GramE",
        "CorefE",
    ]
    for category in taxonomy["categories"]:
        assert set(category) >= {
            "id",
            "label",
            "group",
            "kind",
            "scope",
            "definition",
            "examples",
            "color",
            "shortcut",
            "detector_label",
            "paired_prompt",
        }
        assert re.fullmatch(r"#[0-9a-fA-F]{6}", category["color"])
    assert {g["id"] for g in taxonomy["groups"]} == {"coherence", "language"}
    assert payload["current_segment"] == 0
    assert payload["completion_code"] is None
    assert payload["suggestions"] == []
    assert payload["annotations"] == []
    assert isinstance(payload["entities"], list) and isinstance(payload["mentions"], list)


def test_unknown_token_is_404_json(client, study):
    response = client.get("/api/assignments/not-a-token")
    assert response.status_code == 404
    assert response.get_json()["error"]


# --- adding -----------------------------------------------------------------------------


def test_add_annotation_is_stored_and_returned(app, client, study):
    token = open_token(client)
    body = annotation_body(1, "and talk", "GramE", comment="  odd phrase ", client_id="c-1")
    # Code-point offsets: the emoji before the span is one code point (two in UTF-16).
    assert body["start"] == SEGMENTS[1].index("and talk") == 51
    response = api_add(client, token, body)
    assert response.status_code == 201
    created = response.get_json()
    assert isinstance(created["id"], int)
    assert {
        k: created[k]
        for k in ("segment", "start", "end", "text", "category", "paired", "client_id")
    } == {
        "segment": 1,
        "start": 51,
        "end": 59,
        "text": "and talk",
        "category": "GramE",
        "paired": None,
        "client_id": "c-1",
    }
    assert created["comment"] == "odd phrase"
    assert created["created_at"]

    # A fresh client (a reloaded page) finds it.
    payload = app.test_client().get(f"/api/assignments/{token}").get_json()
    assert [a["id"] for a in payload["annotations"]] == [created["id"]]
    assert payload["annotations"][0] == created
    assert count_rows(app, Annotation) == 1


def test_add_paired_annotation_in_earlier_and_same_segment(client, study):
    token = open_token(client)
    earlier = span(0, "Anna is an only child")
    response = api_add(
        client, token, annotation_body(1, "Anna's brother", "InconE", paired=earlier)
    )
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["paired"] == earlier

    repeated = api_add(
        client,
        token,
        annotation_body(
            2, "Anna is an only child", "RepE", paired=span(0, "Anna is an only child")
        ),
    )
    assert repeated.status_code == 201
    inside = api_add(
        client,
        token,
        annotation_body(
            2, "Anna is an only child", "InconE", paired=span(2, "Pedro takes Hero aside")
        ),
    )
    assert inside.status_code == 201, inside.get_json()
    annotations = client.get(f"/api/assignments/{token}").get_json()["annotations"]
    assert [a["category"] for a in annotations] == ["InconE", "RepE", "InconE"]
    assert annotations[2]["paired"] == span(2, "Pedro takes Hero aside")


def test_same_client_id_gives_first_annotation_back(app, client, study):
    token = open_token(client)
    body = annotation_body(0, "Zoë", "CharE", client_id="retry-1")
    first = api_add(client, token, body)
    second = api_add(client, token, body)
    assert first.status_code == 201
    assert second.status_code == 200
    assert second.get_json() == first.get_json()
    assert count_rows(app, Annotation) == 1
    assert len(client.get(f"/api/assignments/{token}").get_json()["annotations"]) == 1

    # client_ids are per assignment: another worker may use the same one.
    other = open_token(client, "w2")
    assert api_add(client, other, body).status_code == 201
    assert count_rows(app, Annotation) == 2


def test_annotations_are_listed_in_creation_order(client, study):
    token = open_token(client)
    texts = [(2, "Pedro"), (0, "Zoë"), (1, "café")]
    for segment, text in texts:
        assert api_add(client, token, annotation_body(segment, text, "CharE")).status_code == 201
    annotations = client.get(f"/api/assignments/{token}").get_json()["annotations"]
    assert [(a["segment"], a["text"]) for a in annotations] == texts


# --- removing ---------------------------------------------------------------------------


def test_remove_annotation(app, client, study):
    token = open_token(client)
    keep = api_add(client, token, annotation_body(0, "Zoë", "CharE")).get_json()
    gone = api_add(
        client, token, annotation_body(2, "At the party, Pedro takes Hero aside.", "SceneE")
    ).get_json()
    url = f"/api/assignments/{token}/annotations/{gone['id']}"
    response = client.delete(url)
    assert response.status_code == 204
    assert response.data == b""
    annotations = client.get(f"/api/assignments/{token}").get_json()["annotations"]
    assert [a["id"] for a in annotations] == [keep["id"]]

    assert client.delete(url).status_code == 204  # again: still gone, still fine
    assert [a["id"] for a in client.get(f"/api/assignments/{token}").get_json()["annotations"]] == [
        keep["id"]
    ]

    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    rows = export_rows(app)
    assert [(r["span_text"], r["category"]) for r in rows] == [("Zoë", "CharE")]
    assert "SceneE" not in export_text(app, fmt="jsonl")
    assert "SceneE" not in export_text(app, fmt="snac")


def test_remove_unknown_annotation_is_404(app, client, study):
    token = open_token(client)
    before = db_snapshot(app)
    response = client.delete(f"/api/assignments/{token}/annotations/9999")
    assert response.status_code == 404
    assert response.get_json()["error"]
    assert db_snapshot(app) == before


# --- position and resume ----------------------------------------------------------------


def test_position_is_the_resume_point(client, study):
    token = open_token(client)
    response = client.post(f"/api/assignments/{token}/position", json={"segment": 2})
    assert response.status_code == 204
    assert client.get(f"/api/assignments/{token}").get_json()["current_segment"] == 2

    back = client.post(f"/api/assignments/{token}/position", json={"segment": 1})
    assert back.status_code == 204
    assert client.get(f"/api/assignments/{token}").get_json()["current_segment"] == 1

    bad = client.post(f"/api/assignments/{token}/position", json={"segment": len(SEGMENTS)})
    assert bad.status_code == 400
    assert "out of range" in bad.get_json()["error"]
    assert client.get(f"/api/assignments/{token}").get_json()["current_segment"] == 1


# --- submitting -------------------------------------------------------------------------


def test_submit_gives_a_stable_code_and_makes_read_only(app, client, study):
    token = open_token(client)
    annotation = api_add(client, token, annotation_body(0, "Zoë", "CharE")).get_json()
    client.post(f"/api/assignments/{token}/position", json={"segment": 3})

    response = client.post(f"/api/assignments/{token}/submit")
    assert response.status_code == 200
    answer = response.get_json()
    assert CODE_PATTERN.match(answer["completion_code"])
    assert answer["redirect_url"] is None
    retry = client.post(f"/api/assignments/{token}/submit")
    assert retry.status_code == 200
    assert retry.get_json()["completion_code"] == answer["completion_code"]

    payload = client.get(f"/api/assignments/{token}").get_json()
    assert payload["status"] == "submitted"
    assert payload["read_only"] is True
    assert payload["completion_code"] == answer["completion_code"]
    assert [a["id"] for a in payload["annotations"]] == [annotation["id"]]

    before = db_snapshot(app)
    add = api_add(client, token, annotation_body(1, "café", "CharE"))
    assert add.status_code == 409
    assert "submitted" in add.get_json()["error"]
    remove = client.delete(f"/api/assignments/{token}/annotations/{annotation['id']}")
    assert remove.status_code == 409
    assert "submitted" in remove.get_json()["error"]
    moved = client.post(f"/api/assignments/{token}/position", json={"segment": 0})
    assert moved.status_code in (204, 409)
    assert db_snapshot(app) == before
    assert client.get(f"/api/assignments/{token}").get_json()["current_segment"] == 3

    # The same worker opening again gets neither this token back nor this document again.
    reopened = api_open(client)
    assert reopened.status_code == 409
    assert "token" not in reopened.get_json()


def test_submit_unknown_token_is_404(client, study):
    response = client.post("/api/assignments/nope/submit")
    assert response.status_code == 404
    assert response.get_json()["error"]


def test_whole_assignment_round_trip_to_csv(app, client, study):
    token = open_token(client, "alice")
    api_add(client, token, annotation_body(0, "Zoë", "CharE", comment="who?"))
    api_add(
        client,
        token,
        annotation_body(1, "Anna's brother", "InconE", paired=span(0, "Anna is an only child")),
    )
    code = client.post(f"/api/assignments/{token}/submit").get_json()["completion_code"]
    rows = export_rows(app)
    assert [
        (r["segment"], r["span_text"], r["category"], r["paired_text"], r["comment"]) for r in rows
    ] == [
        ("0", "Zoë", "CharE", "", "who?"),
        ("1", "Anna's brother", "InconE", "Anna is an only child", ""),
    ]
    for row in rows:
        assert row["worker_id"] == "alice"
        assert row["assignment"] == token
        assert row["completion_code"] == code
        assert (
            SEGMENTS[int(row["segment"])][int(row["span_start"]) : int(row["span_end"])]
            == row["span_text"]
        )
    assert json.loads(export_text(app, fmt="jsonl").splitlines()[0])["worker_id"] == "alice"
    assert count_rows(app, Assignment) == 1


# --- races ------------------------------------------------------------------------------


def _race(app, count: int, send) -> list:
    """Run ``send(client)`` from ``count`` threads at once, each with its own client."""
    import threading

    barrier = threading.Barrier(count)
    results: list = [None] * count

    def worker(i: int) -> None:
        client = app.test_client()
        barrier.wait()
        results[i] = send(client)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_racing_retries_store_one_annotation(app, client, study):
    token = open_token(client)
    body = annotation_body(0, "Zoë", "CharE", client_id="race")
    responses = _race(app, 6, lambda c: api_add(c, token, body))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 5 + [201], [r.get_json() for r in responses]
    assert len({r.get_json()["id"] for r in responses}) == 1
    assert count_rows(app, Annotation) == 1


def test_racing_opens_give_one_assignment(app, study):
    # The losers of the race get 409 "work in progress", never the winner's token.
    responses = _race(app, 6, lambda c: api_open(c, "racer"))
    assert sorted(r.status_code for r in responses) == [201] + [409] * 5
    assert [r.get_json().get("token") for r in responses].count(None) == 5
    assert count_rows(app, Assignment) == 1


def test_racing_submits_give_one_code(app, client, study):
    token = open_token(client)
    responses = _race(app, 6, lambda c: c.post(f"/api/assignments/{token}/submit"))
    assert all(r.status_code == 200 for r in responses), [r.get_json() for r in responses]
    assert len({r.get_json()["completion_code"] for r in responses}) == 1
    assert (
        client.get(f"/api/assignments/{token}").get_json()["completion_code"]
        == responses[0].get_json()["completion_code"]
    )
