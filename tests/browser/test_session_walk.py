"""A Prolific study of three documents per session, in Chromium over real HTTP, on SQLite and
Postgres (the platform's completion page stood in for by a route; approving the sessions
through the Prolific stand-in, tests/prolific_standin.py).

* ``pA`` consents once, does the practice document once (feedback) and the qualification
  document, annotates three documents (the annotate page says "Document n of 3", the page
  between offers the next), answers the study's questions once and reaches the completion
  URL once, with one code for the three documents;
* ``pB`` does two documents, opens the third and leaves: what they submitted counts, the
  open document goes to the next participant;
* ``pC`` gets ``pB``'s third document, closes the browser at their second, comes back
  by the same SESSION_ID in a new one, finishes it, and finds no document left: the session
  ends early with its code and says so.

The researcher then sees the sessions on the Workers page (finished, returned, finished),
the assignment export's ``session`` column, the dashboard's time and pay. Screenshots at
1440, 1024 and 390 px of the pages a session adds (SQLite run only; layout does not depend
on the database), each checked for overflow.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from app.annotation.session_settings import configure_sessions
from app.crowd import platforms
from app.db import session_scope
from app.documents import journey
from app.documents.studies import get_study, import_documents
from app.formats import DocumentInput, GoldSpan
from app.models import Assignment, Consent, Document
from tests.browser.helpers import category_button, drag_select, log_in, wait_loaded, wait_saved
from tests.browser.test_paid_study_walk import shoot
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import cli_in_process
from tests.prolific_standin import ProlificStandIn

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "sessions@example.org", "researcher password 31"
DONE = "https://app.prolific.com/submissions/complete?cc=SESS3"
STORY = "Mara keeps the lighthouse. She has never once seen the sea."
PRACTICE = "Anna met Bob. Bob said hello to the wrong person."
QUALIFY = "Tom saw Eve. Eve gave the keys to the wrong man."
QUESTIONS = """\
consent: |
  You are invited to take part in a study of generated stories.
after_study:
  - id: device
    type: choice
    options: [Computer, Tablet, Phone]
    prompt: Which device did you use?
"""


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def set_up(app) -> None:
    """Seven real documents of one annotator each, a practice and a qualification document,
    three documents per session, a consent text and one question after the study."""
    from app.researchers.accounts import create_researcher

    make_study(
        app,
        documents=[(f"r{n}", [STORY]) for n in range(1, 8)],
        annotators_per_doc=1,
        suggestions="off",
    )
    practice = DocumentInput(
        "practice", [PRACTICE], gold=[GoldSpan(0, "the wrong person", "CharE", 1)]
    )
    qualify = DocumentInput("qualify", [QUALIFY], gold=[GoldSpan(0, "the wrong man", "CharE", 1)])
    with app.app_context(), session_scope() as session:
        study = get_study(session, "demo")
        import_documents(session, study, [practice], gold=True, practice=True)
        import_documents(session, study, [qualify], gold=True)
        platforms.configure_study(
            study, platform="prolific", completion_url=DONE, qualification_f1=0.5
        )
        configure_sessions(study, documents=3, reward="2.40")
        journey.set_definition(study, QUESTIONS, "q.yaml")
        create_researcher(session, EMAIL, PASSWORD, role="admin")


def link(base: str, worker: str) -> str:
    return f"{base}/s/demo?PROLIFIC_PID={worker}&STUDY_ID=st31&SESSION_ID=se{worker}"


def submit_and_wait(page, selector: str) -> None:
    page.click("#submit-button")
    page.wait_for_selector(selector)


def consent_and_train(page, base: str, worker: str, seen: list[str]) -> None:
    """The link, the consent form (agreed), the practice document (its answers shown), the
    qualification document marked right; ends on the first real document."""
    page.goto(link(base, worker))
    page.wait_for_selector("#consent")
    with page.expect_navigation():
        page.click("#consent-agree")
    wait_loaded(page)
    seen.append("consent")
    submit_and_wait(page, "#practice-panel:not([hidden])")
    submit_and_wait(page, "#qualification")
    with page.expect_navigation():
        page.click("#continue-link")
    wait_loaded(page)
    drag_select(page, 0, "the wrong man")
    category_button(page, "CharE").click()
    page.click("#add-button")
    wait_saved(page)
    submit_and_wait(page, "#qualification")
    assert "You qualified" in page.inner_text("#qualification")
    with page.expect_navigation():
        page.click("#continue-link")
    wait_loaded(page)


def next_document(page) -> None:
    with page.expect_navigation():
        page.click("#next-document")
    wait_loaded(page)


def progress(page) -> str:
    return page.inner_text("#session-progress")


def documents_of(app, worker: str) -> list[tuple[str, str, str | None, int | None]]:
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(
                Document.external_id,
                Assignment.status,
                Assignment.completion_code,
                Assignment.session_id,
            )
            .join(Document, Document.id == Assignment.document_id)
            .where(Assignment.worker_id == worker)
            .order_by(Assignment.id)
        ).all()
    return [tuple(row) for row in rows]


def test_sessions_of_three_documents(app, live_server, pw_browser, artifacts, database_url):
    set_up(app)
    shots = None if database_url.startswith("postgresql") else artifacts / "session-walk"
    base = live_server.url
    errors: list[str] = []
    completed: list[str] = []

    def participant():
        context = pw_browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # every request to Prolific, a redirect's too (which no route intercepts)
        page.on(
            "request",
            lambda request: (
                completed.append(request.url)
                if request.url.startswith("https://app.prolific.com/")
                else None
            ),
        )
        page.route(
            "https://app.prolific.com/**",
            lambda route: route.fulfill(status=200, content_type="text/html", body="<h1>P</h1>"),
        )
        return context, page

    # --- pA: consent once, practice once, three documents, the questions once, one code ---
    context, page = participant()
    seen: list[str] = []
    consent_and_train(page, base, "pA", seen)
    assert progress(page) == "Document 1 of 3"
    for number in (1, 2):
        submit_and_wait(page, "#session-next")
        assert page.inner_text("#session-next h1") == f"Document {number} of 3 done"
        if number == 2:
            shoot(page, shots, "session-between")
        next_document(page)
        assert progress(page) == f"Document {number + 1} of 3"
        if number == 1:
            shoot(page, shots, "session-annotate")
    submit_and_wait(page, "#questionnaire")
    assert "Which device did you use?" in page.inner_text("#questionnaire")
    page.check('input[name="device"][value="Computer"]')
    with page.expect_request("https://app.prolific.com/**"):
        page.click("#questionnaire-submit")
    assert completed == [DONE]
    context.close()
    done = documents_of(app, "pA")
    assert [d for d, _, _, _ in done] == ["practice", "qualify", "r1", "r2", "r3"]
    codes = {code for _, _, code, _ in done[2:]}
    assert len(codes) == 1 and None not in codes and done[0][2] is None
    assert len({session for *_, session in done}) == 1 and seen == ["consent"]
    with app.app_context(), session_scope() as session:
        assert session.execute(select(Consent.worker_id, Consent.agreed)).all() == [("pA", True)]

    # --- pB: two documents, the third opened, then gone -----------------------------------------
    context, page = participant()
    consent_and_train(page, base, "pB", [])
    for _ in (1, 2):
        submit_and_wait(page, "#session-next")
        next_document(page)
    assert progress(page) == "Document 3 of 3"
    context.close()
    moment = datetime.now(UTC) - timedelta(hours=1)  # an hour on: past the abandon timeout
    with app.app_context(), session_scope() as session:
        for when in ("last_seen_at", "engaged_at", "submitted_at"):
            column = getattr(Assignment, when)
            session.execute(
                update(Assignment)
                .where(Assignment.worker_id == "pB", column.is_not(None))
                .values({when: moment})
            )

    # --- pC: pB's third document as their second; resumed by SESSION_ID; no document left ---------
    context, page = participant()
    consent_and_train(page, base, "pC", [])
    submit_and_wait(page, "#session-next")
    next_document(page)
    assert progress(page) == "Document 2 of 3"
    resumed = page.url
    context.close()
    context, page = participant()  # another browser, the same Prolific link
    page.goto(link(base, "pC"))
    wait_loaded(page)
    assert page.url == resumed and progress(page) == "Document 2 of 3"
    submit_and_wait(page, "#session-next")
    with page.expect_navigation():
        page.click("#next-document")
    page.wait_for_selector("#questionnaire")  # the study's questions end the session
    page.check('input[name="device"][value="Phone"]')
    with page.expect_navigation():
        page.click("#questionnaire-submit")
    page.wait_for_selector("#ended-early")
    assert "ended after 2 of 3 documents" in page.inner_text("#ended-early")
    shoot(page, shots, "session-ended-early")
    assert [d for d, s, _, _ in documents_of(app, "pB") if s == "submitted"][2:] == ["r4", "r5"]
    pb_third = next(d for d, s, _, _ in documents_of(app, "pB") if s == "abandoned")
    # pB's third went to pC (first or second: whenever a release of stale holds came due)
    real = sorted(d for d, _, _, _ in documents_of(app, "pC") if d.startswith("r"))
    assert real == sorted([pb_third, "r7"])
    page.click("#completion-link")
    page.wait_for_url("https://app.prolific.com/**")
    assert completed == [DONE, DONE]
    context.close()

    # --- the researcher: sessions, the export's session column, time and pay -------------------
    context = pw_browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, base, EMAIL, PASSWORD)
    page.goto(f"{base}/admin/studies/demo/workers")
    states = {
        row.get_attribute("data-session-worker"): row.get_attribute("data-session-state")
        for row in page.locator("#sessions-table tbody tr").all()
    }
    assert states == {"pA": "finished", "pB": "returned", "pC": "finished"}
    page.locator("#sessions").scroll_into_view_if_needed()
    shoot(page, shots, "workers-sessions")
    exported = page.request.get(f"{base}/admin/studies/demo/export.assignments-csv").text()
    rows = list(csv.DictReader(io.StringIO(exported)))
    sessions = {w: {r["session"] for r in rows if r["worker_id"] == w} for w in states}
    assert all(len(found) == 1 and found != {""} for found in sessions.values())
    assert len({next(iter(found)) for found in sessions.values()}) == 3
    page.goto(f"{base}/admin/studies/demo")
    assert page.inner_text("#hourly-rate").endswith("GBP")
    shoot(page, shots, "dashboard-pay")
    page.goto(f"{base}/admin/studies/demo/settings")
    assert page.input_value('input[name="documents_per_session"]') == "3"
    shoot(page, shots, "settings-sessions")
    context.close()

    # --- approving the sessions through Prolific's API: one request per SESSION_ID ------------
    with ProlificStandIn() as standin:
        env = {"DATABASE_URL": database_url, "PROLIFIC_API_TOKEN": "test-token"}
        approved = cli_in_process(
            {**env, "PROLIFIC_API_URL": standin.url},
            "prolific",
            "approve",
            "demo",
            "--worker",
            "pA",
        )
    assert approved.returncode == 0, approved.stderr
    assert [r["path"] for r in standin.requests] == ["/api/v1/submissions/sepA/transition/"]
    assert errors == []
