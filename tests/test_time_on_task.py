"""Active time per (assignment, segment) sent with position updates, the
clamp against forged values, the all-segments-seen submit rule, and the median / speeder
figures of the report (hand-computed), on SQLite and Postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from app.annotation import timing
from app.db import session_scope
from app.errors import InvalidInput
from app.models import Assignment, SegmentTime, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, open_token


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def times(app, token: str) -> dict[int, float]:
    with app.app_context(), session_scope() as session:
        aid = session.scalar(select(Assignment.id).where(Assignment.token == token))
        rows = session.scalars(select(SegmentTime).where(SegmentTime.assignment_id == aid))
        return {row.segment: row.active_seconds for row in rows}


def opened_ago(app, token: str, seconds: float) -> None:
    """Pretend the assignment was opened ``seconds`` ago (and nothing was reported since)."""
    with app.app_context(), session_scope() as session:
        moment = datetime.now(UTC) - timedelta(seconds=seconds)
        session.execute(
            update(Assignment).where(Assignment.token == token).values(created_at=moment)
        )
        aid = session.scalar(select(Assignment.id).where(Assignment.token == token))
        session.execute(
            update(SegmentTime).where(SegmentTime.assignment_id == aid).values(updated_at=moment)
        )


def position(client, token: str, body) -> int:
    return client.post(f"/api/assignments/{token}/position", json=body).status_code


def test_position_stores_active_seconds_per_segment(app, client):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    opened_ago(app, token, 120)
    assert position(client, token, {"segment": 1, "active": {"0": 42.5}}) == 204
    assert times(app, token) == {0: 42.5, 1: 0.0}  # segment 1 reached: seen, no time yet
    opened_ago(app, token, 120)
    assert position(client, token, {"segment": 2, "active": {"1": 30, "0": 2.5}}) == 204
    assert times(app, token) == {0: 45.0, 1: 30.0, 2: 0.0}
    assert position(client, token, {"segment": 3}) == 204  # no time: still a seen mark
    assert set(times(app, token)) == {0, 1, 2, 3}


def test_a_forged_huge_value_is_clamped_to_the_wall_clock(app, client):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    opened_ago(app, token, 100)
    assert position(client, token, {"segment": 1, "active": {"0": 1e12}}) == 204
    stored = times(app, token)[0]
    assert 100 <= stored <= 100 + 5 + 5  # elapsed + the 5 s slack (+ the test's own time)
    # at once again: the slack is spent and almost no wall-clock time has passed, so only
    # that time is added (one slack per assignment, not per report)
    assert position(client, token, {"segment": 1, "active": {"0": 1e6, "1": 1e6}}) == 204
    after = times(app, token)
    assert after[0] + after[1] - stored <= 1
    # two claims share the budget in proportion
    assert after[1] == pytest.approx(after[0] - stored, abs=0.01)


@pytest.mark.parametrize(
    "active",
    [
        {"0": -1},
        {"0": "12"},
        {"0": True},
        {"9": 1},
        {"x": 1},
        {"-1": 1},
        [1, 2],
        "12",
        {"0": 1, "1": 1, "2": 1, "3": 1, "4": 1},
    ],
)
def test_bad_active_values_are_refused_and_change_nothing(app, client, active):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    answer = client.post(
        f"/api/assignments/{token}/position", json={"segment": 1, "active": active}
    )
    assert answer.status_code == 400
    assert "active" in answer.get_json()["error"]
    assert times(app, token) == {}
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Assignment.current_segment)) == 0


def test_nan_and_infinity_are_refused(app, client):
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    for raw in ('{"segment": 1, "active": {"0": NaN}}', '{"segment": 1, "active": {"0": 1e999}}'):
        answer = client.post(
            f"/api/assignments/{token}/position", data=raw, content_type="application/json"
        )
        assert answer.status_code == 400
    assert times(app, token) == {}


def test_submit_before_every_segment_was_seen_is_refused_when_the_study_says_so(app, client):
    make_study(app, documents=DOCUMENTS)
    allowed = open_token(client, worker="w0")
    assert client.post(f"/api/assignments/{allowed}/submit").status_code == 200  # default
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.settings = {**(study.settings or {}), "require_all_segments_seen": True}
    token = open_token(client)
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 409
    assert "segment 2 of 4 has not been opened" in answer.get_json()["error"]
    for segment in (1, 2):
        assert position(client, token, {"segment": segment}) == 204
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 409 and "segment 4 of 4" in answer.get_json()["error"]
    assert position(client, token, {"segment": 3}) == 204
    assert position(client, token, {"segment": 0}) == 204  # going back is fine
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def put_times(app, token: str, seconds: dict[int, float]) -> None:
    with app.app_context(), session_scope() as session:
        aid = session.scalar(select(Assignment.id).where(Assignment.token == token))
        for segment, value in seconds.items():
            session.add(SegmentTime(assignment_id=aid, segment=segment, active_seconds=value))


def test_report_median_and_speeder_hand_computed(app, client):
    make_study(app, documents=DOCUMENTS)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.settings = {**(study.settings or {}), "min_seconds_per_segment": 20}
    fast = open_token(client, worker="fast")  # doc-1, 4 segments
    slow = open_token(client, worker="slow")
    assert client.post(f"/api/assignments/{slow}/submit").status_code == 200
    slow2 = open_token(client, worker="slow", document="doc-2")  # 2 segments
    unmeasured = open_token(client, worker="script")
    # fast: 10, 20, 40 and segment 3 never reported (0) -> sorted 0, 10, 20, 40 -> median 15
    put_times(app, fast, {0: 10, 1: 20, 2: 40})
    # slow: doc-1 30, 50, 25, 100; doc-2 60, 5 -> 5, 25, 30, 50, 60, 100 -> median 40
    put_times(app, slow, {0: 30, 1: 50, 2: 25, 3: 100})
    put_times(app, slow2, {0: 60, 1: 5})
    for token in (fast, slow2, unmeasured):
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    from app.quality.reporting import study_report

    with app.app_context(), session_scope() as session:
        report = study_report(session, session.scalar(select(Study)))
    rows = {row["worker_id"]: row for row in report["workers"]}
    assert rows["fast"]["active_seconds_per_segment"] == 15
    assert rows["fast"]["speeder"] is True
    assert rows["slow"]["active_seconds_per_segment"] == 40
    assert rows["slow"]["speeder"] is False
    assert rows["script"]["active_seconds_per_segment"] is None  # no measurement, no flag
    assert rows["script"]["speeder"] is False


@pytest.mark.parametrize("allow", [False, True])
def test_a_study_made_by_a_researcher_refuses_unseen_submits_unless_allowed(
    app, client, database_url, monkeypatch, tmp_path, allow
):
    """`study create` turns the all-segments-seen rule on unless --allow-unseen-submit."""
    import json

    from click.testing import CliRunner

    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    args = ["study", "create", "made", "--taxonomy", "taxonomies/snac.yaml"]
    result = CliRunner().invoke(main, args + (["--allow-unseen-submit"] if allow else []))
    assert result.exit_code == 0, result.output
    docs = tmp_path / "docs.json"
    docs.write_text(json.dumps({"d1": ["First segment here.", "Second segment here."]}))
    result = CliRunner().invoke(main, ["import", "made", str(docs), "--no-ner"])
    assert result.exit_code == 0, result.output
    token = open_token(client, worker="w1", document="d1", study="made")
    answer = client.post(f"/api/assignments/{token}/submit")
    if allow:
        assert answer.status_code == 200
        return
    assert answer.status_code == 409 and "segment 2 of 2" in answer.get_json()["error"]
    assert client.post(f"/api/assignments/{token}/position", json={"segment": 1}).status_code == 204
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def test_the_time_budget_hand_computed():
    """``timing.budget``: the time since the last report, never past the time since opening
    less what is stored, plus one 5 s slack; SQLite's naive timestamps are UTC."""
    opened = datetime(2030, 1, 1, tzinfo=UTC)
    at = opened + timedelta(seconds=100)
    naive = opened.replace(tzinfo=None)
    assert timing.budget(at, opened, None, 0.0) == 105.0  # first report: 100 + 5
    assert timing.budget(at, naive, None, 0.0) == 105.0
    last = opened + timedelta(seconds=90)
    assert timing.budget(at, opened, last, 50.0) == 15.0  # since the last report: 10 + 5
    assert timing.budget(at, opened, last.replace(tzinfo=None), 50.0) == 15.0
    assert timing.budget(at, opened, last, 97.5) == 7.5  # the total's cap: 100 - 97.5 + 5
    assert timing.budget(at, opened, last, 104.0) == 1.0  # the slack mostly spent
    assert timing.budget(at, opened, last, 300.0) == 0.0  # never negative
    assert timing.budget(opened, opened, None, 0.0) == 5.0  # at once: the slack alone


def test_reported_seconds_are_stored_to_the_millisecond_and_scaled_in_proportion(app, client):
    """Values within the budget are stored as sent (to the millisecond, 0.057 stays 0.057);
    a claim over it is scaled down in proportion and rounded down, never up."""
    make_study(app, documents=DOCUMENTS)
    token = open_token(client)
    opened_ago(app, token, 1000)
    assert position(client, token, {"segment": 1, "active": {"0": 0.057, "1": 2.5}}) == 204
    assert times(app, token) == {0: 0.057, 1: 2.5}
    opened_ago(app, token, 10)  # 10 s since the last report; 2.557 s stored
    assert position(client, token, {"segment": 2, "active": {"0": 20.0, "2": 10.0}}) == 204
    stored = times(app, token)
    added = stored[0] - 0.057 + stored[2]
    assert 15.0 - 0.01 <= added <= 15.0 + 0.1  # 10 + 5, give or take the test's own time
    assert stored[2] == pytest.approx((stored[0] - 0.057) / 2, abs=0.002)
    # a new assignment's slack spent at once: a claim under a second is scaled down to
    # (almost) nothing too
    fresh = open_token(client, worker="w2")
    assert position(client, fresh, {"segment": 0, "active": {"0": 1e6}}) == 204
    assert position(client, fresh, {"segment": 0, "active": {"1": 0.9}}) == 204
    assert times(app, fresh)[1] < 0.5


def test_time_settings_bounds_and_clearing():
    """``min_seconds_per_segment`` in (0, 3600], finite; clearing removes it and nothing else;
    a refused value changes nothing."""
    study = Study(settings=None)
    assert timing.apply_settings(study, min_seconds=3600) == {
        "min_seconds_per_segment": 3600.0,
        "require_all_segments_seen": False,
    }
    assert timing.apply_settings(study, min_seconds=0.001)["min_seconds_per_segment"] == 0.001
    for bad in (0, -1, 3600.5, float("nan"), float("inf")):
        with pytest.raises(InvalidInput) as refused:
            timing.apply_settings(study, min_seconds=bad)
        assert str(refused.value) == "min_seconds_per_segment must be more than 0 and at most 3600"
    assert study.settings == {"min_seconds_per_segment": 0.001}
    described = timing.apply_settings(study, require_seen=True)  # the minimum is kept
    assert described == {"min_seconds_per_segment": 0.001, "require_all_segments_seen": True}
    assert study.settings == {"min_seconds_per_segment": 0.001, "require_all_segments_seen": True}
    timing.apply_settings(study, clear_min=True)
    assert study.settings == {"require_all_segments_seen": True}
    timing.apply_settings(study, clear_min=True)  # nothing to clear: no error
    assert study.settings == {"require_all_segments_seen": True}


@pytest.mark.parametrize(
    ("active", "message"),
    [
        ([1], "active must be an object of segment index -> seconds"),
        (
            {"0": 1, "1": 1, "2": 1, "3": 1, "4": 1},
            "active names more segments than the document has",
        ),
        ({"0000000001": 1}, "active: keys must be segment indexes, not '0000000001'"),
        ({"4": 1}, "active: segment 4 is out of range (0..3)"),
        ({"0": "1"}, "active.0: seconds must be numbers"),
        ({"0": -0.001}, "active.0: seconds must be a finite number from 0"),
        ({"0": 10**400}, "active.0: seconds must be a finite number from 0"),
    ],
)
def test_active_values_refused_with_their_message(active, message):
    with pytest.raises(InvalidInput) as refused:
        timing.parse_active(active, 4)
    assert str(refused.value) == message


def test_active_values_at_the_bounds_are_taken():
    """Every segment named once, a 9-digit key, 0 and fractions of a second."""
    every = {"0": 0, "1": 0.5, "2": 1, "3": 2.25}
    assert timing.parse_active(every, 4) == {0: 0.0, 1: 0.5, 2: 1.0, 3: 2.25}
    assert timing.parse_active({"000000003": 0.25}, 4) == {3: 0.25}
    assert timing.parse_active(None, 4) == {}
