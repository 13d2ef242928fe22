"""Issue 31: the common submit in two round trips on Postgres (app/annotation/fast_submit.py,
answered by the fast lane). With the lane on and off, the same submits must give the same
statuses, bodies and headers and leave the same rows, on SQLite and Postgres; on Postgres the
common ones must take the fast form (two driver statements, nothing through SQLAlchemy) and
every other one the route's own submit; the guard ``status = 'active'`` must hold against a
submit or an abandon committed between the read and the write."""

from __future__ import annotations

import itertools
import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event, select

from app.annotation import fast_submit, hot_sql
from app.annotation.hot_driver import Driver
from app.db import session_scope
from app.models import Assignment, Document, Study
from tests.conftest import BACKENDS, make_database_url, make_study

SEGMENTS = ["Anna lives in Paris.", "She has a brother.", "He lives in Rome."]
EARLIER = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
KEPT_CODE = "MG-KEEPS-THIS1"
FAST = ["submit_facts", "submit"]  # the fast form's round trips, by statement name
DECLINED = ["submit_facts"]  # read, not the common submit: the route's own ran

URL = "https://example.org/done?cc={code}&x=1"
QUESTIONS = {"journey": {"after_document": [{"id": "q1", "type": "text", "prompt": "Why?"}]}}

# case -> (study changes, assignment changes, gold document, the fast form on Postgres)
CASES = {
    "common": ({}, {}, False, True),
    "engaged, with a code": (
        {},
        {"engaged_at": EARLIER, "completion_code": KEPT_CODE},
        False,
        True,
    ),
    "completion url": ({"completion_url": URL}, {}, False, True),
    "mturk": (
        {"completion_url": URL},
        {"platform": "mturk", "platform_data": {"assignment_id": "A1", "hit_id": "H1"}},
        False,
        True,
    ),
    "questions": ({"completion_url": URL, "settings": QUESTIONS}, {}, False, True),
    "suggestions on": ({"suggestions": "hidden"}, {}, False, False),
    "pause rule": ({"settings": {"pause": {"after": 1}}}, {}, False, False),
    "qualifying": ({"settings": {"qualification": {"min_f1": 0.5}}}, {}, True, False),
    "qualified, a real document": (
        {"settings": {"qualification": {"min_f1": 0.5}}, "completion_url": URL},
        {},
        False,
        True,
    ),
    "segments unseen": ({"settings": {"require_all_segments_seen": True}}, {}, False, False),
    "abandoned": ({}, {"status": "abandoned"}, False, False),
}
_slugs = itertools.count()


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def driver_ran(monkeypatch):
    """The driver's statements by name, each with the rows it returned (the real driver
    runs them: only recorded here)."""
    ran: list[tuple[str, int]] = []
    run = Driver.run

    def recorded(self, name, *args, **kwargs):
        result = run(self, name, *args, **kwargs)
        ran.append((name, len(result.rows)))
        return result

    monkeypatch.setattr(Driver, "run", recorded)
    return ran


@pytest.fixture
def orm_statements(app):
    """How many statements went through SQLAlchemy (the route's submit: several)."""
    count = [0]

    @event.listens_for(app.extensions["db_engine"], "before_cursor_execute")
    def _count(*_args):
        count[0] += 1

    return count


def postgres(app) -> bool:
    return app.extensions["db_engine"].dialect.name == "postgresql"


def open_assignment(app, client, slug: str, case: str | tuple) -> str:
    """A study ``slug`` set up as ``case`` says (a name in CASES, or such a tuple), and the
    token of a worker's assignment."""
    study_changes, assignment_changes, gold, _fast = CASES[case] if isinstance(case, str) else case
    make_study(app, slug, documents=[("doc-1", SEGMENTS)], suggestions="off")
    body = {"study": slug, "worker_id": "w1", "document": "doc-1"}
    opened = client.post("/api/assignments", json=body)
    assert opened.status_code == 201, opened.get_json()
    token = opened.get_json()["token"]
    with app.app_context(), session_scope() as session:
        assignment = session.scalar(select(Assignment).where(Assignment.token == token))
        study = session.get(Study, assignment.study_id)
        for name, value in study_changes.items():
            setattr(study, name, value)
        for name, value in assignment_changes.items():
            setattr(assignment, name, value)
        session.get(Document, assignment.document_id).is_gold = gold
    return token


COLUMNS = ("status", "completion_code", "engaged_at", "last_seen_at", "submitted_at", "scores")


def row(app, token: str) -> dict:
    with app.app_context(), session_scope() as session:
        assignment = session.scalar(select(Assignment).where(Assignment.token == token))
        return {name: getattr(assignment, name) for name in COLUMNS}


def changes(before: dict, after: dict, started: datetime, code) -> dict:
    """``after`` told against ``before``: a time as kept, or set during the test; the code
    as kept or the answer's."""

    def told(name, value):
        if value == before[name] and name != "status":
            return "kept"
        if isinstance(value, datetime):
            moment = value if value.tzinfo else value.replace(tzinfo=UTC)
            return "now" if started <= moment + timedelta(seconds=1) else value
        if name == "completion_code" and value is not None and value == code:
            return "the answer's"
        return value

    return {name: told(name, value) for name, value in after.items()}


def submit(app, client, token: str, *, lane: bool, orm_statements: list | None = None):
    """Submit ``token`` with the lane on or off: (status, body with its code named, headers,
    the row's changes, the code, the statements it sent through SQLAlchemy)."""
    app.config["FAST_LANE"] = lane
    before, started = row(app, token), datetime.now(UTC)
    counted = orm_statements[0] if orm_statements else 0
    answer = client.post(f"/api/assignments/{token}/submit", base_url="https://localhost")
    counted = (orm_statements[0] if orm_statements else 0) - counted  # the submit's own
    body = answer.get_json()
    code = body.get("completion_code")
    text = answer.get_data(as_text=True).replace(code, "<code>") if code else answer.get_data()
    return (
        answer.status_code,
        text,
        sorted(answer.headers.items()),
        changes(before, row(app, token), started, code),
        code,
        counted,
    )


@pytest.mark.parametrize("case", CASES)
def test_the_lane_and_the_route_submit_alike(app, client, case, driver_ran, orm_statements):
    by_route = open_assignment(app, client, "by-route", case)
    by_lane = open_assignment(app, client, "by-lanes", case)
    route = submit(app, client, by_route, lane=False)
    driver_ran.clear()
    lane = submit(app, client, by_lane, lane=True, orm_statements=orm_statements)
    assert route[:4] == lane[:4], f"route {route} != lane {lane}"
    fast = CASES[case][3]
    if postgres(app):
        assert [name for name, _rows in driver_ran] == (FAST if fast else DECLINED)
        assert (lane[5] == 0) == fast
    else:  # SQLite: the route's own submit, in the lane's session
        assert driver_ran == [] and lane[5] > 0
    status, text, _headers, changed, code, _statements = lane
    if case in ("abandoned", "segments unseen"):  # the route's refusals
        assert status == 409 and changed["status"] in ("abandoned", "active")
        assert changed["submitted_at"] == changed["completion_code"] == "kept"
        return
    assert status == 200 and changed["status"] == "submitted"
    assert changed["submitted_at"] == changed["last_seen_at"] == "now"
    if case == "engaged, with a code":
        assert code == KEPT_CODE and changed["engaged_at"] == changed["completion_code"] == "kept"
    elif case == "qualifying":  # no code: the done page scores the attempt
        assert code is None and json.loads(text)["redirect_url"] is None
        return
    else:
        assert changed["engaged_at"] == "now" and changed["completion_code"] == "the answer's"
    with_url = ("completion url", "qualified, a real document")
    redirect = URL.replace("{code}", code) if case in with_url else None
    assert json.loads(text.replace("<code>", code))["redirect_url"] == redirect


def test_a_resubmit_gives_the_stored_code(app, client, driver_ran):
    token = open_assignment(app, client, "demo", "completion url")
    driver_ran.clear()
    first = client.post(f"/api/assignments/{token}/submit").get_json()
    assert [name for name, _rows in driver_ran] == (FAST if postgres(app) else [])
    stored = row(app, token)
    driver_ran.clear()
    again = client.post(f"/api/assignments/{token}/submit").get_json()
    assert again == first and first["completion_code"] in first["redirect_url"]
    assert row(app, token) == stored  # nothing written again (submitted_at kept)
    if postgres(app):
        assert [name for name, _rows in driver_ran] == DECLINED  # submitted: the route's


def test_an_unknown_token_is_the_routes_404(app, client, driver_ran):
    make_study(app, documents=[("doc-1", SEGMENTS)], suggestions="off")
    answer = client.post("/api/assignments/no-such-token/submit")
    assert answer.status_code == 404 and answer.get_json() == {
        "error": "no assignment with this token"
    }
    assert driver_ran == ([("submit_facts", 0)] if postgres(app) else [])


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_study_whose_submits_are_the_routes_costs_no_read_for_a_while(
    app, client, driver_ran, monkeypatch
):
    """Suggestions scored: the first submit's read marks the study, and the next submit of a
    token this process knows (a heartbeat cached its keys) goes straight to the route; once
    the mark is old, a read again, and a study made plain meanwhile gets the fast form."""
    make_study(app, documents=[("doc-1", SEGMENTS)], suggestions="hidden")
    tokens = []
    for worker in ("w1", "w2", "w3"):
        body = {"study": "demo", "worker_id": worker, "document": "doc-1"}
        tokens.append(client.post("/api/assignments", json=body).get_json()["token"])
        assert client.post(f"/api/assignments/{tokens[-1]}/heartbeat", json={}).status_code == 204

    def submitted(token):
        driver_ran.clear()
        answer = client.post(f"/api/assignments/{token}/submit")
        assert answer.status_code == 200 and answer.get_json()["completion_code"]
        assert row(app, token)["status"] == "submitted"
        return [name for name, _rows in driver_ran]

    assert submitted(tokens[0]) == DECLINED  # read: suggestions scored, the route's submit
    assert "suggestions" in row(app, tokens[0])["scores"]
    assert submitted(tokens[1]) == []  # the study is marked: no read
    assert "suggestions" in row(app, tokens[1])["scores"]
    with app.app_context(), session_scope() as session:
        session.scalar(select(Study)).suggestions = "off"
    monkeypatch.setattr(fast_submit, "HINT_SECONDS", 0.0)  # the mark is old
    assert submitted(tokens[2]) == FAST
    assert "suggestions" not in (row(app, tokens[2])["scores"] or {})


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("meanwhile", ["abandoned", "submitted"])
def test_the_write_refuses_a_row_no_longer_active(app, client, meanwhile):
    """A submit or an abandon committed between the fast form's read and its write: the
    write changes nothing (the guard ``status = 'active'``) and says so (None)."""
    token = open_assignment(app, client, "demo", "common")
    driver = hot_sql.driver_for(app.extensions["db_engine"])
    try:
        assignment = fast_submit.read(driver, token)
        assert assignment is not None and assignment.status == "active"
        assert assignment.study.settings == {} and assignment.platform_data == {}  # JSON read
        if meanwhile == "submitted":
            app.config["FAST_LANE"] = False  # the route's submit
            assert client.post(f"/api/assignments/{token}/submit").status_code == 200
        else:
            with app.app_context(), session_scope() as session:
                session.scalar(
                    select(Assignment).where(Assignment.token == token)
                ).status = "abandoned"
        before = row(app, token)
        assert fast_submit.write(driver, assignment) is None
    finally:
        driver.close()
    assert row(app, token) == before


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_racing_submits_of_one_token_write_once_and_give_one_code(app, driver_ran, monkeypatch):
    """Six submits of one token at once, all read before any writes: one writes, the others
    find it submitted (the guard) and get the stored code from the route's submit."""
    client = app.test_client()
    token = open_assignment(app, client, "demo", "common")
    racers = 6
    together = threading.Barrier(racers, timeout=30)
    run = Driver.run

    def after_every_read(self, name, *args, **kwargs):
        if name == "submit":
            together.wait()
        return run(self, name, *args, **kwargs)

    monkeypatch.setattr(Driver, "run", after_every_read)  # calls the recorder's
    answers: list = [None] * racers

    def racer(index: int) -> None:
        answers[index] = app.test_client().post(f"/api/assignments/{token}/submit")

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [answer.status_code for answer in answers] == [200] * racers
    codes = {answer.get_json()["completion_code"] for answer in answers}
    stored = row(app, token)
    assert codes == {stored["completion_code"]} and stored["status"] == "submitted"
    writes = [rows for name, rows in driver_ran if name == "submit"]
    assert len(writes) == racers and sorted(writes) == [0] * (racers - 1) + [1]


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    engaged=st.booleans(),
    coded=st.booleans(),
    platform=st.sampled_from(["generic", "prolific", "mturk"]),
    url=st.sampled_from([None, "", "https://example.org/c", "https://example.org/?cc={code}"]),
    questions=st.booleans(),
)
def test_the_fast_form_writes_what_the_route_writes(
    app, client, driver_ran, engaged, coded, platform, url, questions
):
    """The two forms of the plain submit (``hot_sql.SUBMIT``, ``assignments.submit``) agree,
    over the columns they read: the same answer and the same row changes."""
    slug = f"p{next(_slugs)}"
    preset = {"platform": platform}
    if engaged:
        preset["engaged_at"] = EARLIER
    if coded:
        preset["completion_code"] = KEPT_CODE
    study = {"completion_url": url}
    if questions:
        study["settings"] = QUESTIONS
    tokens = [
        open_assignment(app, client, f"{slug}-{n}", (study, preset, False, True)) for n in (0, 1)
    ]
    route = submit(app, client, tokens[0], lane=False)
    driver_ran.clear()
    lane = submit(app, client, tokens[1], lane=True)
    assert [name for name, _rows in driver_ran] == FAST
    assert route[:4] == lane[:4]
