"""``marginalia prolific approve|reject|bonus`` against a local stand-in for Prolific's API
(tests/prolific_standin.py) that checks method, path, token header and JSON body as
Prolific documents them; error answers become one-line CLI errors. The commands run in this
process (tests/helpers.py ``cli_in_process``); test_cli.py runs the console script."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.crowd import platforms
from app.db import session_scope
from app.models import Study
from tests.conftest import make_study
from tests.helpers import DOCUMENTS, cli_in_process
from tests.prolific_standin import ProlificStandIn

MESSAGE = (
    "Your annotations did not mark any of the planted errors that every attentive reader "
    "finds; we cannot accept this submission."
)
WORKERS = {"5f1a": ("st77", "sessA"), "5f1b": ("st77", "sessB"), "6c2d": ("st88", "sessC")}


@pytest.fixture
def prolific_study(app, client, database_url):
    make_study(app, documents=DOCUMENTS)
    with app.app_context(), session_scope() as session:
        platforms.configure_study(session.scalar(select(Study)), platform="prolific")
    for pid, (study_id, session_id) in WORKERS.items():
        query = {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session_id}
        answer = client.get("/s/demo", query_string=query)
        assert answer.status_code == 302
    generic = client.post("/api/assignments", json={"study": "demo", "worker_id": "plain"})
    assert generic.status_code == 201
    return database_url


def run(database_url: str, standin: ProlificStandIn | None, *args: str, token="test-token"):
    env = {
        "DATABASE_URL": database_url,
        "PROLIFIC_API_TOKEN": token,
        "PROLIFIC_API_URL": standin.url if standin is not None else None,
    }
    return cli_in_process(env, "prolific", *args)


def test_approve_sends_the_documented_transition(prolific_study):
    with ProlificStandIn() as standin:
        done = run(
            prolific_study, standin, "approve", "demo", "--worker", "5f1a", "--worker", "6c2d"
        )
    assert done.returncode == 0, done.stderr
    assert standin.problems == []
    assert standin.requests == [
        {"path": "/api/v1/submissions/sessA/transition/", "body": {"action": "APPROVE"}},
        {"path": "/api/v1/submissions/sessC/transition/", "body": {"action": "APPROVE"}},
    ]
    assert "approve submission sessA of 5f1a" in done.stdout


def test_reject_sends_message_and_category_and_checks_them_first(prolific_study):
    with ProlificStandIn() as standin:
        short = run(
            prolific_study,
            standin,
            "reject",
            "demo",
            "--worker",
            "5f1b",
            "--category",
            "FAILED_CHECK",
            "--message",
            "too short",
        )
        unknown = run(
            prolific_study,
            standin,
            "reject",
            "demo",
            "--worker",
            "5f1b",
            "--category",
            "BORED",
            "--message",
            MESSAGE,
        )
        assert standin.requests == []  # refused before any request
        done = run(
            prolific_study,
            standin,
            "reject",
            "demo",
            "--worker",
            "5f1b",
            "--category",
            "FAILED_CHECK",
            "--message",
            MESSAGE,
        )
    assert short.returncode == 1 and "at least 100 characters" in short.stderr
    assert unknown.returncode == 1 and "category must be one of" in unknown.stderr
    assert done.returncode == 0, done.stderr
    assert standin.problems == []
    assert standin.requests == [
        {
            "path": "/api/v1/submissions/sessB/transition/",
            "body": {"action": "REJECT", "message": MESSAGE, "rejection_category": "FAILED_CHECK"},
        }
    ]


def test_reviewed_workers_are_taken_from_the_worker_page(app, prolific_study):
    from app.annotation.reviews import act

    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        act(session, study, "5f1b", "reject", "ada@example.org")
        act(session, study, "6c2d", "approve", "ada@example.org")
    with ProlificStandIn() as standin:
        done = run(prolific_study, standin, "approve", "demo", "--reviewed")
    assert done.returncode == 0, done.stderr
    assert [r["path"] for r in standin.requests] == ["/api/v1/submissions/sessC/transition/"]


def test_reject_reviewed_sends_only_the_workers_rejected_on_the_worker_page(app, prolific_study):
    """``reject --reviewed`` takes the workers rejected on the worker page, never the approved
    ones (a wrong pick here rejects paid work on Prolific)."""
    from app.annotation.reviews import act

    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        act(session, study, "5f1b", "reject", "ada@example.org")
        act(session, study, "6c2d", "approve", "ada@example.org")
    with ProlificStandIn() as standin:
        done = run(
            prolific_study,
            standin,
            *("reject", "demo", "--reviewed", "--category", "FAILED_CHECK", "--message", MESSAGE),
        )
    assert done.returncode == 0, done.stderr
    assert standin.problems == []
    assert standin.requests == [
        {
            "path": "/api/v1/submissions/sessB/transition/",
            "body": {"action": "REJECT", "message": MESSAGE, "rejection_category": "FAILED_CHECK"},
        }
    ]


def test_bonus_sets_up_one_bulk_payment_per_prolific_study_then_pays_it(prolific_study):
    with ProlificStandIn() as standin:
        done = run(
            prolific_study,
            standin,
            "bonus",
            "demo",
            "--amount",
            "1.5",
            "--worker",
            "5f1a",
            "--worker",
            "5f1b",
            "--worker",
            "6c2d",
        )
    assert done.returncode == 0, done.stderr
    assert standin.problems == []
    assert standin.requests == [
        {
            "path": "/api/v1/submissions/bonus-payments/",
            "body": {"study_id": "st77", "csv_bonuses": "5f1a,1.50\n5f1b,1.50\n"},
        },
        {"path": "/api/v1/bulk-bonus-payments/bulk1/pay/", "body": {}},
        {
            "path": "/api/v1/submissions/bonus-payments/",
            "body": {"study_id": "st88", "csv_bonuses": "6c2d,1.50\n"},
        },
        {"path": "/api/v1/bulk-bonus-payments/bulk3/pay/", "body": {}},
    ]


def test_bad_bonus_amounts_send_nothing(prolific_study):
    from app.crowd.prolific_api import bonus_amount
    from app.errors import InvalidInput

    for amount in ("0", "-1", "1.234", "abc", "1000", "NaN", "Infinity"):
        with pytest.raises(InvalidInput, match="bonus amount"):
            bonus_amount(amount)
    assert str(bonus_amount("2")) == "2.00"
    with ProlificStandIn() as standin:
        done = run(
            prolific_study, standin, "bonus", "demo", "--amount", "1.234", "--worker", "5f1a"
        )
    assert done.returncode == 1 and "bonus amount" in done.stderr
    assert standin.requests == []


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (401, {}, "Prolific refused the token (401)"),
        (404, {}, "Prolific has nothing at /api/v1/submissions/sessA/transition/ (404)"),
        (429, {"Retry_After": "30"}, "Prolific is limiting requests (429): try again in 30 s"),
        (500, {}, "Prolific had a server error (500)"),
        (503, {}, "Prolific had a server error (503)"),
    ],
)
def test_error_answers_become_one_line(prolific_study, status, headers, expected):
    with ProlificStandIn() as standin:
        standin.fail_next(status, **headers)
        done = run(prolific_study, standin, "approve", "demo", "--worker", "5f1a")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: " + expected), done.stderr


def test_a_wrong_token_is_refused_by_the_standin(prolific_study):
    with ProlificStandIn() as standin:
        done = run(prolific_study, standin, "approve", "demo", "--worker", "5f1a", token="nope")
    assert done.returncode == 1 and "refused the token (401)" in done.stderr


def test_missing_token_unknown_worker_and_dry_run(prolific_study):
    with ProlificStandIn() as standin:
        no_token = run(prolific_study, standin, "approve", "demo", "--worker", "5f1a", token=None)
        stranger = run(prolific_study, standin, "approve", "demo", "--worker", "nobody")
        generic = run(prolific_study, standin, "approve", "demo", "--worker", "plain")
        nobody = run(prolific_study, standin, "approve", "demo")
        dry = run(prolific_study, standin, "approve", "demo", "--worker", "5f1a", "--dry-run")
        assert standin.requests == []
    assert no_token.returncode == 1 and "PROLIFIC_API_TOKEN" in no_token.stderr
    assert stranger.returncode == 1 and "no Prolific submission" in stranger.stderr
    assert generic.returncode == 1 and "no Prolific submission" in generic.stderr
    assert nobody.returncode == 1 and "--worker" in nobody.stderr
    assert dry.returncode == 0 and "would approve submission sessA" in dry.stdout


def test_unreachable_prolific_is_one_line(prolific_study):
    env_url = "http://127.0.0.1:9"  # discard port: nothing listens
    env = {"DATABASE_URL": prolific_study, "PROLIFIC_API_TOKEN": "t", "PROLIFIC_API_URL": env_url}
    done = cli_in_process(env, "prolific", "approve", "demo", "--worker", "5f1a")
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: cannot reach Prolific at http://127.0.0.1:9")


def test_screen_out_sends_the_screened_out_submissions_per_prolific_study(
    app, client, database_url
):
    """``prolific screen-out``: Prolific's paid screen-out of the workers out of practice
    attempts here, one request per Prolific study."""
    from tests.test_screened_out import SCREEN, fail_practice
    from tests.test_training import training_study

    training_study(app, attempts=1, platform="prolific", screen_out_url=SCREEN)
    fail_practice(client, "p1", attempts=1)
    fail_practice(client, "p2", attempts=1)
    with ProlificStandIn() as standin:
        done = run(database_url, standin, "screen-out", "demo", "--increase-places")
    assert done.returncode == 0, done.stderr
    assert standin.problems == []
    assert standin.requests == [
        {
            "path": "/api/v1/studies/st27/screen-out-submissions/",
            "body": {"submission_ids": ["sep10", "sep20"], "increase_places": True},
        }
    ]
    assert "screen out 2 submissions in Prolific study st27 (p1, p2)" in done.stdout


# --- the API token never leaves for another host ------------------------------------------


class Recorder:
    """Another host: records every request it gets, with its headers."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                seen.append((self.command, self.path, dict(self.headers)))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = _any  # noqa: N815

            def log_message(self, *_args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_host_does_not_get_the_token(status):
    from app.crowd.prolific_api import ProlificClient, ProlificError

    other = Recorder()
    try:
        with ProlificStandIn() as standin:
            standin.fail_next(status, {}, Location=other.url + "/steal")
            client = ProlificClient(token="test-token", base_url=standin.url)
            with pytest.raises(ProlificError, match=f"redirect \\({status}\\).*not followed"):
                client.approve("sessA")
    finally:
        other.close()
    assert other.seen == []


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://api.prolific.com", True),
        ("http://127.0.0.1:8080", True),
        ("http://localhost:9", True),
        ("http://[::1]:9", True),
        ("http://api.prolific.com", False),
        ("http://127.0.0.1.evil.example", False),
        ("ftp://api.prolific.com", False),
        ("https://", False),
    ],
)
def test_prolific_api_url_is_https_or_a_loopback_standin(url, allowed):
    from app.crowd.prolific_api import ProlificClient
    from app.errors import InvalidInput

    if allowed:
        assert ProlificClient(token="t", base_url=url).base_url == url
    else:
        with pytest.raises(InvalidInput, match="must start with https://"):
            ProlificClient(token="t", base_url=url)
