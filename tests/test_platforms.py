"""Crowd platforms over HTTP: Prolific, Mechanical Turk's ExternalQuestion protocol (against a
local stand-in endpoint: AWS closed MTurk on 2026-09-30), the generic completion code, study
settings, and ``mturk create-hits`` through boto3 with botocore's Stubber."""

from __future__ import annotations

import threading
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from app.crowd import platforms
from app.db import session_scope
from app.errors import InvalidInput
from app.models import Annotation, Assignment, Study
from tests.conftest import make_study

DOCS = [
    ("doc-1", ["The first segment of the text.", "A second segment follows."]),
    ("doc-2", ["Another document.", "With two segments."]),
]
MTURK_CSP = "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com"


def configure(app, slug: str = "demo", **changes) -> dict:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        return platforms.configure_study(study, **changes)


def token_of(answer) -> str:
    assert answer.status_code == 302, answer.data[:300]
    return answer.headers["Location"].split("/a/")[1].split("/")[0]


def stored(app, token: str) -> Assignment:
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment).where(Assignment.token == token))
        session.expunge(row)
        return row


def count_assignments(app) -> int:
    with app.app_context(), session_scope() as session:
        return session.scalar(select(func.count()).select_from(Assignment))


# --- Prolific ------------------------------------------------------------------------------

PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d", "STUDY_ID": "st-77", "SESSION_ID": "sess-1"}


def test_prolific_worker_resume_and_completion_redirect(app, client):
    make_study(app, documents=DOCS, annotators_per_doc=1)
    configure(
        app,
        platform="prolific",
        completion_url="https://app.prolific.com/submissions/complete?cc=C1ABCDEF",
    )
    token = token_of(client.get("/s/demo", query_string=PROLIFIC))
    row = stored(app, token)
    assert row.worker_id == "5f1a2b3c4d" and row.platform == "prolific"
    assert row.platform_data == {"study_id": "st-77", "session_id": "sess-1"}
    assert "Set-Cookie" not in client.get(f"/a/{token}").headers  # identified by token only
    # the same session resumes the same assignment
    assert token_of(client.get("/s/demo", query_string=PROLIFIC)) == token
    answer = client.post(f"/api/assignments/{token}/submit").get_json()
    assert answer["redirect_url"] == "https://app.prolific.com/submissions/complete?cc=C1ABCDEF"
    # coming back on the same session after submitting: done page, then on to Prolific
    back = client.get("/s/demo", query_string=PROLIFIC)
    assert back.headers["Location"].endswith(f"/a/{token}/done")
    done = client.get(f"/a/{token}/done")
    assert done.status_code == 302
    assert done.headers["Location"] == "https://app.prolific.com/submissions/complete?cc=C1ABCDEF"


def test_prolific_completion_url_may_carry_the_workers_own_code(app, client):
    make_study(app, documents=DOCS)
    configure(app, platform="prolific", completion_url="https://example.org/finish?code={code}")
    token = token_of(client.get("/s/demo", query_string=PROLIFIC))
    answer = client.post(f"/api/assignments/{token}/submit").get_json()
    assert answer["redirect_url"] == f"https://example.org/finish?code={answer['completion_code']}"


def test_prolific_link_without_pid_value_is_refused(app, client):
    make_study(app, documents=DOCS)
    answer = client.get("/s/demo", query_string={**PROLIFIC, "PROLIFIC_PID": ""})
    assert answer.status_code == 400 and b"PROLIFIC_PID" in answer.data
    assert count_assignments(app) == 0


# --- Mechanical Turk -------------------------------------------------------------------------


def test_mturk_preview_is_read_only_and_creates_nothing(app, client):
    make_study(app, documents=DOCS)
    configure(app, platform="mturk")
    answer = client.get(
        "/s/demo",
        query_string={
            "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE",
            "hitId": "HIT1",
        },
    )
    assert answer.status_code == 200
    page = answer.get_data(as_text=True)
    assert "The first segment of the text." in page and "Preview" in page
    assert "/a/" not in page and "annot-form" not in page  # no token, no annotation form
    assert count_assignments(app) == 0
    assert MTURK_CSP in answer.headers["Content-Security-Policy"]
    assert "X-Frame-Options" not in answer.headers  # it would forbid MTurk's frame


def mturk_params(submit_to: str = "https://workersandbox.mturk.com", **extra) -> dict:
    return {
        "assignmentId": "ASG-1",
        "hitId": "HIT-1",
        "workerId": "AWORKER1",
        "turkSubmitTo": submit_to,
        **extra,
    }


class FormReader(HTMLParser):
    """The first form of a page: its action and hidden fields."""

    def __init__(self):
        super().__init__()
        self.action = None
        self.method = None
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and self.action is None:
            self.action, self.method = attrs.get("action"), attrs.get("method")
        if tag == "input" and attrs.get("type") == "hidden" and attrs.get("name"):
            self.fields[attrs["name"]] = attrs.get("value", "")


def test_mturk_accepted_assignment_done_page_posts_back(app, client):
    make_study(app, documents=DOCS)
    configure(app, platform="mturk")
    token = token_of(client.get("/s/demo", query_string=mturk_params()))
    row = stored(app, token)
    assert row.worker_id == "AWORKER1" and row.platform == "mturk"
    assert row.platform_data["assignment_id"] == "ASG-1"
    annotate = client.get(f"/a/{token}")
    assert MTURK_CSP in annotate.headers["Content-Security-Policy"]
    code = client.post(f"/api/assignments/{token}/submit").get_json()
    assert code["redirect_url"] is None  # the done page reports to MTurk
    done = client.get(f"/a/{token}/done")
    assert MTURK_CSP in done.headers["Content-Security-Policy"]
    form = FormReader()
    form.feed(done.get_data(as_text=True))
    assert form.action == "https://workersandbox.mturk.com/mturk/externalSubmit"
    assert form.method == "post"
    assert form.fields == {"assignmentId": "ASG-1", "completion_code": code["completion_code"]}
    assert b"js/mturk-submit.js" in done.data


def test_mturk_reaccept_updates_the_assignment_id(app, client):
    make_study(app, documents=DOCS)
    configure(app, platform="mturk")
    first = token_of(client.get("/s/demo", query_string=mturk_params()))
    # A new assignmentId alone (anyone can make one up) no longer gets the token
    # back: the page says the work is in progress elsewhere ...
    elsewhere = client.get("/s/demo", query_string=mturk_params(assignmentId="ASG-2"))
    assert elsewhere.status_code == 409 and first.encode() not in elsewhere.data
    assert stored(app, first).platform_data["assignment_id"] == "ASG-1"
    # ... and the browser that kept the token presents it and resumes, with the new id
    resumed = client.get("/s/demo", query_string=mturk_params(assignmentId="ASG-2", resume=first))
    assert token_of(resumed) == first
    assert stored(app, first).platform_data["assignment_id"] == "ASG-2"


def test_mturk_submit_target_must_be_an_mturk_origin(app, client):
    make_study(app, documents=DOCS)
    configure(app, platform="mturk")
    answer = client.get("/s/demo", query_string=mturk_params("https://evil.example.org"))
    assert answer.status_code == 400 and b"not a Mechanical Turk address" in answer.data
    assert count_assignments(app) == 0


class StandIn:
    """A tiny local HTTP server standing in for MTurk's externalSubmit: records each POST."""

    def __init__(self):
        posts = self.posts = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                posts.append((self.path, dict(urllib.parse.parse_qsl(body))))
                page = b"<!doctype html><title>MTurk stand-in</title><h1>HIT submitted</h1>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    server = StandIn()
    yield server
    server.close()


def test_mturk_protocol_against_a_local_stand_in(app, client, stand_in):
    app.config["MTURK_SUBMIT_ORIGINS"] = [stand_in.url]
    make_study(app, documents=DOCS)
    configure(app, platform="mturk")
    token = token_of(client.get("/s/demo", query_string=mturk_params(stand_in.url)))
    body = {"segment": 0, "start": 4, "end": 9, "text": "first", "category": "GramE"}
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    code = client.post(f"/api/assignments/{token}/submit").get_json()["completion_code"]
    form = FormReader()
    form.feed(client.get(f"/a/{token}/done").get_data(as_text=True))
    assert form.action == stand_in.url + "/mturk/externalSubmit"
    data = urllib.parse.urlencode(form.fields).encode()
    with urllib.request.urlopen(urllib.request.Request(form.action, data=data)) as answer:
        assert answer.status == 200
    assert stand_in.posts == [
        ("/mturk/externalSubmit", {"assignmentId": "ASG-1", "completion_code": code})
    ]


# --- generic and framing -------------------------------------------------------------------


def test_generic_done_page_shows_the_code_and_refuses_framing(app, client):
    make_study(app, documents=DOCS)
    token = token_of(client.get("/s/demo?worker_id=w1"))
    assert "frame-ancestors 'none'" in client.get(f"/a/{token}").headers["Content-Security-Policy"]
    code = client.post(f"/api/assignments/{token}/submit").get_json()["completion_code"]
    done = client.get(f"/a/{token}/done")
    assert done.status_code == 200 and code.encode() in done.data
    assert "frame-ancestors 'none'" in done.headers["Content-Security-Policy"]
    assert done.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in client.get("/s/demo").headers["Content-Security-Policy"]


# --- token isolation ---------------------------------------------------------------------------


def test_token_a_cannot_read_or_change_assignment_b(app, client):
    make_study(app, documents=DOCS)
    a = token_of(client.get("/s/demo?worker_id=alice"))
    # bob on the same document as alice (the study takes 3 annotators per document)
    same_document = {"study": "demo", "document": DOCS[0][0], "worker_id": "bob"}
    b = client.post("/api/assignments", json=same_document).get_json()["token"]
    body = {"segment": 0, "start": 4, "end": 9, "text": "first", "category": "GramE"}
    b_note = client.post(f"/api/assignments/{b}/annotations", json=body).get_json()["id"]
    # A sees only its own (empty) assignment, never B's annotation
    payload = client.get(f"/api/assignments/{a}").get_json()
    assert payload["token"] == a and payload["annotations"] == []
    # A cannot remove B's annotation by id
    assert client.delete(f"/api/assignments/{a}/annotations/{b_note}").status_code == 404
    with app.app_context(), session_scope() as session:
        assert session.get(Annotation, b_note).removed_at is None
    # A submitting does not submit B
    client.post(f"/api/assignments/{a}/submit")
    assert stored(app, b).status == "active"
    # an unknown or truncated token reads nothing
    assert client.get(f"/api/assignments/{b[:-1]}").status_code == 404
    assert client.get(f"/a/{b[:-1]}").status_code == 404


# --- settings ------------------------------------------------------------------------------------


def test_configure_study_validates_and_describes(app):
    make_study(app, documents=DOCS)
    settings = configure(
        app,
        platform="prolific",
        abandon_after_minutes=30,
        hold_minutes=2,
        randomise_conditions=True,
        qualification_f1=0.6,
    )
    assert settings == {
        "platform": "prolific",
        "completion_url": None,
        "annotators_per_doc": 3,
        "suggestions": "hidden",
        "abandon_after_minutes": 30,
        "hold_minutes": 2,
        "randomise_conditions": True,
        "qualification": {"min_f1": 0.6, "attempts": 2},
        "max_hints_per_segment": 3,
        "min_hint_score": 0.0,
        "hints": "balanced",
        "screen_out_url": None,
        "min_catch_rate": None,
        "pause": None,
    }
    assert configure(app, hints="precise")["hints"] == "precise"
    for bad, message in [
        ({"hints": "everything"}, "hints must be one of precise, balanced, thorough"),
        ({"platform": "mechanical"}, "platform must be one of"),
        ({"completion_url": "javascript:alert(1)"}, r"must be an http\(s\) address"),
        ({"qualification_f1": 1.5}, "more than 0 and at most 1"),
        ({"abandon_after_minutes": 0}, "between 1 minute and 7 days"),
        ({"hold_minutes": 0.5}, "between 1 and 60 minutes"),
        ({"platform": "mturk", "completion_url": "https://x.org/done"}, "leave the completion"),
    ]:
        with pytest.raises(InvalidInput, match=message):
            configure(app, **bad)
    assert configure(app, qualification_f1=None)["qualification"] is None


def test_cli_study_settings(app, database_url, monkeypatch):
    from app.cli import main

    make_study(app, documents=DOCS)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "study",
            "settings",
            "demo",
            "--platform",
            "prolific",
            "--completion-url",
            "https://app.prolific.com/submissions/complete?cc=ABC",
            "--qualification-f1",
            "0.5",
            "--randomise-conditions",
            "--hints",
            "thorough",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "platform: prolific" in result.output and "randomise_conditions: True" in result.output
    assert "hints: thorough" in result.output
    bad = runner.invoke(main, ["study", "settings", "demo", "--qualification-f1", "lots"])
    assert bad.exit_code == 1 and "is not a number" in bad.output
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        assert study.platform == "prolific"
        assert study.settings["qualification"] == {"min_f1": 0.5, "attempts": 2}
        assert study.settings["hints"] == "thorough"


# --- marginalia mturk create-hits ------------------------------------------------------------------


def _study(app) -> Study:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        session.expunge(study)
        return study


def test_create_hits_sends_external_question_with_unique_tokens(app):
    from botocore.stub import Stubber

    from app.crowd.mturk import create_hits, external_question, make_client

    make_study(app, documents=DOCS, annotators_per_doc=3)
    study = _study(app)
    client = make_client(sandbox=True, aws_access_key_id="AKIDTEST", aws_secret_access_key="secret")
    assert client.meta.endpoint_url == "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
    question = external_question("https://annotate.example.org/s/demo")
    assert "<ExternalURL>https://annotate.example.org/s/demo</ExternalURL>" in question
    with Stubber(client) as stub:
        for i in range(2):
            stub.add_response(
                "create_hit",
                {"HIT": {"HITId": f"HIT{i}", "HITGroupId": "GROUP"}},
                {
                    "Title": study.title,
                    "Description": "Read a text one part at a time and mark the errors you "
                    "find in it.",
                    "Keywords": "annotation, text, errors, summaries",
                    "Reward": "1.50",
                    "MaxAssignments": 3,
                    "LifetimeInSeconds": 604800,
                    "AssignmentDurationInSeconds": 7200,
                    "AutoApprovalDelayInSeconds": 259200,
                    "Question": question,
                    "RequesterAnnotation": "marginalia:demo",
                    "UniqueRequestToken": f"marginalia:demo:1:{i}",
                },
            )
        stub.add_client_error(
            "create_hit",
            service_error_code="RequestError",
            service_message="The UniqueRequestToken marginalia:demo:1:2 was already used.",
        )
        result = create_hits(
            client, study, count=3, reward=1.5, base_url="https://annotate.example.org/"
        )
        stub.assert_no_pending_responses()
    assert result.created == ["HIT0", "HIT1"] and result.group_id == "GROUP"
    assert result.skipped == ["marginalia:demo:1:2"]


def test_create_hits_production_endpoint_and_checks(app):
    from app.crowd.mturk import create_hits, make_client, request_token, reward_text

    client = make_client(sandbox=False, aws_access_key_id="A", aws_secret_access_key="B")
    assert client.meta.endpoint_url == "https://mturk-requester.us-east-1.amazonaws.com"
    assert reward_text("1.5") == "1.50" and reward_text(0.125) == "0.13"
    with pytest.raises(InvalidInput):
        reward_text("free")
    assert len(request_token("x" * 100, "batch", 7)) <= 64
    make_study(app, documents=DOCS)
    with pytest.raises(InvalidInput, match="https://"):
        create_hits(client, _study(app), count=1, reward=1, base_url="http://insecure.org")


def test_cli_create_hits_refuses_a_plain_http_base_url(app, database_url, monkeypatch):
    from app.cli import main

    make_study(app, documents=DOCS)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "A")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "B")
    result = CliRunner().invoke(
        main,
        [
            "mturk",
            "create-hits",
            "demo",
            "--count",
            "2",
            "--reward",
            "1.50",
            "--base-url",
            "http://x.org",
        ],
    )
    assert result.exit_code == 1 and "https://" in result.output


def test_after_submit_redirect_sends_qualification_and_mturk_work_to_the_done_page(app, client):
    from app.annotation.submit import after_submit_redirect
    from app.documents.studies import import_documents
    from app.formats import DocumentInput, GoldSpan

    make_study(app, documents=DOCS)
    configure(
        app,
        platform="prolific",
        completion_url="https://example.org/done?cc=X",
        qualification_f1=0.5,
    )
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        import_documents(
            session,
            study,
            [DocumentInput("gold-1", ["Anna met Bob."], gold=[GoldSpan(0, "Bob", "CharE", 2)])],
            gold=True,
        )
    token = token_of(client.get("/s/demo", query_string=PROLIFIC))
    client.post(f"/api/assignments/{token}/submit")

    def redirect_of(platform: str | None = None):
        with app.app_context(), session_scope() as session:
            row = session.scalar(select(Assignment).where(Assignment.token == token))
            assert row.document.external_id == "gold-1"
            if platform:
                row.platform = platform
            answer = after_submit_redirect(row)
            session.rollback()
            return answer

    assert redirect_of() is None  # the done page scores it and lets the worker go on
    configure(app, qualification_f1=None)
    assert redirect_of() == "https://example.org/done?cc=X"
    assert redirect_of("mturk") is None
