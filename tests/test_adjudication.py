"""Candidates grouped by the strict rule, decisions into the adjudicated layer with
versions (a second researcher gets a 409 naming the first), edits checked like workers'
annotations, the layer exported with --layer adjudicated, workers scored against it by hand
count, auto-accept by votes, promotion to gold. Real HTTP on SQLite and Postgres."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.db import session_scope
from app.models import AdjudicatedError, Document, GoldError
from app.quality.candidates import Mark, group_candidates
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, SEGMENTS, annotation_body, db_snapshot, open_token, span

PASSWORD = "a long enough password"
ADA, EVE = "ada@example.org", "eve@example.org"
META_TOKEN = re.compile(r'name="csrf-token" content="([^"]+)"')
FORM_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def mark(i: int, worker: str, start: int, end: int, text: str = "") -> Mark:
    return Mark(i, worker, 0, start, end, text, "CharE", (None,) * 5, "")


def test_a_mark_joins_a_candidate_only_when_it_matches_every_mark_in_it():
    text = "alpha beta gamma delta epsilon"
    texts = {("d", 0): text}
    w1 = mark(1, "w1", 0, 16)  # alpha beta gamma
    w2 = mark(2, "w2", 6, 16)  # beta gamma: IoU 2/3 with w1
    w3 = mark(3, "w3", 6, 22)  # beta gamma delta: 2/4 with w1, 2/3 with w2: joins
    w3b = mark(4, "w3", 11, 30)  # gamma delta epsilon: 1/5 with w1: a candidate of its own
    groups = group_candidates("d", ["w1", "w2", "w3"], [w1, w2, w3, w3b], texts, {})
    assert [[m.id for m in g.marks] for g in groups] == [[1, 2, 3], [4]]
    assert [g.votes for g in groups] == [3, 1]
    assert not groups[0].unanimous  # three workers, three different boundaries
    assert groups[0].proposal.id == 1  # all shapes once: the earliest worker's
    # w2's "beta gamma" matches w1 but not a candidate w4 "delta epsilon" could join
    w4 = mark(5, "w4", 17, 30)
    groups = group_candidates("d", ["w1", "w2", "w4"], [w1, w2, w4], texts, {})
    assert [[m.id for m in g.marks] for g in groups] == [[1, 2], [5]]


def researcher(app, email: str):
    from app.researchers.accounts import create_researcher

    with app.app_context(), session_scope() as session:
        create_researcher(session, email, PASSWORD).role = "admin"
    client = app.test_client()
    token = FORM_TOKEN.search(client.get("/admin/login").get_data(as_text=True)).group(1)
    answer = client.post(
        "/admin/login", data={"email": email, "password": PASSWORD, "csrf_token": token}
    )
    assert answer.status_code == 302
    return client


class Reviewer:
    """A logged-in researcher on one document's review page (JSON calls with the CSRF header)."""

    def __init__(self, client, slug: str = "demo", document: str = "doc-1"):
        self.client, self.base, self.document = client, f"/admin/studies/{slug}/review", document
        page = client.get(f"{self.base}/document", query_string={"document": document})
        assert page.status_code == 200
        self.token = META_TOKEN.search(page.get_data(as_text=True)).group(1)

    def state(self) -> dict:
        answer = self.client.get(
            f"{self.base}/state.json", query_string={"document": self.document}
        )
        assert answer.status_code == 200
        return answer.get_json()

    def post(self, path: str, body):
        return self.client.post(
            f"{self.base}/{path}",
            query_string={"document": self.document},
            json=body,
            headers={"X-CSRFToken": self.token},
        )


@pytest.fixture
def three_workers(app, client):
    """doc-1 annotated by three workers through the API (segment 0 is
    "Anna is an only child. She lives in Zoë's old flat in Paris.")."""
    make_study(app, documents=DOCUMENTS)
    plan = {
        "w1": [annotation_body(0, "Anna", "CharE"), annotation_body(0, "Zoë's old flat", "RefE")],
        "w2": [annotation_body(0, "Anna", "CharE"), annotation_body(0, "old flat", "RefE")],
        "w3": [annotation_body(0, "Paris", "CharE"), annotation_body(1, "Anna's", "CharE")],
    }
    for worker, bodies in plan.items():
        token = open_token(client, worker)
        for body in bodies:
            assert (
                client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
            )
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    return plan


def export(app, fmt: str, layer: str = "adjudicated") -> str:
    from app.cli import main

    result = CliRunner().invoke(
        main, ["export", "demo", "--format", fmt, "--layer", layer], env=env(app)
    )
    assert result.exit_code == 0, result.output
    return result.output


def env(app) -> dict[str, str]:
    return {"DATABASE_URL": app.config["DATABASE_URL"]}


def test_review_decisions_conflicts_export_and_scores(app, three_workers):
    ada = Reviewer(researcher(app, ADA))
    eve = Reviewer(researcher(app, EVE))
    state = ada.state()
    assert state["workers"] == ["w1", "w2", "w3"]
    assert [
        (c["segment"], c["category"], c["proposal"]["text"], c["votes"])
        for c in state["candidates"]
    ] == [
        (0, "CharE", "Anna", 2),
        (0, "RefE", "Zoë's old flat", 2),  # "old flat" joins it: token IoU 2/3
        (0, "CharE", "Paris", 1),
        (1, "CharE", "Anna's", 1),
    ]
    assert state["status"]["status"] == "unreviewed"
    anna, flat, paris, _ = (c["key"] for c in state["candidates"])

    assert ada.post(f"candidates/{anna}", {"decision": "accept", "version": 0}).status_code == 200
    # two researchers decide the same candidate: the second one is told who was first
    assert ada.post(f"candidates/{flat}", {"decision": "accept", "version": 0}).status_code == 200
    before = db_snapshot(app)
    late = eve.post(f"candidates/{flat}", {"decision": "reject", "version": 0})
    assert late.status_code == 409
    assert ADA in late.get_json()["error"] and late.get_json()["changed_by"] == ADA
    assert db_snapshot(app) == before
    # eve reloads (version 1) and narrows the boundary
    edit = {**span(0, "old flat"), "category": "RefE"}
    moved = eve.post(f"candidates/{flat}", {"decision": "accept", "version": 1, "edit": edit})
    assert moved.status_code == 200, moved.get_json()
    decided = {c["key"]: c["decision"] for c in moved.get_json()["candidates"]}
    assert decided[flat]["text"] == "old flat" and decided[flat]["version"] == 2
    assert decided[flat]["decided_by"] == EVE and decided[flat]["origin"] == "edited"
    assert ada.post(f"candidates/{paris}", {"decision": "reject", "version": 0}).status_code == 200

    # bad edits and additions change nothing
    before = db_snapshot(app)
    for body in (
        {**span(0, "Anna"), "category": "Nope"},
        {"segment": 0, "start": 50, "end": 400, "text": "x", "category": "CharE"},
        {**span(0, "Paris"), "category": "InconE"},  # paired, no earlier span
        {**span(0, "Anna"), "category": "InconE", "paired": span(0, "Paris")},  # pair is later
        {**span(0, "Anna"), "category": "CharE", "extra": 1},
    ):
        answer = ada.post("errors", {"edit": body})
        assert answer.status_code == 400, body
        assert "error" in answer.get_json()
    assert ada.post(f"candidates/{anna}", {"decision": "maybe", "version": 1}).status_code == 400
    assert ada.post("candidates/cnothere", {"decision": "accept", "version": 0}).status_code == 409
    assert db_snapshot(app) == before

    pedro = {**span(2, "Pedro"), "category": "CharE", "comment": '=HYPERLINK("x")'}
    added = ada.post("errors", {"edit": pedro})
    assert added.status_code == 200
    assert [r["text"] for r in added.get_json()["added"]] == ["Pedro"]

    assert ada.post("status", {"status": "done", "version": 0}).status_code == 409  # in review, v1
    done = ada.post("status", {"status": "done", "version": 1})
    assert done.status_code == 200 and done.get_json()["status"]["status"] == "done"

    web = ada.client.get("/admin/studies/demo/export.csv", query_string={"layer": "adjudicated"})
    assert web.status_code == 200 and "demo.adjudicated.csv" in web.headers["Content-Disposition"]
    assert web.get_data(as_text=True) == export(app, "csv")
    assert ada.client.get("/admin/studies/demo/export.csv?layer=x").status_code == 400
    brat = ada.client.get("/admin/studies/demo/export.brat", query_string={"layer": "adjudicated"})
    assert brat.status_code == 200 and brat.data[:2] == b"PK"
    rows = list(csv.DictReader(io.StringIO(export(app, "csv"))))
    assert [
        (
            r["document"],
            r["segment"],
            r["span_start"],
            r["span_end"],
            r["span_text"],
            r["category"],
            r["worker_id"],
        )
        for r in rows
    ] == [
        ("doc-1", "0", "0", "4", "Anna", "CharE", "adjudicated"),
        ("doc-1", "0", "42", "50", "old flat", "RefE", "adjudicated"),
        ("doc-1", "2", "14", "19", "Pedro", "CharE", "adjudicated"),
    ]
    assert SEGMENTS[0][42:50] == "old flat" and SEGMENTS[2][14:19] == "Pedro"
    assert rows[2]["comment"].startswith("'=")  # spreadsheet-safe like every CSV export
    assert len(list(csv.DictReader(io.StringIO(export(app, "csv", "workers"))))) == 6
    snac = json.loads(export(app, "snac"))
    assert [e["span"] for e in snac["doc-1"]["0"]["errors"]] == ["Anna", "old flat"]
    jsonl = [json.loads(line) for line in export(app, "jsonl").splitlines()]
    assert [r["span_text"] for r in jsonl] == ["Anna", "old flat", "Pedro"]
    thresh = json.loads(export(app, "thresh"))
    assert len(next(e for e in thresh if e["id"] == "doc-1")["edits"]) == 3

    # scores against the layer, by hand: layer = {Anna CharE, old flat RefE, Pedro CharE}
    # w1: Anna ✓, "Zoë's old flat" ✓ (token IoU 2/3 with "old flat") -> P 2/2, R 2/3
    # w2: Anna ✓, "old flat" ✓ -> P 1, R 2/3; w3: Paris ✗, Anna's (segment 1) ✗ -> P 0, R 0
    scores = {
        r["worker_id"]: r
        for r in ada.client.get("/admin/studies/demo/review/scores.json").get_json()
    }
    for worker, (p, r) in {"w1": (1.0, 2 / 3), "w2": (1.0, 2 / 3), "w3": (0.0, 0.0)}.items():
        assert scores[worker]["documents"] == 1
        assert scores[worker]["overall"]["precision"] == pytest.approx(p)
        assert scores[worker]["overall"]["recall"] == pytest.approx(r)
    assert scores["w1"]["overall"]["gold"] == 3

    # promote to gold: the accepted layer becomes the document's gold errors
    page = ada.client.get("/admin/studies/demo/review").get_data(as_text=True)
    answer = ada.client.post(
        "/admin/studies/demo/review/promote",
        query_string={"document": "doc-1"},
        data={"csrf_token": FORM_TOKEN.search(page).group(1)},
    )
    assert answer.status_code == 302
    with app.app_context(), session_scope() as session:
        doc = session.scalar(select(Document).where(Document.external_id == "doc-1"))
        gold = session.scalars(select(GoldError).where(GoldError.document_id == doc.id)).all()
        assert doc.is_gold and sorted(g.text for g in gold) == ["Anna", "Pedro", "old flat"]


def test_racing_researchers_one_wins_the_others_get_409(app, three_workers):
    """Threads post at once (real sessions, SQLite's lock or Postgres's compare-and-set):
    one decision per version wins, every other one is a 409; first decisions on different
    candidates of one document all succeed (the document enters review once)."""
    from concurrent.futures import ThreadPoolExecutor

    reviewers = [Reviewer(researcher(app, f"r{n}@example.org")) for n in range(6)]
    keys = [c["key"] for c in reviewers[0].state()["candidates"]]

    def race(version: int) -> list[int]:
        with ThreadPoolExecutor(len(reviewers)) as pool:
            return sorted(
                pool.map(
                    lambda r: (
                        r.post(
                            f"candidates/{keys[0]}", {"decision": "accept", "version": version}
                        ).status_code
                    ),
                    reviewers,
                )
            )

    assert race(0) == [200, 409, 409, 409, 409, 409]
    assert race(1) == [200, 409, 409, 409, 409, 409]
    with ThreadPoolExecutor(3) as pool:
        answers = list(
            pool.map(
                lambda pair: (
                    pair[0]
                    .post(f"candidates/{pair[1]}", {"decision": "reject", "version": 0})
                    .status_code
                ),
                zip(reviewers[1:4], keys[1:4], strict=True),
            )
        )
    assert answers == [200, 200, 200]
    state = reviewers[0].state()
    assert [c["decision"]["version"] for c in state["candidates"]] == [2, 1, 1, 1]
    assert state["status"]["status"] == "in_review" and state["status"]["version"] == 1
    # a later-regrouped decision and an added error are changed by id, with their version
    added = reviewers[0].post("errors", {"edit": {**span(2, "Pedro"), "category": "CharE"}})
    row = added.get_json()["added"][0]
    again = reviewers[1].post("errors", {"edit": {**span(2, "Pedro"), "category": "CharE"}})
    assert again.status_code == 409 and again.get_json()["existing_id"] == row["id"]
    stale = reviewers[1].post(f"errors/{row['id']}", {"decision": "reject", "version": 0})
    assert stale.status_code == 409
    gone = reviewers[1].post(f"errors/{row['id']}", {"decision": "reject", "version": 1})
    assert gone.status_code == 200 and gone.get_json()["added"][0]["decision"] == "rejected"


def test_the_detector_is_one_more_lane(app, three_workers):
    from app.models import Suggestion

    with app.app_context(), session_scope() as session:
        doc = session.scalar(select(Document).where(Document.external_id == "doc-1"))
        where = span(0, "Paris")
        session.add(
            Suggestion(
                document_id=doc.id,
                segment=0,
                start=where["start"],
                end=where["end"],
                text="Paris",
                category="CharE",
                score=0.9,
                detector="rules",
                detector_version="1",
            )
        )
    state = Reviewer(researcher(app, ADA)).state()
    assert [(s["text"], s["category"], s["score"]) for s in state["suggestions"]] == [
        ("Paris", "CharE", 0.9)
    ]


def test_auto_accept_takes_the_candidates_with_enough_votes(app, three_workers):
    from app.cli import main

    result = CliRunner().invoke(
        main, ["review", "auto-accept", "demo", "--min-workers", "2"], env=env(app)
    )
    assert result.exit_code == 0, result.output
    assert "accepted 2 candidates" in result.output
    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(AdjudicatedError).order_by(AdjudicatedError.start)).all()
        assert [(r.text, r.origin, r.decided_by) for r in rows] == [
            ("Anna", "auto", "cli"),
            ("Zoë's old flat", "auto", "cli"),
        ]
    again = CliRunner().invoke(
        main, ["review", "auto-accept", "demo", "--min-workers", "1"], env=env(app)
    )
    assert "accepted 2 candidates" in again.output  # the two single votes; decided ones stay
    bad = CliRunner().invoke(
        main, ["review", "auto-accept", "demo", "--min-workers", "0"], env=env(app)
    )
    assert bad.exit_code == 1 and "--min-workers" in bad.output
    status = CliRunner().invoke(main, ["review", "status", "demo"], env=env(app))
    assert "doc-1\t3 workers\tin_review\t4 accepted\t0 rejected" in status.output
    refused = CliRunner().invoke(main, ["review", "promote", "demo", "doc-1"], env=env(app))
    assert refused.exit_code == 1 and "not marked done" in refused.output
    unknown = CliRunner().invoke(main, ["export", "demo", "--layer", "nope"], env=env(app))
    assert unknown.exit_code != 0


def test_a_stale_review_status_change_is_refused_naming_who_changed_it(app):
    """The review status is compare-and-set in its UPDATE: Ada read version 1, then Eve's
    change committed; Ada's change from her stale read is a 409 naming Eve, and Eve's
    status stands. (Two requests' read and write are under no common lock, so the check
    before the UPDATE alone would let the later one overwrite the earlier.)"""
    from app.errors import Conflict
    from app.models import DocumentReview
    from app.quality.adjudication import set_status

    make_study(app, documents=DOCUMENTS)
    sessions = app.extensions["db_sessionmaker"]
    with sessions() as setup:
        document = setup.scalar(select(Document).where(Document.external_id == "doc-1"))
        set_status(setup, document, {"status": "in_review", "version": 0}, ADA)
        setup.commit()
    with sessions() as ada, sessions() as eve:
        mine = ada.scalar(select(Document).where(Document.id == document.id))
        seen = ada.get(DocumentReview, mine.id)  # Ada's page shows version 1
        assert seen.version == 1
        ada.commit()  # her read is over (the row stays in her session, as on her page)
        theirs = eve.scalar(select(Document).where(Document.id == document.id))
        set_status(eve, theirs, {"status": "done", "version": 1}, EVE)
        eve.commit()
        with pytest.raises(Conflict) as refused:
            set_status(ada, mine, {"status": "in_review", "version": 1}, ADA)
        ada.rollback()
    assert EVE in str(refused.value) and refused.value.details == {"changed_by": EVE, "version": 2}
    with sessions() as check:
        review = check.get(DocumentReview, document.id)
        assert (review.status, review.updated_by, review.version) == ("done", EVE, 2)
