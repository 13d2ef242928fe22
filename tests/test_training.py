"""The training phase (practice documents with feedback per segment, the screen-out return)
and attention checks (imported with --checks, each worker's catch rate), on SQLite and
Postgres, through the real HTTP API, the worker pages and the command line."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from app.crowd import platforms
from app.db import session_scope
from app.documents.studies import import_documents
from app.formats import DocumentInput, GoldSpan
from app.models import Annotation, Assignment, Document, GoldError, PracticeCheck, Study
from app.quality.reporting import format_report, study_report
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import export_text

PRACTICE = ["Anna met Bob. Bob said hello to the wrong person.", "Then Carla leaved the house."]
TEST = ["Tom saw Eve. Eve gave the keys to the wrong man.", "Later Dan goed to town."]
TEST_KEY = [(0, "the wrong man", "CharE"), (1, "goed", "GramE")]
REAL = [("doc-1", ["A real text.", "Its second part."])]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def span(segment: int, text: str, category: str, texts=PRACTICE) -> dict:
    start = texts[segment].index(text)
    return {
        "segment": segment,
        "start": start,
        "end": start + len(text),
        "text": text,
        "category": category,
    }


def configure(app, **changes) -> dict:
    with app.app_context(), session_scope() as session:
        return platforms.configure_study(session.scalar(select(Study)), **changes)


def training_study(app, *, attempts: int = 2, **settings) -> None:
    """``practice-1`` teaches (feedback, never graded); ``test-1`` and ``test-2`` (another
    text) grade the qualification and show no answers."""
    make_study(app, documents=REAL, annotators_per_doc=1, suggestions="off")
    practice = DocumentInput(
        "practice-1",
        list(PRACTICE),
        gold=[
            GoldSpan(segment=0, text="the wrong person", category="CharE", votes=1),
            GoldSpan(segment=0, text="Anna", category="RefE", votes=1),
            GoldSpan(segment=1, text="leaved", category="GramE", votes=1),
        ],
    )
    tests = [
        DocumentInput(
            f"test-{n}",
            list(TEST),
            gold=[GoldSpan(segment=s, text=t, category=c, votes=1) for s, t, c in TEST_KEY],
        )
        for n in (1, 2)
    ]
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        import_documents(session, study, [practice], gold=True, practice=True)
        import_documents(session, study, tests, gold=True)
    configure(app, qualification_f1=0.6, qualification_attempts=attempts, **settings)


def do_practice(client, worker: str, **params) -> str:
    """Arrive and submit the practice document untouched; its token."""
    _, token, _ = arrive(client, worker, **params)
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    return token


def arrive(client, worker: str, **params) -> tuple[int, str | None, bytes]:
    answer = client.get("/s/demo", query_string=params or {"worker_id": worker})
    location = answer.headers.get("Location", "")
    token = location.split("/a/")[1].split("/")[0] if "/a/" in location else None
    return answer.status_code, token, answer.data


def document_of(app, token: str) -> str:
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment).where(Assignment.token == token))
        return row.document.external_id


def add(client, token: str, body: dict):
    return client.post(f"/api/assignments/{token}/annotations", json=body)


def check(client, token: str, segment: int):
    return client.post(f"/api/assignments/{token}/practice/{segment}", json={})


def live_count(app, token: str) -> int:
    with app.app_context(), session_scope() as session:
        return session.scalar(
            select(func.count())
            .select_from(Annotation)
            .join(Assignment)
            .where(Assignment.token == token, Annotation.removed_at.is_(None))
        )


# --- practice feedback ------------------------------------------------------------------------


def test_feedback_lists_found_missed_and_wrong_under_the_strict_rule(app, client):
    training_study(app)
    _, token, _ = arrive(client, "w1")
    assert document_of(app, token) == "practice-1"
    payload = client.get(f"/api/assignments/{token}").get_json()
    assert payload["practice"] == {"checked": {}}
    # token IoU 2/3 with the gold "the wrong person": found
    assert add(client, token, span(0, "wrong person", "CharE")).status_code == 201
    # same text as gold, other category: wrong, and the reference category is named
    assert add(client, token, span(0, "the wrong person", "RefE")).status_code == 201
    answer = check(client, token, 0)
    assert answer.status_code == 200
    feedback = answer.get_json()
    assert feedback["rule"] == "strict" and feedback["gold"] == 2
    assert [(f["text"], f["category"]) for f in feedback["found"]] == [("wrong person", "CharE")]
    assert [(m["text"], m["category"]) for m in feedback["missed"]] == [("Anna", "RefE")]
    assert feedback["missed"][0]["definition"].startswith("The text refers to")  # RefE's
    assert feedback["missed"][0]["start"] == 0 and feedback["missed"][0]["end"] == 4
    wrong = feedback["wrong"]
    assert [(w["text"], w["category"], w["reference"]) for w in wrong] == [
        ("the wrong person", "RefE", "New character without introduction")
    ]
    # segment 1's key is not part of it, and the reload shows the same feedback
    assert "leaved" not in json.dumps(feedback)
    again = client.get(f"/api/assignments/{token}").get_json()["practice"]["checked"]
    assert again == {"0": feedback}
    assert check(client, token, 0).get_json() == feedback


def test_a_checked_segment_is_frozen_and_others_are_not(app, client):
    training_study(app)
    _, token, _ = arrive(client, "w1")
    first = add(client, token, span(0, "Anna", "RefE")).get_json()
    assert check(client, token, 0).status_code == 200
    before = live_count(app, token)
    late = add(client, token, span(0, "the wrong person", "CharE"))
    assert late.status_code == 409 and "can no longer be changed" in late.get_json()["error"]
    removed = client.delete(f"/api/assignments/{token}/annotations/{first['id']}")
    assert removed.status_code == 409
    edited = client.post(
        f"/api/assignments/{token}/annotations/{first['id']}/edit",
        json={"category": "CharE", "client_id": "edit-1"},
    )
    assert edited.status_code == 409 and edited.get_json()["error"] == late.get_json()["error"]
    assert live_count(app, token) == before == 1
    # segment 1 is open until it is checked
    assert add(client, token, span(1, "leaved", "GramE")).status_code == 201


def test_the_answer_key_of_a_segment_only_comes_with_freezing_it(app, client):
    """Reading segment 1's key first (no marks sent) freezes it: the key cannot be copied."""
    training_study(app)
    _, token, _ = arrive(client, "cheat")
    payload = client.get(f"/api/assignments/{token}").get_json()
    assert "leaved" not in json.dumps({k: v for k, v in payload.items() if k != "document"})
    peek = check(client, token, 1).get_json()
    assert [m["text"] for m in peek["missed"]] == ["leaved"]
    assert add(client, token, span(1, "leaved", "GramE")).status_code == 409
    assert live_count(app, token) == 0
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(PracticeCheck)) == 1


def test_feedback_is_refused_outside_a_practice_document(app, client):
    training_study(app)
    token = do_practice(client, "good")
    _, graded, _ = arrive(client, "good")
    assert document_of(app, graded).startswith("test-")
    missing = check(client, "x" * 43, 0)
    refused = check(client, graded, 0)  # the qualification document: no answers, ever
    assert (refused.status_code, refused.get_json()) == (missing.status_code, missing.get_json())
    assert missing.status_code == 404
    assert "practice" not in client.get(f"/api/assignments/{graded}").get_json()
    for seg, text, cat in TEST_KEY:
        assert add(client, graded, span(seg, text, cat, TEST)).status_code == 201
    assert client.post(f"/api/assignments/{graded}/submit").status_code == 200
    _, real, _ = arrive(client, "good")
    assert document_of(app, real) == "doc-1"
    assert check(client, real, 0).get_json() == missing.get_json()
    assert "practice" not in client.get(f"/api/assignments/{real}").get_json()
    # out of range, not JSON (no cross-site form can send it), huge segment numbers
    assert check(client, token, 5).status_code == 404
    assert check(client, token, 2**70).status_code == 404
    form = client.post(f"/api/assignments/{token}/practice/0", data={"a": "b"})
    assert form.status_code == 400
    with app.app_context(), session_scope() as session:  # no refusal stored anything
        assert session.scalar(select(func.count()).select_from(PracticeCheck)) == 0


# --- pass, fail, screen-out -------------------------------------------------------------------


def test_fail_once_pass_the_second_attempt_then_real_work(app, client):
    training_study(app, attempts=2)
    practice = do_practice(client, "w1")
    assert b"Practice done" in client.get(f"/a/{practice}/done").data  # never graded
    _, first, _ = arrive(client, "w1")
    assert client.post(f"/api/assignments/{first}/submit").status_code == 200
    assert b"Not quite yet" in client.get(f"/a/{first}/done").data
    _, second, _ = arrive(client, "w1")
    assert {document_of(app, first), document_of(app, second)} == {"test-1", "test-2"}
    for seg, text, cat in (*TEST_KEY, (1, "Dan", "RefE")):
        assert add(client, second, span(seg, text, cat, TEST)).status_code == 201
    assert client.post(f"/api/assignments/{second}/submit").status_code == 200
    assert b"You qualified" in client.get(f"/a/{second}/done").data  # F1 = 2*(2/3)*1/(5/3) = 0.8
    _, real, _ = arrive(client, "w1")
    assert document_of(app, real) == "doc-1"


def test_a_failing_prolific_worker_is_screened_out_and_gets_no_real_document(app, client):
    url = "https://app.prolific.com/submissions/complete?cc=SCREENOUT1"
    training_study(app, attempts=1, platform="prolific", screen_out_url=url)
    params = {"PROLIFIC_PID": "p1", "STUDY_ID": "s1", "SESSION_ID": "sess1"}
    do_practice(client, "p1", **params)
    _, token, _ = arrive(client, "p1", **params)
    assert client.post(f"/api/assignments/{token}/submit").get_json()["redirect_url"] is None
    page = client.get(f"/a/{token}/done")
    assert page.status_code == 200 and b"Thank you for trying" in page.data
    # the qualification failed, not the practice (never graded): the page says which
    text = page.get_data(as_text=True)
    assert "Your marks on the qualification texts did not reach" in text
    assert "F1" not in text and "practice" not in text  # failed, never the score
    assert f'href="{url}"'.replace("&", "&amp;").encode() in page.data
    assert b"SCREENOUT1" in page.data and b"completion-code" not in page.data
    # coming back with a new session: the same screen-out page, no new assignment
    status, again, body = arrive(client, "p1", **{**params, "SESSION_ID": "sess2"})
    assert status == 200 and again is None and b"Thank you for trying" in body
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Assignment)) == 2  # practice, test


def test_screen_out_without_a_url_asks_to_return_the_task(app, client):
    training_study(app, attempts=1)
    do_practice(client, "w1")
    _, token, _ = arrive(client, "w1")
    client.post(f"/api/assignments/{token}/submit")
    page = client.get(f"/a/{token}/done").data
    assert b"return this task" in page and b"screen-out-link" not in page


def test_training_settings_are_validated(app):
    make_study(app)
    described = configure(app, screen_out_url="https://example.org/out?cc=X", min_catch_rate="0.75")
    assert described["screen_out_url"] == "https://example.org/out?cc=X"
    assert described["min_catch_rate"] == 0.75
    for changes, message in (
        ({"screen_out_url": "javascript:alert(1)"}, "screen-out URL"),
        ({"min_catch_rate": "1.5"}, "more than 0 and at most 1"),
        ({"min_catch_rate": "lots"}, "must be a number"),
    ):
        with pytest.raises(platforms.InvalidInput, match=message):
            configure(app, **changes)
    cleared = configure(app, screen_out_url="", min_catch_rate=None)
    assert cleared["screen_out_url"] is None and cleared["min_catch_rate"] is None


# --- attention checks -------------------------------------------------------------------------

CHECK_1 = ["Mara fed the cat. The cat was a dog all along.", "Nothing odd here."]
CHECK_2 = ["Paul left at dawn. Paul left at dawn again."]


@pytest.fixture
def cli(database_url, monkeypatch, tmp_path):
    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.chdir(tmp_path)
    return lambda *args: CliRunner().invoke(main, list(args))


def checks_study(app, cli, tmp_path) -> None:
    make_study(app, documents=REAL, annotators_per_doc=3, suggestions="off")
    snac = {
        "check-1": {
            "0": {
                "text": CHECK_1[0],
                "errors": [{"span": "The cat was a dog", "error_type": "CharE"}],
            },
            "1": {"text": CHECK_1[1], "errors": [{"span": "odd here", "error_type": "GramE"}]},
        },
        "check-2": {
            "0": {"text": CHECK_2[0], "errors": [{"span": "at dawn again", "error_type": "GramE"}]}
        },
    }
    (tmp_path / "checks.json").write_text(json.dumps(snac))
    result = cli("import", "demo", "checks.json", "--checks", "--format", "snac", "--no-ner")
    assert result.exit_code == 0, result.output
    assert "3 attention checks" in result.output
    both = cli("import", "demo", "checks.json", "--checks", "--gold", "--no-ner")
    assert both.exit_code == 1 and "--checks cannot be combined" in both.output


def work(client, worker: str, document: str, marks: list[dict], *, submit: bool = True) -> str:
    token = client.post(
        "/api/assignments", json={"study": "demo", "document": document, "worker_id": worker}
    ).get_json()["token"]
    for body in marks:
        assert add(client, token, body).status_code == 201
    if submit:
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    return token


def test_catch_rate_per_worker_hand_computed(app, client, cli, tmp_path):
    checks_study(app, cli, tmp_path)
    with app.app_context(), session_scope() as session:
        docs = {d.external_id: d.is_gold for d in session.scalars(select(Document))}
        assert docs == {"doc-1": False, "check-1": False, "check-2": False}
        assert session.scalar(select(func.count()).where(GoldError.is_check.is_(True))) == 3
    # A: the first check exactly, "Nothing" for "odd here" (IoU 0), "dawn again" (IoU 2/3)
    token_a = work(
        client,
        "A",
        "check-1",
        [span(0, "The cat was a dog", "CharE", CHECK_1), span(1, "Nothing", "GramE", CHECK_1)],
    )
    work(client, "A", "check-2", [span(0, "dawn again", "GramE", CHECK_2)])
    # B: "cat" (IoU 1/5), the right text under another category, "odd here" exactly
    work(
        client,
        "B",
        "check-1",
        [
            span(0, "cat", "CharE", CHECK_1),
            span(0, "The cat was a dog", "RefE", CHECK_1),
            span(1, "odd here", "GramE", CHECK_1),
        ],
    )
    work(client, "B", "check-2", [])
    # C has not submitted: met no check yet
    work(client, "C", "check-1", [span(0, "The cat was a dog", "CharE", CHECK_1)], submit=False)
    # checks are not in the worker's payload, nor in gold scores
    payload = client.get(f"/api/assignments/{token_a}").get_json()
    assert "practice" not in payload and payload["suggestions"] == []
    assert "is_check" not in json.dumps(payload)
    configure(app, min_catch_rate=0.5)
    with app.app_context(), session_scope() as session:
        report = study_report(session, session.scalar(select(Study)))
    attention = report["attention"]
    assert attention["checks"] == 3 and attention["documents"] == 2
    assert attention["min_catch_rate"] == 0.5
    assert attention["workers"] == {
        "A": {"checks": 3, "caught": 2, "catch_rate": 2 / 3, "flagged": False},
        "B": {"checks": 3, "caught": 1, "catch_rate": 1 / 3, "flagged": True},
    }
    assert report["progress"]["gold_documents"] == 0
    assert all(w["gold"] is None for w in report["workers"])
    text = format_report(report)
    assert "Attention checks (3 in 2 documents; flagged below 50%)" in text
    assert "67%" in text and "FLAGGED" in text
    as_json = cli("report", "demo", "--json", "--stored-figures")  # γ: test_reliability
    assert json.loads(as_json.stdout)["attention"]["workers"]["B"]["flagged"] is True


def test_checks_upload_from_the_admin_and_dashboard_table(app, client, cli, tmp_path):
    from app.researchers.accounts import create_researcher
    from tests.test_admin import EMAIL, PASSWORD, login

    checks_study(app, cli, tmp_path)
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    assert login(client).status_code == 302
    work(client, "A", "check-2", [span(0, "at dawn again", "GramE", CHECK_2)])
    work(client, "B", "check-2", [])
    configure(app, min_catch_rate=0.9)
    page = client.get("/admin/studies/demo").get_data(as_text=True)
    assert 'id="attention-table"' in page
    assert '<tr class="flagged" data-worker="B">' in page
    assert '<tr class="" data-worker="A">' in page
    assert "Workers catching less than 90% are flagged." in page


def test_checks_uploaded_in_the_admin_are_imported_as_checks(app, client):
    from app.researchers.accounts import create_researcher
    from tests.test_admin import EMAIL, PASSWORD, login, upload

    make_study(app, documents=REAL, suggestions="off")
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    assert login(client).status_code == 302
    snac = {
        "up-1": {"0": {"text": CHECK_2[0], "errors": [{"span": "at dawn", "error_type": "GramE"}]}}
    }
    both = upload(client, json.dumps(snac).encode(), "checks.json", checks="1", gold="1")
    assert both.status_code == 400 and "not both" in both.get_data(as_text=True)
    answer = upload(client, json.dumps(snac).encode(), "checks.json", checks="1")
    assert answer.status_code == 302
    with app.app_context(), session_scope() as session:
        up = session.scalar(select(Document).where(Document.external_id == "up-1"))
        assert up is not None and up.is_gold is False
        errors = session.scalars(select(GoldError).where(GoldError.document_id == up.id)).all()
        assert [(e.text, e.is_check) for e in errors] == [("at dawn", True)]
    snac = {
        "up-2": {"0": {"text": PRACTICE[0], "errors": [{"span": "Anna", "error_type": "RefE"}]}}
    }
    mixed = upload(client, json.dumps(snac).encode(), "p.json", checks="1", practice="1")
    assert mixed.status_code == 400 and "not both" in mixed.get_data(as_text=True)
    assert upload(client, json.dumps(snac).encode(), "p.json", practice="1").status_code == 302
    with app.app_context(), session_scope() as session:
        up = session.scalar(select(Document).where(Document.external_id == "up-2"))
        assert (up.is_gold, up.is_practice) == (True, True)


def test_practice_import_without_a_pass_mark_says_so(app, cli, tmp_path):
    make_study(app, documents=REAL)
    snac = {"p-1": {"0": {"text": PRACTICE[0], "errors": [{"span": "Anna", "error_type": "RefE"}]}}}
    (tmp_path / "p.json").write_text(json.dumps(snac))
    result = cli("import", "demo", "p.json", "--practice", "--no-ner")
    assert result.exit_code == 0, result.output
    assert "1 gold error" in result.output and "has no pass mark yet" in result.output
    with app.app_context(), session_scope() as session:
        stored = session.scalar(select(Document).where(Document.external_id == "p-1"))
        assert (stored.is_gold, stored.is_practice) == (True, True)


def test_catch_rates_and_flags_reach_the_assignment_export_and_worker_pages(
    app, client, cli, tmp_path
):
    """The hand-computed rates above, per assignment in ``assignments-jsonl`` and per worker
    on the researcher's worker pages (A 2/3, B 1/3 flagged at 0.5, C met no check)."""
    import re

    from app.web.admin.workers import worker_rows
    from tests.test_worker_management import create_researcher, logged_in

    checks_study(app, cli, tmp_path)
    work(
        client,
        "A",
        "check-1",
        [span(0, "The cat was a dog", "CharE", CHECK_1), span(1, "Nothing", "GramE", CHECK_1)],
    )
    work(client, "A", "check-2", [span(0, "dawn again", "GramE", CHECK_2)])
    work(client, "B", "check-1", [span(1, "odd here", "GramE", CHECK_1)])
    work(client, "B", "check-2", [])
    work(client, "C", "doc-1", [])
    configure(app, min_catch_rate=0.5)
    rows = [json.loads(line) for line in export_text(app, fmt="assignments-jsonl").splitlines()]
    by_worker = {(r["worker_id"], r["document"]): r for r in rows}
    assert by_worker[("A", "check-1")]["check_catch_rate"] == pytest.approx(2 / 3)
    assert by_worker[("A", "check-2")]["check_flagged"] is False
    assert by_worker[("B", "check-2")]["check_catch_rate"] == pytest.approx(1 / 3)
    assert by_worker[("B", "check-1")]["check_flagged"] is True
    assert by_worker[("C", "doc-1")]["check_catch_rate"] is None
    with app.test_request_context(), session_scope() as session:
        pages = {r["worker_id"]: r for r in worker_rows(session, session.scalar(select(Study)))}
    assert pages["A"]["catch_rate"] == pytest.approx(2 / 3) and not pages["A"]["check_flagged"]
    assert pages["B"]["catch_rate"] == pytest.approx(1 / 3) and pages["B"]["check_flagged"]
    assert pages["C"]["catch_rate"] is None and not pages["C"]["check_flagged"]
    create_researcher(app, "ada@example.org", admin=True)
    ada = logged_in(app, "ada@example.org")
    listing = ada.get("/admin/studies/demo/workers").get_data(as_text=True)
    row = re.search(r'<tr data-worker="A"[^>]*>.*?</tr>', listing, re.DOTALL)
    assert row is not None and "67%" in row.group(0)
    assert "33%" in ada.get("/admin/studies/demo/worker?id=B").get_data(as_text=True)


def test_practice_documents_are_left_out_of_agreement_while_a_pass_mark_is_set(app):
    """Two workers submit practice-1 with the same mark: with a pass mark it is a practice
    item and agreement counts no document; without one it is data (1 document, α 1.0)."""
    from datetime import UTC, datetime

    training_study(app)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        practice = session.scalar(select(Document).where(Document.external_id == "practice-1"))
        for n, worker in enumerate(("W1", "W2")):
            assignment = Assignment(
                token=f"tok-{n}",
                study_id=study.id,
                document_id=practice.id,
                worker_id=worker,
                status="submitted",
                submitted_at=datetime.now(UTC),
            )
            session.add(assignment)
            session.flush()
            body = span(1, "leaved", "GramE")
            session.add(
                Annotation(
                    assignment_id=assignment.id,
                    segment=1,
                    start=body["start"],
                    end=body["end"],
                    text="leaved",
                    category="GramE",
                    client_id=f"c{n}",
                )
            )
    with app.app_context(), session_scope() as session:
        agreement = study_report(session, session.scalar(select(Study)))["agreement"]
    assert agreement["documents"] == 0
    configure(app, qualification_f1=None)  # no pass mark (the CLI's "off")
    with app.app_context(), session_scope() as session:
        agreement = study_report(session, session.scalar(select(Study)))["agreement"]
    assert agreement["documents"] == 1
    assert agreement["per_category"]["GramE"]["token"]["alpha"] == 1.0


def test_practice_time_is_left_out_of_the_median_while_a_pass_mark_is_set(app):
    """W1 spent 100 s on each practice segment and 2 s and 4 s on the real document's two:
    median 3 with a pass mark (real work only), 52 without (2, 4, 100, 100)."""
    from datetime import UTC, datetime

    from app.models import SegmentTime
    from app.quality.time_on_task import worker_times

    training_study(app)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        for external_id, seconds in (("practice-1", [100.0, 100.0]), ("doc-1", [2.0, 4.0])):
            document = session.scalar(select(Document).where(Document.external_id == external_id))
            assignment = Assignment(
                token=f"tok-{external_id}",
                study_id=study.id,
                document_id=document.id,
                worker_id="W1",
                status="submitted",
                submitted_at=datetime.now(UTC),
            )
            session.add(assignment)
            session.flush()
            for segment, value in enumerate(seconds):
                session.add(
                    SegmentTime(assignment_id=assignment.id, segment=segment, active_seconds=value)
                )
    with app.app_context(), session_scope() as session:
        median = worker_times(session, session.scalar(select(Study)))["W1"]
    assert median["median_seconds_per_segment"] == 3.0
    configure(app, qualification_f1=None)
    with app.app_context(), session_scope() as session:
        median = worker_times(session, session.scalar(select(Study)))["W1"]
    assert median["median_seconds_per_segment"] == 52.0


def test_a_rejected_workers_catch_rate_stays_on_the_worker_pages(app, client, cli, tmp_path):
    """The worker pages count rejected work too (``WITH_REJECTED``): a worker rejected for
    missing checks still shows the rate they were rejected for, on the list and their own
    page (B caught "odd here", 1 of check-1's 2 checks: 50%); a worker who met no check
    shows "–"."""
    from app.annotation.reviews import act
    from app.researchers.accounts import create_researcher
    from tests.test_admin import EMAIL, PASSWORD, login

    checks_study(app, cli, tmp_path)
    work(client, "B", "check-1", [span(1, "odd here", "GramE", CHECK_1)])
    work(client, "C", "doc-1", [])
    configure(app, min_catch_rate=0.9)
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
        act(session, session.scalar(select(Study)), "B", "reject", EMAIL)
    assert login(client).status_code == 302
    listing = client.get("/admin/studies/demo/workers").get_data(as_text=True)
    rows = dict(re.findall(r'<tr data-worker="(\w+)"[^>]*>(.*?)</tr>', listing, re.DOTALL))
    assert "50%" in rows["B"] and "50%" not in rows["C"]
    page = client.get("/admin/studies/demo/worker", query_string={"id": "B"})
    assert re.search(r"Attention-check catch rate</th><td[^>]*>50%<", page.get_data(as_text=True))


# --- answer keys cannot be harvested ---------------------------------------------------------


def harvest(client, token: str, segments: int) -> list[tuple[int, str, str]]:
    """Ask for every segment's feedback before marking anything: what it gives away."""
    key = []
    for segment in range(segments):
        answer = check(client, token, segment)
        if answer.status_code == 200:
            key += [(m["segment"], m["text"], m["category"]) for m in answer.get_json()["missed"]]
    return key


def test_a_throwaway_ids_feedback_does_not_qualify_a_second_id(app, client):
    """The probe: a throwaway ID opens the first gold document and asks for feedback before
    marking anything; a second ID marks what ``missed`` listed and passed at F1 1.00. Gold
    documents without ``--practice`` are graded and show no answers at all now."""
    make_study(app, documents=REAL, annotators_per_doc=1, suggestions="off")
    gold = [GoldSpan(segment=s, text=t, category=c, votes=1) for s, t, c in TEST_KEY]
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        import_documents(
            session, study, [DocumentInput("gold-1", list(TEST), gold=gold)], gold=True
        )
    configure(app, qualification_f1=0.6, qualification_attempts=1)
    _, throwaway, _ = arrive(client, "throwaway")
    key = harvest(client, throwaway, len(TEST))
    assert key == []  # nothing learnt
    _, cheat, _ = arrive(client, "cheat")
    for segment, text, category in key:
        add(client, cheat, span(segment, text, category, TEST))
    assert client.post(f"/api/assignments/{cheat}/submit").status_code == 200
    assert b"You qualified" not in client.get(f"/a/{cheat}/done").data


def test_practice_answers_replayed_on_the_graded_document_do_not_qualify(app, client):
    training_study(app, attempts=1)
    _, throwaway, _ = arrive(client, "throwaway")
    key = harvest(client, throwaway, len(PRACTICE))
    assert {text for _, text, _ in key} == {"the wrong person", "Anna", "leaved"}  # it teaches
    do_practice(client, "cheat")
    _, graded, _ = arrive(client, "cheat")
    assert document_of(app, graded).startswith("test-")
    assert harvest(client, graded, len(TEST)) == []
    payload = json.dumps(client.get(f"/api/assignments/{graded}").get_json())
    assert "the wrong man" not in payload.replace(TEST[0], "")  # the key is not in the payload
    for segment, text, category in key:
        if text in TEST[segment]:
            add(client, graded, span(segment, text, category, TEST))
    assert client.post(f"/api/assignments/{graded}/submit").status_code == 200
    page = client.get(f"/a/{graded}/done").data
    assert b"You qualified" not in page and b"the wrong man" not in page


def test_practice_checks_from_one_client_are_throttled_across_worker_ids(app, client):
    training_study(app)
    app.config["PRACTICE_RATE_LIMIT"] = "3 per hour"
    statuses = []
    for worker in ("a", "b", "c"):
        _, token, _ = arrive(client, worker)
        statuses += [check(client, token, 0).status_code, check(client, token, 1).status_code]
    assert statuses[:3] == [200, 200, 200] and set(statuses[3:]) == {429}
