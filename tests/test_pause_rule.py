"""The optional pause rule (app/annotation/pausing.py, docs/METRICS.md "The pause
rule"): set on the Settings page (bad values refused, nothing changed), a worker whose gold F1
falls below the bar after K documents is refused their next document over real HTTP with a
clear message, logged as a ``pause`` action; an unblock stands. SQLite and Postgres. The
expected-F1 bar, applied by the figure job: tests/test_consensus_cli.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Study, WorkerAction
from tests.browser.conftest import LiveServer
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body
from tests.test_worker_management import act, create_researcher, csrf, logged_in

GOLD_TEXT = "Mira met the wrong person at the station."


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def call(base: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """One JSON POST over real HTTP: (status, answer)."""
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body or {}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"{}")


def do_document(base: str, worker: str, document: str, marks=(), texts=None) -> None:
    status, opened = call(
        base, "/api/assignments", {"study": "demo", "document": document, "worker_id": worker}
    )
    assert status == 201, opened
    token = opened["token"]
    for segment, text in marks:
        body = annotation_body(segment, text, "CharE", texts=texts)
        assert call(base, f"/api/assignments/{token}/annotations", body)[0] == 201
    assert call(base, f"/api/assignments/{token}/submit")[0] == 200


def pauses(app) -> list[tuple[str, str, str]]:
    with app.app_context(), session_scope() as session:
        return [
            (a.worker_id, a.actor, a.detail)
            for a in session.scalars(select(WorkerAction).where(WorkerAction.action == "pause"))
        ]


def test_a_worker_below_gold_f1_is_paused_refused_and_logged(app, client):
    from app.documents.records import DocumentInput, GoldSpan
    from app.documents.studies import import_documents

    make_study(app, documents=DOCUMENTS, annotators_per_doc=3)
    gold = DocumentInput(
        "gold-1",
        [GOLD_TEXT],
        gold=[GoldSpan(segment=0, text="the wrong person", category="CharE", votes=3)],
    )
    with app.app_context(), session_scope() as session:
        import_documents(session, session.scalar(select(Study)), [gold], gold=True)
    create_researcher(app, "owner@example.org", admin=True)
    researcher = logged_in(app, "owner@example.org")
    url = "/admin/studies/demo/settings/pause"
    form = {"csrf_token": csrf(researcher), "after": "1", "min_gold_f1": "0.5"}
    for bad, message in (({"min_gold_f1": "2"}, "at most 1"), ({"after": "0"}, "from 1")):
        refused = researcher.post(url, data={**form, **bad})
        assert refused.status_code == 400 and message in refused.get_data(as_text=True)
        with app.app_context(), session_scope() as session:
            assert "pause" not in (session.scalar(select(Study)).settings or {})
    assert researcher.post(url, data=form).status_code == 302
    page = researcher.get("/admin/studies/demo/settings").get_data(as_text=True)
    assert 'name="min_gold_f1" min="0" max="1" step="0.01"\n        value="0.5"' in page

    server = LiveServer(app).start()
    try:
        base = server.url
        # careful finds the gold error (F1 1), slacker marks nothing (F1 0) on gold-1
        do_document(base, "careful", "gold-1", [(0, "the wrong person")], [GOLD_TEXT])
        do_document(base, "slacker", "gold-1")
        assert pauses(app) == [("slacker", "pause rule", "gold F1 0.000 < 0.5 after 1 documents")]
        status, answer = call(base, "/api/assignments", {"study": "demo", "worker_id": "slacker"})
        assert status == 409 and "paused" in answer["error"], answer
        status, answer = call(base, "/api/assignments", {"study": "demo", "worker_id": "careful"})
        assert status == 201, answer
        # the log on the worker's page; an unblock lifts the pause, and the rule does not
        # pause the worker again
        log = researcher.get("/admin/studies/demo/worker", query_string={"id": "slacker"})
        assert "pause rule" in log.get_data(as_text=True)
        assert act(researcher, "slacker", "unblock").status_code == 303
        do_document(base, "slacker", "doc-1")
        status, answer = call(base, "/api/assignments", {"study": "demo", "worker_id": "slacker"})
        assert status == 201, answer
        assert len(pauses(app)) == 1
    finally:
        server.stop()
    # both bars empty: no rule
    assert researcher.post(url, data={**form, "min_gold_f1": ""}).status_code == 302
    with app.app_context(), session_scope() as session:
        assert "pause" not in (session.scalar(select(Study)).settings or {})


def test_the_pause_rule_from_the_command_line(app, database_url):
    """``marginalia study settings --pause-*``: an option not given keeps its value, a bad
    value exits 1 with one line and changes nothing, both bars off remove the rule."""
    from tests.helpers import cli_in_process

    make_study(app)

    def settings(*args):
        done = cli_in_process({"DATABASE_URL": database_url}, "study", "settings", "demo", *args)
        return done.returncode, done.stdout, done.stderr

    code, out, _ = settings("--pause-after", "3", "--pause-below-gold-f1", "0.4", "--json")
    assert code == 0 and json.loads(out)["pause"] == {"after": 3, "min_gold_f1": 0.4}
    code, out, _ = settings("--pause-below-expected-f1", "0.3", "--json")
    assert json.loads(out)["pause"] == {"after": 3, "min_expected_f1": 0.3, "min_gold_f1": 0.4}
    for bad in (("--pause-below-gold-f1", "2"), ("--pause-after", "0")):
        code, out, err = settings(*bad, "--json")
        assert code == 1 and out == "" and len(err.strip().splitlines()) == 1, (bad, err)
    code, out, _ = settings("--json")
    assert json.loads(out)["pause"] == {"after": 3, "min_expected_f1": 0.3, "min_gold_f1": 0.4}
    off = ("--pause-below-gold-f1", "off", "--pause-below-expected-f1", "off", "--json")
    code, out, _ = settings(*off)
    assert code == 0 and json.loads(out)["pause"] is None
