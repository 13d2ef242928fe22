"""The annotate page's server side: exact duplicates refused (409 with the existing id), hint limits
per study, and a segment view's "shown" events stored in one batched request."""

from __future__ import annotations

import pytest

from app.models import Annotation, SuggestionEvent
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import (
    DOCUMENTS,
    annotation_body,
    api_add,
    count_rows,
    db_snapshot,
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


# --- exact duplicates ---------------------------------------------------------------------


def test_exact_duplicate_is_refused_with_the_existing_id(app, client, study):
    token = open_token(client)
    first = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="a"))
    assert first.status_code == 201
    before = db_snapshot(app)
    again = api_add(client, token, annotation_body(0, "Zoë", "CharE", comment="x", client_id="b"))
    assert again.status_code == 409
    body = again.get_json()
    assert body["existing_id"] == first.get_json()["id"]
    assert "already" in body["error"]
    assert db_snapshot(app) == before
    # A retry of the first request (same client_id) still answers 200 with it, not 409.
    retry = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="a"))
    assert retry.status_code == 200 and retry.get_json()["id"] == first.get_json()["id"]


def test_same_span_other_category_or_other_pair_is_not_a_duplicate(app, client, study):
    token = open_token(client)
    assert api_add(client, token, annotation_body(0, "Zoë", "CharE")).status_code == 201
    assert api_add(client, token, annotation_body(0, "Zoë", "GramE")).status_code == 201
    one = annotation_body(2, "Anna is an only child", "RepE", paired=span(0, "Anna"))
    other = annotation_body(2, "Anna is an only child", "RepE", paired=span(0, "only child"))
    assert api_add(client, token, one).status_code == 201
    assert api_add(client, token, other).status_code == 201
    assert api_add(client, token, dict(one, client_id="again")).status_code == 409
    assert count_rows(app, Annotation) == 4


def test_a_removed_annotation_can_be_added_again(client, study):
    token = open_token(client)
    first = api_add(client, token, annotation_body(0, "Zoë", "CharE")).get_json()
    assert client.delete(f"/api/assignments/{token}/annotations/{first['id']}").status_code == 204
    assert api_add(client, token, annotation_body(0, "Zoë", "CharE")).status_code == 201


def test_other_workers_may_mark_the_same_span(client, study):
    assert (
        api_add(client, open_token(client, "w1"), annotation_body(0, "Zoë", "CharE")).status_code
        == 201
    )
    assert (
        api_add(client, open_token(client, "w2"), annotation_body(0, "Zoë", "CharE")).status_code
        == 201
    )


# --- hint limits ---------------------------------------------------------------------------


def add_suggestions(app, rows: list[tuple[int, int, int, float]], document: str = "doc-1") -> None:
    """Store suggestions (segment, start, end, score) for ``document``."""
    from sqlalchemy import select

    from app.db import session_scope
    from app.models import Document, Suggestion

    with app.app_context(), session_scope() as session:
        doc = session.scalar(select(Document).where(Document.external_id == document))
        for segment, start, end, score in rows:
            session.add(
                Suggestion(
                    document_id=doc.id,
                    segment=segment,
                    start=start,
                    end=end,
                    text="x",
                    category="CharE",
                    score=score,
                    detector="test",
                    detector_version="1",
                )
            )


def configure(app, **settings):
    from sqlalchemy import select

    from app.crowd import platforms
    from app.db import session_scope
    from app.models import Study

    with app.app_context(), session_scope() as session:
        return platforms.configure_study(session.scalar(select(Study)), **settings)


@pytest.fixture
def hinted(app):
    make_study(app, documents=DOCUMENTS, suggestions="shown")
    # segment 0: five hints scored 0.1 .. 0.5 (starts 0, 2, 4, 6, 8); segment 1: one at 0.05
    add_suggestions(app, [(0, 2 * i, 2 * i + 1, (i + 1) / 10) for i in range(5)])
    add_suggestions(app, [(1, 0, 3, 0.05)])
    return "demo"


def shown(client, token) -> list[tuple[int, float]]:
    payload = client.get(f"/api/assignments/{token}").get_json()
    return [(s["segment"], s["score"]) for s in payload["suggestions"]]


def test_default_limit_keeps_the_three_best_hints_per_segment_in_text_order(app, client, hinted):
    assert shown(client, open_token(client)) == [(0, 0.3), (0, 0.4), (0, 0.5), (1, 0.05)]


def test_study_settings_limit_hints_and_drop_low_scores(app, client, hinted):
    described = configure(app, max_hints_per_segment=2, min_hint_score=0.1)
    assert described["max_hints_per_segment"] == 2 and described["min_hint_score"] == 0.1
    token = open_token(client)
    assert shown(client, token) == [(0, 0.4), (0, 0.5)]
    configure(app, max_hints_per_segment=0)  # applies to the next load of the same page
    assert shown(client, token) == []


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"max_hints_per_segment": -1}, "between 0 and 50"),
        ({"max_hints_per_segment": 51}, "between 0 and 50"),
        ({"max_hints_per_segment": 2.5}, "whole number"),
        ({"min_hint_score": 1.5}, "between 0 and 1"),
        ({"min_hint_score": float("nan")}, "between 0 and 1"),
        ({"min_hint_score": "lots"}, "must be a number"),
    ],
)
def test_bad_hint_settings_are_refused_and_change_nothing(app, hinted, bad, message):
    from app.errors import InvalidInput

    with pytest.raises(InvalidInput, match=message):
        configure(app, **bad)
    assert configure(app)["max_hints_per_segment"] == 3


def test_cli_sets_hint_limits(app, database_url, monkeypatch, hinted):
    from click.testing import CliRunner

    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    runner = CliRunner()
    ok = runner.invoke(
        main,
        ["study", "settings", "demo", "--max-hints-per-segment", "1", "--min-hint-score", "0.2"],
    )
    assert ok.exit_code == 0, ok.output
    assert "max_hints_per_segment: 1" in ok.output and "min_hint_score: 0.2" in ok.output
    bad = runner.invoke(main, ["study", "settings", "demo", "--max-hints-per-segment", "99"])
    assert bad.exit_code == 1 and bad.output.startswith("error: ")
    assert configure(app)["max_hints_per_segment"] == 1


# --- batched "shown" events ----------------------------------------------------------------


def suggestion_ids(client, token) -> list[int]:
    return [s["id"] for s in client.get(f"/api/assignments/{token}").get_json()["suggestions"]]


def post_events(client, token, body):
    return client.post(f"/api/assignments/{token}/suggestions/events", json=body)


def test_one_request_stores_a_segment_views_shown_events_once(app, client, hinted):
    token = open_token(client)
    ids = suggestion_ids(client, token)
    assert post_events(client, token, {"event": "shown", "suggestions": ids}).status_code == 204
    assert post_events(client, token, {"event": "shown", "suggestions": ids}).status_code == 204
    assert count_rows(app, SuggestionEvent) == len(ids) == 4


def test_batched_events_refuse_other_documents_suggestions_and_bad_bodies(app, client, hinted):
    add_suggestions(app, [(0, 0, 3, 0.9)], document="doc-2")
    token = open_token(client)
    other_token = open_token(client, "w2", document="doc-2")
    foreign = suggestion_ids(client, other_token)[0]
    mine = suggestion_ids(client, token)
    before = db_snapshot(app)
    for body, status in [
        ({"event": "shown", "suggestions": [2**62]}, 400),
        ({"event": "shown", "suggestions": []}, 400),
        ({"event": "shown", "suggestions": [True]}, 400),
        ({"event": "shown", "suggestions": "1,2"}, 400),
        ({"event": "liked", "suggestions": mine}, 400),
        ({"event": "shown", "suggestions": list(range(1, 202))}, 400),
        (["shown"], 400),
    ]:
        answer = post_events(client, token, body)
        assert answer.status_code == status, body
        assert "error" in answer.get_json()
    assert db_snapshot(app) == before
    # another document's suggestion is ignored, as any id the worker is not shown
    assert (
        post_events(client, token, {"event": "shown", "suggestions": [foreign]}).status_code == 204
    )
    assert db_snapshot(app) == before
    unknown = client.post("/api/assignments/nope/suggestions/events", json={"event": "shown"})
    assert unknown.status_code in (400, 404)
