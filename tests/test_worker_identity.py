"""Issue #10, worker side: a token is a capability, one assignment policy for every way in,
slots are not hoarded, paired spans are strictly earlier, token answers are not cached.

Each test reproduces an attack that worked before the fix (SQLite and Postgres)."""

from __future__ import annotations

import pytest

from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, api_add, count_rows, db_snapshot, span


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def arrive(client, worker: str | None = None, slug: str = "demo", ip: str = "10.0.0.1", **extra):
    """GET /s/<slug> as ``worker`` from client address ``ip``; (answer, token or None)."""
    params = dict(extra)
    if worker is not None:
        params["worker_id"] = worker
    answer = client.get(f"/s/{slug}", query_string=params, environ_base={"REMOTE_ADDR": ip})
    location = answer.headers.get("Location", "")
    token = location.split("/a/")[1].split("/")[0].split("#")[0] if "/a/" in location else None
    return answer, token


# --- row 14: a paired span must be strictly earlier ------------------------------------------


def test_paired_span_equal_to_or_overlapping_the_annotated_span_is_refused(app, client):
    from app.models import Annotation

    make_study(app, documents=DOCUMENTS)
    _, token = arrive(client, "w1")
    before = db_snapshot(app)
    same = span(2, "Anna is an only child")
    equal = api_add(client, token, annotation_body(2, "Anna is an only child", "RepE", paired=same))
    assert equal.status_code == 400, equal.get_json()
    assert "before" in equal.get_json()["error"]
    # same start, ending after the annotated span ("Anna" annotated, paired "Anna is ...")
    longer = api_add(client, token, annotation_body(2, "Anna", "RepE", paired=same))
    assert longer.status_code == 400
    # starting earlier but overlapping the annotated span
    overlapping = {
        "segment": 2,
        "start": same["start"] - 3,
        "end": same["start"] + 4,
        "text": "",
    }
    from tests.helpers import SEGMENTS

    overlapping["text"] = SEGMENTS[2][overlapping["start"] : overlapping["end"]]
    cut = api_add(
        client, token, annotation_body(2, "Anna is an only child", "RepE", paired=overlapping)
    )
    assert cut.status_code == 400
    assert db_snapshot(app) == before
    # ending exactly where the annotated span starts is earlier, and accepted
    touching = span(2, "aside. ")
    ok = api_add(
        client, token, annotation_body(2, "Anna is an only child", "RepE", paired=touching)
    )
    assert ok.status_code == 201, ok.get_json()
    assert count_rows(app, Annotation) == 1


# --- row 15: token-bearing answers are not cached --------------------------------------------


def test_token_bearing_answers_are_not_stored_by_caches(app, client):
    make_study(app, documents=DOCUMENTS)
    answer, token = arrive(client, "w1")
    assert token
    token_answers = [
        answer,
        client.get(f"/a/{token}"),
        client.get(f"/api/assignments/{token}"),
        client.post(f"/api/assignments/{token}/position", json={"segment": 1}),
        client.post(f"/api/assignments/{token}/submit"),
        client.get(f"/a/{token}/done"),
        client.post("/api/assignments", json={"study": "demo", "worker_id": "w2"}),
    ]
    for response in token_answers:
        assert "no-store" in response.headers.get("Cache-Control", ""), response.request.path
        assert response.headers["Referrer-Policy"] in ("same-origin", "no-referrer")
