"""Numbers nobody meant, wherever a number is read: a worker's JSON body, path and form, a
researcher's form, query, JSON body, command and file. A number of 400 digits, NaN, an
infinity, a float where a whole number goes, a digit of another script ("²" passes
``str.isdigit`` and fails ``int``), a value past its column: a 400 naming the field (a 404 for
an id in a path, as any unknown id; one line and exit status 1 from the command), never a
500, and nothing stored. Each test is named for the attack it replays; SQLite and Postgres.
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.annotation import timing
from app.db import session_scope
from app.models import Assignment, Document, SegmentTime, Suggestion
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import api_add, cli_in_process, db_snapshot, open_token
from tests.test_attributes import BASE, TEXTS
from tests.test_researcher_isolation import ADA, create_researcher, csrf, logged_in

EXAMPLES = int(os.environ.get("MARGINALIA_FUZZ_EXAMPLES", "40"))
FOUR_HUNDRED_DIGITS = 10**399  # 1 and 399 zeros: the probe's "1000…(400 digits)"


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def worker(app, client, tmp_path):
    """A worker on a document with a shown suggestion, one mark of theirs (to edit), on a
    taxonomy with a scale attribute and a relation category; the token and the ids."""
    path = tmp_path / "t.yaml"
    path.write_text(BASE, encoding="utf-8")
    make_study(app, taxonomy=str(path), documents=[("doc-1", TEXTS)], suggestions="shown")
    with app.app_context(), session_scope() as session:
        document = session.scalar(select(Document))
        suggestion = Suggestion(
            document_id=document.id,
            segment=0,
            start=0,
            end=3,
            text="Ann",
            category="lang",
            score=0.9,
            detector="test",
            detector_version="1",
        )
        session.add(suggestion)
        session.flush()
        suggestion_id = suggestion.id
    token = open_token(client)
    mark = api_add(client, token, {**ADD, "client_id": "first"})
    assert mark.status_code == 201, mark.get_json()
    app.config["PROPAGATE_EXCEPTIONS"] = False  # a 500 as a browser would see it
    return {"token": token, "mark": mark.get_json()["id"], "suggestion": suggestion_id}


ARRIVAL = "/api/assignments"  # no token: POST /api/assignments
ADD = {"segment": 0, "start": 12, "end": 20, "text": "Bo left.", "category": "lang"}
SCALED = {
    **ADD,
    "category": "omit",
    "client_id": "scaled",
    "attributes": {"severity": "minor", "confidence": 3},
}
RELATED = {
    **ADD,
    "category": "link",
    "client_id": "related",
    "paired": {"segment": 0, "start": 0, "end": 3, "text": "Ann"},
}
# every number of every worker body: (path, JSON body, the place of the number in it)
FIELDS = {
    "add.segment": ("annotations", ADD, ("segment",)),
    "add.start": ("annotations", ADD, ("start",)),
    "add.end": ("annotations", ADD, ("end",)),
    "add.suggestion_id": ("annotations", ADD, ("suggestion_id",)),
    "add.paired.segment": ("annotations", RELATED, ("paired", "segment")),
    "add.paired.start": ("annotations", RELATED, ("paired", "start")),
    "add.paired.end": ("annotations", RELATED, ("paired", "end")),
    "add.paired.end_segment": ("annotations", RELATED, ("paired", "end_segment")),
    "add.attributes.confidence": ("annotations", SCALED, ("attributes", "confidence")),
    "edit.attributes.confidence": (
        "annotations/{mark}/edit",
        {"category": "omit", "attributes": {"severity": "minor"}, "client_id": "edit"},
        ("attributes", "confidence"),
    ),
    "position.segment": ("position", {"segment": 0}, ("segment",)),
    "position.active": ("position", {"segment": 0, "active": {"0": 1}}, ("active", "0")),
    "position.events": (
        "position",
        {"segment": 0, "events": {"shown": [1]}},
        ("events", "shown", 0),
    ),
    "events.suggestions": (
        "suggestions/events",
        {"event": "shown", "suggestions": [1]},
        ("suggestions", 0),
    ),
    "arrival.document": (ARRIVAL, {"study": "demo", "worker_id": "w2"}, ("document",)),
}
NUMBERS = st.one_of(
    st.sampled_from(
        [
            FOUR_HUNDRED_DIGITS,
            -FOUR_HUNDRED_DIGITS,
            2**63,
            -(2**63) - 1,
            2**31,
            -1,
            0.5,
            1.0,
            -0.0,
            1e308,
            math.nan,
            math.inf,
            -math.inf,
            "1",
            "²",
            "١",
            "1e400",
            "NaN",
        ]
    ),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
)


def with_number(body: dict, place: tuple, value) -> dict:
    """A copy of ``body`` with ``value`` at ``place`` (keys, then a list index)."""
    copy = json.loads(json.dumps(body))
    holder = copy
    for key in place[:-1]:
        holder = holder.setdefault(key, {}) if isinstance(key, str) else holder[key]
    holder[place[-1]] = value
    return copy


def post_json(client, url: str, body) -> object:
    """``body`` as Python's json writes it: NaN and Infinity as their bare words, and integers
    of every digit, as a hostile client sends them."""
    return client.post(url, data=json.dumps(body), content_type="application/json")


def stored_seconds(app) -> list[tuple[datetime, float]]:
    """Each assignment's opening and its stored active seconds in all."""
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(Assignment.created_at, SegmentTime.active_seconds).join(
                SegmentTime, SegmentTime.assignment_id == Assignment.id
            )
        ).all()
    totals: dict[datetime, float] = {}
    for opened, seconds in rows:
        totals[opened] = totals.get(opened, 0.0) + seconds
    return list(totals.items())


def test_the_probes_400_digit_active_seconds_are_a_400_naming_the_field(app, client, worker):
    """``POST …/position {"segment":0,"active":{"0":1000…(400 digits)}}`` was a 500
    (OverflowError in ``parse_active``): now a 400 naming ``active.0``, nothing stored."""
    before = db_snapshot(app)
    url = f"/api/assignments/{worker['token']}/position"
    raw = '{"segment":0,"active":{"0":1' + "0" * 399 + "}}"
    answer = client.post(url, data=raw, content_type="application/json")
    assert answer.status_code == 400, answer.get_data()
    assert "active.0" in answer.get_json()["error"]
    assert db_snapshot(app) == before


@pytest.mark.parametrize("key", ["²", "١", "0x1", "-0", " 1"])
def test_a_segment_index_in_other_digits_is_a_400(app, client, worker, key):
    """``"²".isdigit()`` is true and ``int("²")`` raised ValueError (a 500); ``"١"`` (an
    Arabic-Indic one) was read as segment 1. An index is ASCII digits."""
    before = db_snapshot(app)
    url = f"/api/assignments/{worker['token']}/position"
    answer = client.post(url, json={"segment": 0, "active": {key: 1}})
    assert answer.status_code == 400 and "active" in answer.get_json()["error"]
    assert db_snapshot(app) == before


@pytest.mark.parametrize(
    "method, path",
    [
        ("DELETE", "annotations/{}"),
        ("POST", "annotations/{}/edit"),
        ("POST", "practice/{}"),
        ("POST", "suggestions/{}/events"),
    ],
)
def test_a_5000_digit_id_in_a_path_is_the_404_of_an_unknown_id(app, client, worker, method, path):
    """A path's number of more digits than ``int`` reads (4,300) raised ValueError in the
    worker API's entry itself, before any answer: now the answer of an id nobody has."""
    before = db_snapshot(app)
    base = f"/api/assignments/{worker['token']}/"
    body = {"event": "shown"} if "suggestions" in path else {"comment": "x", "client_id": "c"}
    huge = client.open(base + path.format("9" * 5000), method=method, json=body)
    unknown = client.open(base + path.format("2147483648"), method=method, json=body)
    assert huge.status_code == unknown.status_code == 404
    assert huge.get_json() == unknown.get_json()
    assert db_snapshot(app) == before


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(field=st.sampled_from(sorted(FIELDS)), value=NUMBERS)
@example(field="position.active", value=FOUR_HUNDRED_DIGITS)  # the probe's request
@example(field="position.active", value=math.nan)
@example(field="position.active", value=1e308)
@example(field="add.attributes.confidence", value=FOUR_HUNDRED_DIGITS)
@example(field="add.attributes.confidence", value=math.inf)
@example(field="edit.attributes.confidence", value=-FOUR_HUNDRED_DIGITS)
@example(field="add.suggestion_id", value=2**63)
@example(field="arrival.document", value=math.nan)
def test_no_number_in_a_worker_body_is_a_5xx_or_stores_anything(app, client, worker, field, value):
    """Every number of every worker body, huge, negative, fractional, NaN, infinite or
    written as text: refused with a 400 that says what is wrong and stores nothing, or
    (seconds and positions within their rules) accepted with the stored time inside the
    time budget."""
    path, body, place = FIELDS[field]
    url = ARRIVAL if path == ARRIVAL else f"{ARRIVAL}/{worker['token']}/{path}"
    url = url.format(mark=worker["mark"])
    before = db_snapshot(app)
    answer = post_json(client, url, with_number(body, place, value))
    assert answer.status_code < 500, (field, value, answer.get_data()[:200])
    if answer.status_code >= 400:
        assert answer.get_json()["error"], (field, value)
        assert db_snapshot(app) == before, (field, value)
    now = datetime.now(UTC)
    for opened, seconds in stored_seconds(app):
        allowed = (now - opened.replace(tzinfo=UTC)).total_seconds() + timing.SLACK_SECONDS
        assert math.isfinite(seconds) and 0 <= seconds <= allowed + 1e-6, (field, value)


# --- a worker's form ----------------------------------------------------------------------


@pytest.mark.parametrize("point", ["²", "9" * 5000, "١", "3.0", "-1", "nan"])
def test_a_likert_point_in_other_digits_or_5000_digits_is_a_400(app, client, point):
    """The after-document questionnaire's Likert point: ``"²"`` and 5,000 digits were 500s
    (``int`` raised ValueError), ``"١"`` was stored as given though read as 1."""
    from tests.test_journey import PROLIFIC, QUESTIONNAIRE, _study, _token, consent

    make_study(app)
    _study(app, questionnaire=QUESTIONNAIRE)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    token = _token(client.get(consent(client, PROLIFIC, "agree").headers["Location"]))
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    before = db_snapshot(app)
    url = f"/a/{token}/questionnaire"
    answer = client.post(url, data={"stage": "document", "difficulty": point})
    assert answer.status_code == 400, answer.status_code
    assert "choose a point from 1 to 5" in answer.get_data(as_text=True)
    assert db_snapshot(app) == before


# --- a researcher's forms, queries and JSON bodies -----------------------------------------


@pytest.fixture
def researcher(app):
    make_study(app)
    create_researcher(app, ADA, admin=True)
    session = logged_in(app, ADA)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    return session


REVIEW = "/admin/studies/demo/review"
# (method, url, where the number goes, its field, other fields)
RESEARCHER_NUMBERS = [
    ("GET", "/admin/studies/demo/compare", "query", "min_workers", {}),
    ("GET", "/admin/studies/demo/compare.json", "query", "min_workers", {}),
    ("POST", "/admin/studies/demo/settings/detector", "form", "model", {}),
    ("POST", f"{REVIEW}/auto-accept", "form", "min_workers", {}),
    ("POST", f"{REVIEW}/auto-accept", "form", "min_posterior", {"min_workers": "2"}),
    ("POST", f"{REVIEW}/auto-accept-document?document=doc-1", "json", "min_workers", {}),
    (
        "POST",
        f"{REVIEW}/auto-accept-document?document=doc-1",
        "json",
        "min_posterior",
        {"min_workers": 2, "expected": 0},
    ),
    ("POST", "/admin/studies/demo/settings", "form", "abandon_after_minutes", {}),
    ("POST", "/admin/studies/demo/settings", "form", "qualification_attempts", {}),
    ("POST", "/admin/studies/demo/settings", "form", "max_hints_per_segment", {}),
    ("POST", "/admin/studies/demo/settings", "form", "min_hint_score", {}),
    ("POST", "/admin/studies/demo/workers/settings", "form", "min_seconds_per_segment", {}),
    ("GET", "/admin/studies/demo/export.csv", "query", "min_posterior", {"layer": "consensus"}),
    (
        "POST",
        "/admin/studies",
        "form",
        "annotators_per_doc",
        {"slug": "x", "taxonomy": "snac.yaml"},
    ),
]
TEXT_NUMBERS = ["²", "9" * 5000, "1" + "0" * 399, "1e400", "nan", "inf", "-1", "-0.5"]
JSON_NUMBERS = [FOUR_HUNDRED_DIGITS, math.inf, math.nan, -1, 0.5, "²"]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=st.sampled_from(range(len(RESEARCHER_NUMBERS))), pick=st.integers(0, 7))
@example(case=0, pick=0)  # compare ?min_workers=²
@example(case=1, pick=1)  # compare.json ?min_workers=9…(5000 digits)
@example(case=2, pick=2)  # settings/detector model=1…(400 digits): past the id column
@example(case=2, pick=0)  # model=²
@example(case=5, pick=1)  # auto-accept-document {"min_workers": Infinity}
@example(case=6, pick=0)  # auto-accept-document {"min_posterior": 1…(400 digits)}
def test_a_researchers_hostile_number_is_a_400_never_a_500(app, researcher, case, pick):
    """Each number a researcher's page sends, set to a hostile value: a refusal naming what
    is wrong (a 4xx, or the page shown again with its message), never a 500, nothing
    stored."""
    method, url, where, field, others = RESEARCHER_NUMBERS[case]
    token = csrf(researcher)
    before = db_snapshot(app)
    if where == "json":
        value = JSON_NUMBERS[pick % len(JSON_NUMBERS)]
        answer = researcher.open(
            url,
            method=method,
            data=json.dumps({**others, field: value}),
            content_type="application/json",
            headers={"X-CSRFToken": token},
        )
    else:
        value = TEXT_NUMBERS[pick]
        values = {**others, field: value}
        if where == "form":
            answer = researcher.open(url, method=method, data={"csrf_token": token, **values})
        else:
            answer = researcher.open(url, method=method, query_string=values)
    answer.close()
    assert answer.status_code < 500, (url, field, str(value)[:20], answer.status_code)
    assert db_snapshot(app) == before, (url, field, str(value)[:20])


def test_a_review_row_id_past_the_id_column_is_a_404(app, researcher):
    """``…/review/errors/<row_id>`` with an id past 2³¹−1 overflowed the driver (a 500)."""
    token = csrf(researcher)
    for row_id in ("99999999999999999999", "2147483648"):
        answer = researcher.post(
            f"{REVIEW}/errors/{row_id}?document=doc-1",
            json={"category": "CharE"},
            headers={"X-CSRFToken": token},
        )
        assert answer.status_code == 404, (row_id, answer.status_code)


# --- a researcher's command and file -------------------------------------------------------


def test_a_detector_rule_with_more_workers_than_a_document_can_have_is_one_line(app, database_url):
    """``study detector --min-workers 10**30`` was stored, and every later count of curated
    documents overflowed the SQL's integer in the worker."""
    make_study(app)
    env = {"DATABASE_URL": database_url}
    before = db_snapshot(app)
    args = ("study", "detector", "demo", "--retrain-every", "2", "--layer", "workers")
    done = cli_in_process(env, *args, "--min-workers", str(10**30))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["error: --min-workers must be from 1 to 1000"]
    assert db_snapshot(app) == before


@pytest.mark.parametrize("value", ["%C2%B2", "--3", "9" * 5000])
def test_an_imported_scale_value_in_other_digits_is_one_line_naming_it(
    app, database_url, tmp_path, value
):
    """A brat file's scale attribute ``²`` (or ``--3``) raised ValueError in the import;
    now the import's one-line error names the attribute, and nothing is stored."""
    taxonomy = tmp_path / "t.yaml"
    taxonomy.write_text(BASE, encoding="utf-8")
    make_study(app, taxonomy=str(taxonomy), documents=[("other", ["Other text."])])
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "doc.txt").write_text("Ann met Bo.", encoding="utf-8")
    (folder / "doc.ann").write_text(
        f"T1\tomit 0 3\tAnn\nA1\tseverity T1 minor\nA2\tconfidence T1 {value}\n",
        encoding="utf-8",
    )
    before = db_snapshot(app)
    env = {"DATABASE_URL": database_url}
    done = cli_in_process(env, "import", "demo", str(folder), "--format", "brat", "--no-ner")
    assert done.returncode == 1, done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "confidence" in line and "whole number" in line
    assert db_snapshot(app) == before
