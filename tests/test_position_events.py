"""The page's requests: a segment view's hint events ride in the position update of the move
that follows (``"events": {"<event>": [id, ...]}``) instead of a request of their own. What
the server stores must equal what the two-request form (position, then
``POST …/suggestions/events``) stored, on SQLite and Postgres; old bodies are still taken, and
every bad value is a 400 that changes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, Document, SegmentTime, Suggestion, SuggestionEvent
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, db_snapshot, open_token


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def hinted(app):
    """Study ``demo`` with hints shown: two on segment 0, one on segment 1, one on doc-2."""
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    with app.app_context(), session_scope() as session:
        for external_id, segment, start in [("doc-1", 0, 0), ("doc-1", 0, 5), ("doc-1", 1, 0)] + [
            ("doc-2", 0, 0)
        ]:
            document = session.scalar(select(Document).where(Document.external_id == external_id))
            session.add(
                Suggestion(
                    document_id=document.id,
                    segment=segment,
                    start=start,
                    end=start + 3,
                    text="x",
                    category="CharE",
                    score=0.9,
                    detector="test",
                    detector_version="1",
                )
            )
    return "demo"


def hint_ids(client, token: str) -> dict[int, list[int]]:
    """The page's hints by segment."""
    by_segment: dict[int, list[int]] = {}
    for s in client.get(f"/api/assignments/{token}").get_json()["suggestions"]:
        by_segment.setdefault(s["segment"], []).append(s["id"])
    return by_segment


def stored(app, token: str) -> dict:
    with app.app_context(), session_scope() as session:
        assignment = session.scalar(select(Assignment).where(Assignment.token == token))
        times = session.execute(
            select(SegmentTime.segment, SegmentTime.active_seconds).where(
                SegmentTime.assignment_id == assignment.id
            )
        ).all()
        events = session.execute(
            select(SuggestionEvent.suggestion_id, SuggestionEvent.event).where(
                SuggestionEvent.assignment_id == assignment.id
            )
        ).all()
        return {
            "status": assignment.status,
            "current_segment": assignment.current_segment,
            "engaged": assignment.engaged_at is not None,
            "times": sorted(times),
            "events": sorted(events),
        }


def two_requests(client, token: str, hints: dict[int, list[int]]) -> list[int]:
    """The page before: each move's position, then the new segment's "shown" batch."""
    base = f"/api/assignments/{token}"
    batch = f"{base}/suggestions/events"
    answers = [
        client.post(f"{base}/position", json={"segment": 1, "active": {"0": 2.5}}),
        client.post(batch, json={"event": "shown", "suggestions": hints[0]}),
        client.post(f"{base}/position", json={"segment": 2, "active": {"1": 1.5}}),
        client.post(batch, json={"event": "shown", "suggestions": hints[1]}),
        client.post(batch, json={"event": "dismissed", "suggestions": hints[1]}),
        client.post(f"{base}/position", json={"segment": 1}),  # an old body, no events
        client.post(batch, json={"event": "shown", "suggestions": hints[0]}),  # a retry
        client.post(f"{base}/submit"),
        client.post(f"{base}/position", json={"segment": 3, "active": {"1": 1.0}}),  # ignored
        client.post(batch, json={"event": "accepted", "suggestions": hints[0][:1]}),
    ]
    return [answer.status_code for answer in answers]


def riding(client, token: str, hints: dict[int, list[int]]) -> list[int]:
    """The page now: the hint events ride in the position update of the next move."""
    base = f"/api/assignments/{token}/position"
    submit = f"/api/assignments/{token}/submit"
    answers = [
        client.post(base, json={"segment": 1, "active": {"0": 2.5}, "events": {"shown": hints[0]}}),
        client.post(
            base,
            json={
                "segment": 2,
                "active": {"1": 1.5},
                "events": {"shown": hints[1], "dismissed": hints[1]},
            },
        ),
        client.post(base, json={"segment": 1, "events": {"shown": hints[0]}}),  # a retry
        client.post(submit),
        client.post(
            base, json={"segment": 3, "active": {"1": 1.0}, "events": {"accepted": hints[0][:1]}}
        ),
    ]
    return [answer.status_code for answer in answers]


def test_events_in_a_position_store_what_the_two_requests_stored(app, client, hinted, flask_saw):
    before = open_token(client, worker="before")
    hints = hint_ids(client, before)
    assert sorted(hints) == [0, 1] and len(hints[0]) == 2
    assert two_requests(client, before, hints) == [204, 204, 204, 204, 204, 204, 204, 200, 204, 204]

    token = open_token(client, worker="riding")
    flask_saw.clear()
    assert riding(client, token, hint_ids(client, token)) == [204, 204, 204, 200, 204]
    assert flask_saw == []  # the worker API stored every position, the one after submit too

    expected = stored(app, before)
    assert stored(app, token) == expected
    assert expected["times"] == [(0, 2.5), (1, 1.5), (2, 0.0)]
    assert expected["current_segment"] == 1 and expected["status"] == "submitted"
    assert len(expected["events"]) == 3 + 1 + 1  # shown x3, dismissed x1, accepted x1


def test_bad_events_are_a_400_that_changes_nothing(app, client, hinted, flask_saw):
    token = open_token(client)
    mine = hint_ids(client, token)[0]
    foreign = hint_ids(client, open_token(client, worker="w2", document="doc-2"))[0][0]
    assert client.post(f"/api/assignments/{token}/position", json={"segment": 0}).status_code == 204
    before = db_snapshot(app)
    bad = [
        "shown",
        ["shown", mine],
        {"liked": mine},
        {"shown": []},
        {"shown": [True]},
        {"shown": "1,2"},
        {"shown": [1.5]},
        {"shown": [0]},
        {"shown": [-3]},
        {"shown": [2**62]},
        {"shown": [*mine, 2**63]},
        {"shown": list(range(1, 202))},
    ]
    for events in bad:
        body = {"segment": 1, "active": {"0": 1.0}, "events": events}
        answer = client.post(f"/api/assignments/{token}/position", json=body)
        assert answer.status_code == 400, events
        error = answer.get_json()["error"]
        assert error.startswith("events") or "suggestion" in error, events
        assert db_snapshot(app) == before, events
    # A good body after all that: stored.
    flask_saw.clear()
    body = {"segment": 1, "events": {"shown": mine}, "active": {"0": 1.0}}
    assert client.post(f"/api/assignments/{token}/position", json=body).status_code == 204
    assert flask_saw == []
    assert [e for _s, e in stored(app, token)["events"]] == ["shown", "shown"]
    # Another document's suggestion is ignored, as any id this worker is not shown.
    body = {"segment": 1, "events": {"shown": [*mine, foreign], "dismissed": [foreign]}}
    assert client.post(f"/api/assignments/{token}/position", json=body).status_code == 204
    assert [e for _s, e in stored(app, token)["events"]] == ["shown", "shown"]


def test_a_position_with_events_for_an_unknown_token_is_a_404(app, client, hinted):
    body = {"segment": 0, "events": {"shown": [1]}}
    answer = client.post(f"/api/assignments/{'x' * 24}/position", json=body)
    assert answer.status_code == 404
