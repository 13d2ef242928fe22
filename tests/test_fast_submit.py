"""Issue 31: the common submit in two or three round trips on Postgres
(app/annotation/fast_submit.py, answered by the fast lane). With the lane on and off, the same
submits must give the same statuses, bodies and headers and leave the same rows (the scores
against the document's suggestions compared exactly), on SQLite and Postgres; on Postgres the
common ones must take the fast form (its driver statements, nothing through SQLAlchemy) and
every other one the route's own submit; the guard ``status = 'active'`` must hold against a
submit or an abandon committed between the read and the write, and the scored write's guard
against an add or a remove committed between the scoring's read and the write."""

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
from app.models import Annotation, Assignment, Document, Study, Suggestion, WorkChange
from tests.conftest import BACKENDS, make_database_url, make_study

SEGMENTS = ["Anna lives in Paris.", "She has a brother.", "He lives in Rome."]
EARLIER = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
KEPT_CODE = "MG-KEEPS-THIS1"
FAST = ["submit_facts", "submit"]  # the fast form's round trips, by statement name
SCORED = ["submit_facts", "submit_spans", "submit_scored"]  # ... scoring the suggestions
DECLINED = ["submit_facts"]  # read, not the common submit: the route's own ran

URL = "https://example.org/done?cc={code}&x=1"
QUESTIONS = {"journey": {"after_document": [{"id": "q1", "type": "text", "prompt": "Why?"}]}}

# case -> (study changes, assignment changes, gold document, the fast form on Postgres)
CASES = {
    "common": ({}, {}, False, FAST),
    "engaged, with a code": (
        {},
        {"engaged_at": EARLIER, "completion_code": KEPT_CODE},
        False,
        FAST,
    ),
    "completion url": ({"completion_url": URL}, {}, False, FAST),
    "mturk": (
        {"completion_url": URL},
        {"platform": "mturk", "platform_data": {"assignment_id": "A1", "hit_id": "H1"}},
        False,
        FAST,
    ),
    "questions": ({"completion_url": URL, "settings": QUESTIONS}, {}, False, FAST),
    "suggestions hidden": ({"suggestions": "hidden"}, {}, False, SCORED),
    "suggestions shown": (
        {"suggestions": "shown", "completion_url": URL},
        {"scores": {"attention": {"kept": 1}}},
        False,
        SCORED,
    ),
    "suggestions, none on the document": ({"suggestions": "hidden"}, {}, False, SCORED),
    "pause rule": ({"settings": {"pause": {"after": 1}}}, {}, False, DECLINED),
    "qualifying": ({"settings": {"qualification": {"min_f1": 0.5}}}, {}, True, DECLINED),
    "qualified, a real document": (
        {"settings": {"qualification": {"min_f1": 0.5}}, "completion_url": URL},
        {},
        False,
        FAST,
    ),
    "segments unseen": ({"settings": {"require_all_segments_seen": True}}, {}, False, DECLINED),
    "abandoned": ({}, {"status": "abandoned"}, False, DECLINED),
}
# The document's suggestions where a case has some (segment, text, category, detector): two
# caught (SceneE is whole-sentence in SNaC's taxonomy: "Rome" catches "lives in"), two missed,
# one repeated by a second detector (counted once).
SUGGESTED = [
    (0, "Anna", "CharE", "test"),
    (0, "Paris", "RefE", "test"),
    (0, "Paris", "RefE", "other"),
    (1, "brother", "RefE", "test"),
    (2, "lives in", "SceneE", "test"),
]
# Each worker's marks (segment, text, category), the last one removed again.
MARKS = [(0, "Anna", "CharE"), (2, "Rome", "SceneE"), (1, "brother", "CharE")]
REMOVED = (1, "brother", "RefE")
WITH_SUGGESTIONS = ("suggestions hidden", "suggestions shown", "pause rule")
# The property test's marks to draw from: at the suggestions' places or near them.
CANDIDATE_MARKS = [
    *MARKS,
    REMOVED,
    (0, "Paris", "RefE"),
    (0, "lives", "RefE"),
    (2, "lives in", "SceneE"),
    (2, "He", "CharE"),
]
_slugs = itertools.count()


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def driver_ran(monkeypatch):
    """The driver's statements by name (a lock and its write: the write's), each with the
    rows it returned (the real driver runs them: only recorded here)."""
    ran: list[tuple[str, int]] = []
    run, claim_and_run = Driver.run, Driver.claim_and_run

    def recorded(self, name, *args, **kwargs):
        result = run(self, name, *args, **kwargs)
        ran.append((name, len(result.rows)))
        return result

    def recorded_pair(self, claim, write, *args, **kwargs):
        result = claim_and_run(self, claim, write, *args, **kwargs)
        ran.append((write[0], len(result.rows)))
        return result

    monkeypatch.setattr(Driver, "run", recorded)
    monkeypatch.setattr(Driver, "claim_and_run", recorded_pair)
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


def open_assignments(app, client, slug: str, case: str | tuple, workers=("w1",)) -> list[str]:
    """A study ``slug`` set up as ``case`` says (a name in CASES, or such a tuple), and the
    tokens of its ``workers``' assignments to its one document. In the cases of
    WITH_SUGGESTIONS the document has SUGGESTED and each worker has made MARKS."""
    study_changes, assignment_changes, gold, _fast = CASES[case] if isinstance(case, str) else case
    make_study(app, slug, documents=[("doc-1", SEGMENTS)], suggestions="off")
    tokens = []
    for worker in workers:
        body = {"study": slug, "worker_id": worker, "document": "doc-1"}
        opened = client.post("/api/assignments", json=body)
        assert opened.status_code == 201, opened.get_json()
        tokens.append(opened.get_json()["token"])
    if case in WITH_SUGGESTIONS:
        suggest(app, tokens[0])
        for token in tokens:
            mark(client, token)
    with app.app_context(), session_scope() as session:
        for token in tokens:
            assignment = session.scalar(select(Assignment).where(Assignment.token == token))
            for name, value in assignment_changes.items():
                setattr(assignment, name, value)
        study = session.get(Study, assignment.study_id)
        for name, value in study_changes.items():
            setattr(study, name, value)
        session.get(Document, assignment.document_id).is_gold = gold
    return tokens


def open_assignment(app, client, slug: str, case: str | tuple) -> str:
    return open_assignments(app, client, slug, case)[0]


def located(segment: int, text: str) -> tuple[int, int]:
    start = SEGMENTS[segment].index(text)
    return start, start + len(text)


def suggest(app, token: str) -> None:
    """SUGGESTED, on the document of ``token``'s assignment."""
    with app.app_context(), session_scope() as session:
        document_id = session.scalar(
            select(Assignment.document_id).where(Assignment.token == token)
        )
        for segment, text, category, detector in SUGGESTED:
            start, end = located(segment, text)
            session.add(
                Suggestion(
                    document_id=document_id,
                    segment=segment,
                    start=start,
                    end=end,
                    text=text,
                    category=category,
                    score=0.9,
                    detector=detector,
                    detector_version="1",
                )
            )


def add_mark(client, token: str, segment: int, text: str, category: str, client_id: str) -> int:
    start, end = located(segment, text)
    body = {"segment": segment, "start": start, "end": end, "text": text, "category": category}
    answer = client.post(
        f"/api/assignments/{token}/annotations", json={**body, "client_id": client_id}
    )
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()["id"]


def mark(client, token: str) -> None:
    """MARKS, and REMOVED marked and removed again."""
    for number, (segment, text, category) in enumerate(MARKS):
        add_mark(client, token, segment, text, category, f"c{number}")
    removed = add_mark(client, token, *REMOVED, "gone")
    assert client.delete(f"/api/assignments/{token}/annotations/{removed}").status_code == 204


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
    logged = work_changes(app)
    counted = orm_statements[0] if orm_statements else 0
    answer = client.post(f"/api/assignments/{token}/submit", base_url="https://localhost")
    counted = (orm_statements[0] if orm_statements else 0) - counted  # the submit's own
    body = answer.get_json()
    code = body.get("completion_code")
    text = answer.get_data(as_text=True).replace(code, "<code>") if code else answer.get_data()
    changed = changes(before, row(app, token), started, code)
    changed["work_changes"] = work_changes(app)[len(logged) :]  # for the served report
    return (answer.status_code, text, sorted(answer.headers.items()), changed, code, counted)


def work_changes(app) -> list[str]:
    """The change log's reasons, in order (app/models/changes.py)."""
    with app.app_context(), session_scope() as session:
        return list(session.scalars(select(WorkChange.reason).order_by(WorkChange.id)))


def hand_computed(missed_refs: list[int]) -> dict:
    """The score of MARKS over SUGGESTED: "Anna" caught, "lives in" caught by "Rome" (same
    sentence, SceneE), "Paris" (twice, counted once) and "brother" (marked as CharE; its RefE
    mark removed) missed."""

    def missed(segment, text, ref):
        start, end = located(segment, text)
        place = {"document": "doc-1", "segment": segment, "start": start, "end": end}
        return {**place, "category": "RefE", "source": "test", "text": text, "ref": ref}

    return {
        "recall": 0.5,
        "caught": 2,
        "total": 4,
        "per_category": {
            "CharE": {"recall": 1.0, "caught": 1, "total": 1},
            "RefE": {"recall": 0.0, "caught": 0, "total": 2},
            "SceneE": {"recall": 1.0, "caught": 1, "total": 1},
        },
        "missed": [
            {**missed(0, "Paris", missed_refs[0]), "score": None},
            {**missed(1, "brother", missed_refs[1]), "score": None},
        ],
        "detector": ["other", "test"],
    }


@pytest.mark.parametrize("case", CASES)
def test_the_lane_and_the_route_submit_alike(app, client, case, driver_ran, orm_statements):
    """Two workers of one study and document, with the same marks: one submits through the
    route, the other through the lane."""
    by_route, by_lane = open_assignments(app, client, "pair", case, workers=("w1", "w2"))
    route = submit(app, client, by_route, lane=False)
    driver_ran.clear()
    lane = submit(app, client, by_lane, lane=True, orm_statements=orm_statements)
    assert route[:4] == lane[:4], f"route {route} != lane {lane}"
    fast = CASES[case][3]
    if postgres(app):
        assert [name for name, _rows in driver_ran] == fast
        assert (lane[5] == 0) == (fast != DECLINED)
    else:  # SQLite: the route's own submit, in the lane's session
        assert driver_ran == [] and lane[5] > 0
    status, text, _headers, changed, code, _statements = lane
    if case in ("abandoned", "segments unseen"):  # the route's refusals
        assert status == 409 and changed["status"] in ("abandoned", "active")
        assert changed["submitted_at"] == changed["completion_code"] == "kept"
        return
    assert status == 200 and changed["status"] == "submitted"
    assert changed["submitted_at"] == changed["last_seen_at"] == "now"
    if case != "qualifying":  # (its screen-out check may log too)
        assert changed["work_changes"] == ["assignment submitted"]
    scored = changed["scores"] if changed["scores"] != "kept" else {}
    assert ("suggestions" in scored) == (CASES[case][0].get("suggestions", "off") != "off")
    if case in ("suggestions hidden", "suggestions shown"):
        with app.app_context(), session_scope() as session:
            missed = select(Suggestion.id).where(
                Suggestion.detector == "test", Suggestion.text.in_(["Paris", "brother"])
            )
            refs = session.scalars(missed.order_by(Suggestion.id)).all()
        scores = dict(changed["scores"])
        assert scores.pop("suggestions") == hand_computed(refs)
        assert scores == CASES[case][1].get("scores", {})  # the row's other scores kept
    elif case == "suggestions, none on the document":
        assert changed["scores"]["suggestions"] == {
            "recall": None,
            "caught": 0,
            "total": 0,
            "per_category": {},
            "missed": [],
            "detector": [],
        }
    if case == "engaged, with a code":
        assert code == KEPT_CODE and changed["engaged_at"] == changed["completion_code"] == "kept"
    elif case == "qualifying":  # no code: the done page scores the attempt
        assert code is None and json.loads(text)["redirect_url"] is None
        return
    else:  # engaged by the submit, or before by the marks
        engaged = "kept" if case in WITH_SUGGESTIONS else "now"
        assert changed["engaged_at"] == engaged and changed["completion_code"] == "the answer's"
    with_url = ("completion url", "qualified, a real document", "suggestions shown")
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
    """A pause rule: the first submit's read marks the study, and the next submit of a token
    this process knows (a heartbeat cached its keys) goes straight to the route; once the
    mark is old, a read again, and a study made plain meanwhile gets the fast form (scoring
    the suggestions: the study's default)."""
    make_study(app, documents=[("doc-1", SEGMENTS)], suggestions="hidden")
    with app.app_context(), session_scope() as session:
        session.scalar(select(Study)).settings = {"pause": {"after": 5}}
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
        assert "suggestions" in row(app, token)["scores"]
        return [name for name, _rows in driver_ran]

    assert submitted(tokens[0]) == DECLINED  # read: a pause rule, the route's submit
    assert submitted(tokens[1]) == []  # the study is marked: no read
    with app.app_context(), session_scope() as session:
        session.scalar(select(Study)).settings = {}
    monkeypatch.setattr(fast_submit, "HINT_SECONDS", 0.0)  # the mark is old
    assert submitted(tokens[2]) == SCORED


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("meanwhile", ["abandoned", "submitted"])
@pytest.mark.parametrize("case", ["common", "suggestions hidden"])
def test_the_write_refuses_a_row_no_longer_active(app, client, meanwhile, case):
    """A submit or an abandon committed between the fast form's reads and its write: the
    write changes nothing (the guard ``status = 'active'``) and says so (None)."""
    token = open_assignment(app, client, "demo", case)
    driver = hot_sql.driver_for(app.extensions["db_engine"])
    try:
        assignment = fast_submit.read(driver, token)
        assert assignment is not None and assignment.status == "active"
        assert assignment.study.settings == {} and assignment.platform_data == {}  # JSON read
        scored = fast_submit.score(driver, assignment) if case != "common" else None
        assert scored is None or scored.score["total"] == 4
        if meanwhile == "submitted":
            app.config["FAST_LANE"] = False  # the route's submit
            assert client.post(f"/api/assignments/{token}/submit").status_code == 200
        else:
            with app.app_context(), session_scope() as session:
                session.scalar(
                    select(Assignment).where(Assignment.token == token)
                ).status = "abandoned"
        before = row(app, token)
        assert fast_submit.write(driver, assignment, scored) is None
    finally:
        driver.close()
    assert row(app, token) == before


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("meanwhile", ["added", "removed"])
def test_marks_changed_after_the_scoring_send_the_submit_to_the_route(
    app, client, driver_ran, monkeypatch, meanwhile
):
    """A mark added or removed (committed) between the scoring's read and the scored write:
    the write changes nothing (the guard on ``MARK_CHANGES``) and the route's submit scores
    the marks as they are: "brother" caught by a late RefE mark, or "Anna" missed once its
    mark is removed."""
    token = open_assignment(app, client, "demo", "suggestions hidden")
    claim_and_run = Driver.claim_and_run  # the recorder's

    def change_first(self, claim, write, *args, **kwargs):
        if write[0] == "submit_scored":
            with app.app_context(), session_scope() as session:
                assignment = session.scalar(select(Assignment).where(Assignment.token == token))
                if meanwhile == "added":
                    start, end = located(1, "brother")
                    session.add(
                        Annotation(
                            assignment_id=assignment.id,
                            segment=1,
                            start=start,
                            end=end,
                            text="brother",
                            category="RefE",
                            client_id="late",
                            created_at=EARLIER,
                        )
                    )
                else:
                    first = session.scalar(
                        select(Annotation)
                        .where(Annotation.assignment_id == assignment.id)
                        .order_by(Annotation.id)
                    )
                    first.removed_at = EARLIER
        return claim_and_run(self, claim, write, *args, **kwargs)

    monkeypatch.setattr(Driver, "claim_and_run", change_first)
    driver_ran.clear()
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 200
    assert driver_ran == [("submit_facts", 1), ("submit_spans", 9), ("submit_scored", 0)]
    stored = row(app, token)
    assert stored["status"] == "submitted"
    assert stored["completion_code"] == answer.get_json()["completion_code"]
    score = stored["scores"]["suggestions"]
    assert (score["caught"], score["total"]) == ((3, 4) if meanwhile == "added" else (1, 4))


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("case", ["common", "suggestions hidden"])
def test_racing_submits_of_one_token_write_once_and_give_one_code(
    app, driver_ran, monkeypatch, case
):
    """Six submits of one token at once, all read (and scored) before any writes: one writes,
    the others find it submitted (the guard) and get the stored code from the route's
    submit."""
    client = app.test_client()
    token = open_assignment(app, client, "demo", case)
    racers = 6
    together = threading.Barrier(racers, timeout=30)
    claim_and_run = Driver.claim_and_run  # the recorder's

    def after_every_read(self, claim, write, *args, **kwargs):
        if write[0] in ("submit", "submit_scored"):
            together.wait()
        return claim_and_run(self, claim, write, *args, **kwargs)

    monkeypatch.setattr(Driver, "claim_and_run", after_every_read)
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
    write = FAST[-1] if case == "common" else SCORED[-1]
    writes = [rows for name, rows in driver_ran if name == write]
    assert len(writes) == racers and sorted(writes) == [0] * (racers - 1) + [1]
    if case != "common":
        assert stored["scores"]["suggestions"]["caught"] == 2
    assert work_changes(app).count("assignment submitted") == 1  # logged once


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
    suggestions=st.sampled_from(["off", "hidden", "shown"]),
    suggested=st.booleans(),
    marks=st.lists(st.sampled_from(CANDIDATE_MARKS), unique=True, max_size=4),
)
def test_the_fast_form_writes_what_the_route_writes(
    app, client, driver_ran, engaged, coded, platform, url, questions, suggestions, suggested, marks
):
    """The two forms of the common submit (``hot_sql.SUBMIT`` or, scoring the suggestions,
    ``SUBMIT_SCORED``; ``assignments.submit``) agree, over the columns they read: the same
    answer and the same row changes, the score included (two workers of one document with
    the same marks)."""
    slug = f"p{next(_slugs)}"
    preset = {"platform": platform}
    if engaged:
        preset["engaged_at"] = EARLIER
    if coded:
        preset["completion_code"] = KEPT_CODE
    study = {"completion_url": url, "suggestions": suggestions}
    if questions:
        study["settings"] = QUESTIONS
    case = (study, preset, False, None)
    tokens = open_assignments(app, client, slug, case, workers=("w1", "w2"))
    if suggested:
        suggest(app, tokens[0])
    for token in tokens:
        for number, place in enumerate(marks):
            add_mark(client, token, *place, f"c{number}")
    route = submit(app, client, tokens[0], lane=False)
    driver_ran.clear()
    lane = submit(app, client, tokens[1], lane=True)
    assert [name for name, _rows in driver_ran] == (FAST if suggestions == "off" else SCORED)
    assert route[:4] == lane[:4]
