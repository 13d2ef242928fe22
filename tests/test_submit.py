"""The one submit (app/annotation/submit.py) for every case, on SQLite and Postgres: the
answer, the row's changes, the score against the document's suggestions (hand-computed), the
change log's row; on Postgres a plain submit in two round trips (three scored), no ``BEGIN``
nor ``COMMIT``, and a submit under a rule that reads the worker's other work in one
transaction. The guarded write holds against a submit or an abandon committed between the
reads and the write, and the scored write against an add or a remove committed between the
scoring's read and the write: the submit then reads again, and answers what is true."""

from __future__ import annotations

import itertools
import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.annotation import hot_sql
from app.annotation.postgres_handle import _prepared_form
from app.db import session_scope
from app.models import Annotation, Assignment, Document, Study, Suggestion, WorkChange
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.statements import recorded, statements

SEGMENTS = ["Anna lives in Paris.", "She has a brother.", "He lives in Rome."]
EARLIER = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
KEPT_CODE = "MG-KEEPS-THIS1"
# On Postgres: a plain submit's round trips, each committed by the server as it runs (the
# facts, then the lock and the write); scored: the suggestions' read between; a submit under
# a rule reading the worker's other work, or refused, is told apart by its transaction.
PLAIN, SCORED, RULES, REFUSED = "plain", "scored", "rules", "refused"

URL = "https://example.org/done?cc={code}&x=1"
QUESTIONS = {"journey": {"after_document": [{"id": "q1", "type": "text", "prompt": "Why?"}]}}

# case -> (study changes, assignment changes, gold document, its form on Postgres)
CASES = {
    "common": ({}, {}, False, PLAIN),
    "engaged, with a code": (
        {},
        {"engaged_at": EARLIER, "completion_code": KEPT_CODE},
        False,
        PLAIN,
    ),
    "completion url": ({"completion_url": URL}, {}, False, PLAIN),
    "mturk": (
        {"completion_url": URL},
        {"platform": "mturk", "platform_data": {"assignment_id": "A1", "hit_id": "H1"}},
        False,
        PLAIN,
    ),
    "questions": ({"completion_url": URL, "settings": QUESTIONS}, {}, False, PLAIN),
    "suggestions hidden": ({"suggestions": "hidden"}, {}, False, SCORED),
    "suggestions shown": (
        {"suggestions": "shown", "completion_url": URL},
        {"scores": {"attention": {"kept": 1}}},
        False,
        SCORED,
    ),
    "suggestions, none on the document": ({"suggestions": "hidden"}, {}, False, SCORED),
    "pause rule": ({"settings": {"pause": {"after": 1}}}, {}, False, RULES),
    "qualifying": ({"settings": {"qualification": {"min_f1": 0.5}}}, {}, True, RULES),
    "qualified, a real document": (
        {"settings": {"qualification": {"min_f1": 0.5}}, "completion_url": URL},
        {},
        False,
        PLAIN,
    ),
    "segments unseen": ({"settings": {"require_all_segments_seen": True}}, {}, False, REFUSED),
    "abandoned": ({}, {"status": "abandoned"}, False, REFUSED),
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


def submit(app, client, token: str):
    """Submit ``token``: (status, body with its code named, headers, the row's changes, the
    code, the query strings the database received)."""
    before, started = row(app, token), datetime.now(UTC)
    logged = work_changes(app)
    with recorded(app) as sent:
        answer = client.post(f"/api/assignments/{token}/submit", base_url="https://localhost")
    body = answer.get_json()
    code = body.get("completion_code")
    text = answer.get_data(as_text=True).replace(code, "<code>") if code else answer.get_data()
    changed = changes(before, row(app, token), started, code)
    changed["work_changes"] = work_changes(app)[len(logged) :]  # for the served report
    return (answer.status_code, text, sorted(answer.headers.items()), changed, code, sent)


def form(sent: list[str]) -> str:
    """How a submit reached Postgres (see PLAIN, SCORED, RULES, REFUSED)."""
    begun = any(query.split("; ")[0] == "BEGIN" or "; BEGIN" in query for query in sent)
    if not begun:
        assert not any("COMMIT" in query for query in sent), sent
        return {1: REFUSED, 2: PLAIN, 3: SCORED}.get(len(sent), f"{len(sent)} round trips")
    ended = sent[-1].endswith("COMMIT") and "EXECUTE" in " ".join(sent[1:])
    return RULES if ended else REFUSED


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
def test_every_submit_case(app, client, case):
    """One worker of a study set up as ``case`` submits; what is stored and answered."""
    token = open_assignment(app, client, "demo", case)
    status, text, headers, changed, code, sent = submit(app, client, token)
    if postgres(app):
        expected = CASES[case][3]
        scores_off = CASES[case][0].get("suggestions", "off") == "off"
        if expected == PLAIN and not scores_off:
            expected = SCORED
        assert form(sent) == expected, sent
    assert dict(headers)["Cache-Control"] == "no-store"
    assert dict(headers)["Strict-Transport-Security"].startswith("max-age=")
    if case in ("abandoned", "segments unseen"):  # refused
        assert status == 409 and changed["status"] in ("abandoned", "active")
        assert changed["submitted_at"] == changed["completion_code"] == "kept"
        assert changed["work_changes"] == []
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
    elif case == "questions":  # no code before the required answers (the done page asks)
        assert code is None and changed["completion_code"] == "kept"
        assert json.loads(text)["redirect_url"] is None
        return
    else:  # engaged by the submit, or before by the marks
        engaged = "kept" if case in WITH_SUGGESTIONS else "now"
        assert changed["engaged_at"] == engaged and changed["completion_code"] == "the answer's"
    with_url = ("completion url", "qualified, a real document", "suggestions shown")
    redirect = URL.replace("{code}", code) if case in with_url else None
    assert json.loads(text.replace("<code>", code))["redirect_url"] == redirect


def test_a_resubmit_gives_the_stored_code_and_writes_nothing(app, client):
    token = open_assignment(app, client, "demo", "completion url")
    first = client.post(f"/api/assignments/{token}/submit").get_json()
    stored = row(app, token)
    with recorded(app) as sent:
        again = client.post(f"/api/assignments/{token}/submit").get_json()
    assert again == first and first["completion_code"] in first["redirect_url"]
    assert row(app, token) == stored  # nothing written again (submitted_at kept)
    assert len(statements(sent)) == 1  # the facts' read, answered


def test_an_unknown_token_is_a_404_read_once(app, client):
    make_study(app, documents=[("doc-1", SEGMENTS)], suggestions="off")
    with recorded(app) as sent:
        answer = client.post("/api/assignments/no-such-token/submit")
    assert answer.status_code == 404 and answer.get_json() == {
        "error": "no assignment with this token"
    }
    assert len(statements(sent)) == 1


class Meanwhile:
    """Runs ``change`` once, just before the database receives the statement ``target`` (a
    change another request commits between the submit's reads and its write)."""

    def __init__(self, app, target, change) -> None:
        self.app, self.change, self.done = app, change, False
        self.marker = _prepared_form(target)[0]

    def __call__(self, sent_query: str) -> None:
        if not self.done and self.marker in sent_query:
            self.done = True
            self.change()


def before_the_write(app, target, change):
    """A cursor class that calls ``change`` before sending ``target`` (Postgres, prepared);
    the hook's ``sent``: every query string sent meanwhile."""
    import psycopg2.extensions
    from sqlalchemy import event as sa_event

    hook = Meanwhile(app, target, change)
    hook.sent = []

    class Intercepting(psycopg2.extensions.cursor):
        def execute(self, query, params=None):
            text = query if isinstance(query, str) else query.decode()
            hook(text)
            hook.sent.append(text)
            return super().execute(query, params)

    def install(dbapi_connection, _record, _proxy) -> None:
        dbapi_connection.cursor_factory = Intercepting

    sa_event.listen(app.extensions["db_engine"], "checkout", install)
    return hook


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("meanwhile", ["abandoned", "submitted"])
@pytest.mark.parametrize("case", ["common", "suggestions hidden"])
def test_a_row_no_longer_active_at_the_write_is_read_again(app, client, meanwhile, case):
    """A submit or an abandon committed between the submit's reads and its write: the write
    changes nothing (the guard ``status = 'active'``), the submit reads again and answers
    what is true: the other submit's code, or the refusal."""
    token = open_assignment(app, client, "demo", case)
    other_code = "MG-OTHER-SUBMT"

    def change() -> None:
        with app.app_context(), session_scope() as session:
            assignment = session.scalar(select(Assignment).where(Assignment.token == token))
            assignment.status = meanwhile
            if meanwhile == "submitted":
                assignment.completion_code = other_code

    write = hot_sql.submit_statements("postgresql", case != "common")[1]
    hook = before_the_write(app, write, change)
    logged = work_changes(app)
    answer = client.post(f"/api/assignments/{token}/submit")
    assert hook.done
    if meanwhile == "submitted":
        assert answer.status_code == 200 and answer.get_json()["completion_code"] == other_code
    else:
        assert answer.status_code == 409 and "abandoned" in answer.get_json()["error"]
    assert row(app, token)["status"] == meanwhile
    assert work_changes(app)[len(logged) :] == (
        ["assignment submitted"] if meanwhile == "submitted" else ["assignment abandoned"]
    )  # the other request's (the ORM's flush), none of this submit's


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("meanwhile", ["added", "removed"])
def test_marks_changed_after_the_scoring_are_scored_again(app, client, meanwhile):
    """A mark added or removed (committed) between the scoring's read and the scored write:
    the write changes nothing (the guard on ``MARK_CHANGES``) and the submit scores the marks
    as they are: "brother" caught by a late RefE mark, or "Anna" missed once its mark is
    removed."""
    token = open_assignment(app, client, "demo", "suggestions hidden")

    def change() -> None:
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

    hook = before_the_write(app, hot_sql.submit_statements("postgresql", True)[1], change)
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 200 and hook.done
    # facts, spans, the write (nothing written); again: facts, spans, the write (the change's
    # own statements, through the ORM, are not prepared)
    assert len([query for query in hook.sent if "EXECUTE marginalia_" in query]) == 6
    stored = row(app, token)
    assert stored["status"] == "submitted"
    assert stored["completion_code"] == answer.get_json()["completion_code"]
    score = stored["scores"]["suggestions"]
    assert (score["caught"], score["total"]) == ((3, 4) if meanwhile == "added" else (1, 4))


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("case", ["common", "suggestions hidden"])
def test_racing_submits_of_one_token_write_once_and_give_one_code(app, case):
    """Six submits of one token at once, all read (and scored) before any writes: one writes,
    the others find it submitted (the guard), read again and answer the stored code."""
    import psycopg2.extensions
    from sqlalchemy import event as sa_event

    client = app.test_client()
    token = open_assignment(app, client, "demo", case)
    racers = 6
    together = threading.Barrier(racers, timeout=30)
    marker = _prepared_form(hot_sql.submit_statements("postgresql", case != "common")[1])[0]
    waited = threading.local()

    class Gathering(psycopg2.extensions.cursor):
        def execute(self, query, params=None):
            text = query if isinstance(query, str) else query.decode()
            if marker in text and not getattr(waited, "done", False):
                waited.done = True
                together.wait()
            return super().execute(query, params)

    def install(dbapi_connection, _record, _proxy) -> None:
        dbapi_connection.cursor_factory = Gathering

    sa_event.listen(app.extensions["db_engine"], "checkout", install)
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
    if case != "common":
        assert stored["scores"]["suggestions"]["caught"] == 2
    assert work_changes(app).count("assignment submitted") == 1  # logged once


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
def test_a_plain_submit_answers_and_stores_by_its_rules(
    app, client, engaged, coded, platform, url, questions, suggestions, suggested, marks
):
    """Over the columns a plain submit reads: the code kept or new (none while a required
    question is pending), where the browser goes (the completion URL with the code, none for
    MTurk or when questions come first), the
    score present exactly when the study scores suggestions, its counts those of the
    document's suggestions, the row submitted and engaged, one change logged; a resubmit
    answers the same."""
    slug = f"p{next(_slugs)}"
    preset = {"platform": platform}
    if engaged:
        preset["engaged_at"] = EARLIER
    if coded:
        preset["completion_code"] = KEPT_CODE
    study = {"completion_url": url, "suggestions": suggestions}
    if questions:
        study["settings"] = QUESTIONS
    [token] = open_assignments(app, client, slug, (study, preset, False, None))
    if suggested:
        suggest(app, token)
    for number, place in enumerate(marks):
        add_mark(client, token, *place, f"c{number}")
    status, text, _headers, changed, code, _sent = submit(app, client, token)
    assert status == 200
    assert changed["status"] == "submitted" and changed["submitted_at"] == "now"
    if coded:
        assert code == KEPT_CODE
    elif questions:  # a required question pending: no code yet (the done page asks first)
        assert code is None
    else:
        assert hot_sql is not None and code.startswith("MG-")
    if engaged:
        assert changed["engaged_at"] == "kept"
    answer = json.loads(text.replace("<code>", code) if code else text)
    expected = None
    if url and platform != "mturk" and not questions:
        expected = url.replace("{code}", code)
    assert answer["redirect_url"] == expected
    scored = (changed["scores"] if changed["scores"] != "kept" else None) or {}
    assert ("suggestions" in scored) == (suggestions != "off")
    if suggestions != "off":
        total = len({(s[0], s[1], s[2]) for s in SUGGESTED}) if suggested else 0
        assert scored["suggestions"]["total"] == total
    assert changed["work_changes"] == ["assignment submitted"]
    again = client.post(f"/api/assignments/{token}/submit")
    assert again.get_json() == answer
