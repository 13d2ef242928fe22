"""The worker's journey in Chromium over real HTTP: a Prolific worker consents,
annotates, answers the questionnaires and is returned to Prolific; a paused study's arrival
page and the no-documents-left page return workers too. Prolific is a stand-in: Playwright
answers every request to app.prolific.com and records it (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.documents import journey
from app.models import Consent, QuestionnaireAnswer, Study
from tests.browser.helpers import log_in, wait_loaded
from tests.conftest import make_study
from tests.test_researcher_isolation import ALICE, PASSWORD, create_researcher

pytestmark = pytest.mark.browser

QUESTIONNAIRE = """\
consent: |
  ## Taking part
  You will read short stories and mark errors. Your answers are **anonymous**.
  <script>document.title = 'owned'</script>
consent_button: I agree to take part
after_document:
  - id: difficulty
    type: likert
    prompt: The story was easy to follow.
    scale: 5
    low: Strongly disagree
    high: Strongly agree
after_study:
  - id: device
    type: choice
    prompt: Which device did you use?
    options: [Computer, Tablet, Phone]
  - id: feedback
    type: text
    prompt: Anything we should know?
    required: false
"""
DOCUMENTS = [
    ("story-1", ["Mara keeps the lighthouse on the cliff.", "Her brother visits in spring."]),
    ("story-2", ["The ferry was late again.", "Nobody on the pier minded."]),
]
WIDTHS = (1440, 1024, 390)


def shoot(page, artifacts: Path, name: str) -> None:
    """Full-page screenshots at 1440, 1024 and 390 px wide (and back to 1280)."""
    folder = artifacts / "journey"
    folder.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(folder / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})


@pytest.fixture
def prolific(pw_page):
    """Requests to app.prolific.com, answered locally with a page saying where they went."""
    visits: list[str] = []

    def answer(route):
        visits.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1>Prolific stand-in</h1>")

    pw_page.route("https://app.prolific.com/**", answer)
    return visits


def _configure(app, **changes) -> None:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "demo"))
        study.platform = "prolific"
        study.completion_url = "https://app.prolific.com/submissions/complete?cc=DONE1"
        for key, value in changes.items():
            if key == "questionnaire":
                journey.set_definition(study, value, "q.yaml")
            elif key == "instructions":
                journey.set_instructions(study, value)
            elif key == "status":
                study.status = value
            else:
                study.settings = {**(study.settings or {}), key: value}


def _arrive(page, base: str, pid: str) -> None:
    page.goto(f"{base}/s/demo?PROLIFIC_PID={pid}&STUDY_ID=st1&SESSION_ID=se-{pid}")


def test_consent_document_questionnaires_and_back_to_prolific(
    app, live_server, pw_page, prolific, artifacts
):
    make_study(app, documents=DOCUMENTS)
    _configure(
        app,
        questionnaire=QUESTIONNAIRE,
        instructions="Read **each** segment.\n\n<img src=x onerror=alert(1)>",
    )
    page = pw_page
    _arrive(page, live_server.url, "P1")
    page.wait_for_selector("#consent-text")
    assert "anonymous" in page.inner_text("#consent-text")
    assert page.locator("#consent-text strong").inner_text() == "anonymous"
    assert page.locator("#consent-text script").count() == 0 and page.title() != "owned"
    shoot(page, artifacts, "consent")

    page.click("#consent-agree")
    wait_loaded(page)
    page.wait_for_selector("#instructions[open] #study-instructions")  # open on arrival
    assert page.locator("#study-instructions strong").inner_text() == "each"
    assert page.locator("#study-instructions img").count() == 0
    assert "<img src=x" in page.inner_text("#study-instructions")  # shown as text
    shoot(page, artifacts, "annotate-instructions")
    page.click("#next-button")
    page.wait_for_selector("#submit-button:not([hidden])")
    page.click("#submit-button")

    page.wait_for_selector("#questionnaire")
    assert "easy to follow" in page.inner_text("#questionnaire")
    shoot(page, artifacts, "questionnaire-document")
    page.click("#questionnaire-submit")  # nothing chosen: refused with a message
    page.wait_for_selector("#questionnaire-error")
    assert "please answer" in page.inner_text("#questionnaire-error")
    page.check('input[name="difficulty"][value="4"]')
    page.click("#questionnaire-submit")

    page.wait_for_selector("text=Which device did you use?")
    page.check('input[name="device"][value="Phone"]')
    page.fill('textarea[name="feedback"]', "=SUM(A1) fine")
    shoot(page, artifacts, "questionnaire-study")
    page.click("#questionnaire-submit")
    page.wait_for_url("https://app.prolific.com/**")
    assert prolific == ["https://app.prolific.com/submissions/complete?cc=DONE1"]

    with app.app_context(), session_scope() as session:
        consent = session.scalar(select(Consent))
        assert (consent.worker_id, consent.agreed) == ("P1", True)
        answers = {
            (a.stage, a.question): a.answer for a in session.scalars(select(QuestionnaireAnswer))
        }
        assert answers == {
            ("document", "difficulty"): "4",
            ("study", "device"): "Phone",
            ("study", "feedback"): "=SUM(A1) fine",
        }


def test_declining_consent_returns_to_prolific(app, live_server, pw_page, prolific, artifacts):
    make_study(app, documents=DOCUMENTS)
    _configure(app, questionnaire=QUESTIONNAIRE, return_codes={"declined": "NOCONSENT"})
    page = pw_page
    _arrive(page, live_server.url, "P2")
    page.click("#consent-decline")
    page.wait_for_selector("#returned[data-reason=declined]")
    shoot(page, artifacts, "consent-declined")
    page.click("#return-link")
    page.wait_for_url("https://app.prolific.com/**")
    assert prolific == ["https://app.prolific.com/submissions/complete?cc=NOCONSENT"]


def test_paused_study_arrival_page(app, live_server, pw_page, prolific, artifacts):
    make_study(app, documents=DOCUMENTS)
    _configure(app, status="paused", return_codes={"unavailable": "PAUSED"})
    page = pw_page
    _arrive(page, live_server.url, "P3")
    page.wait_for_selector("#returned[data-reason=unavailable]")
    assert "paused" in page.inner_text("#return-message")
    shoot(page, artifacts, "paused")
    page.click("#return-link")
    page.wait_for_url("https://app.prolific.com/**")
    assert prolific == ["https://app.prolific.com/submissions/complete?cc=PAUSED"]
    # a generic worker sees the page too, without a code: no ID form is offered
    page.goto(f"{live_server.url}/s/demo")
    page.wait_for_selector("#returned")
    assert page.locator("#worker-id").count() == 0


def test_no_documents_left_page(app, live_server, pw_page, prolific, artifacts):
    make_study(app, documents=DOCUMENTS[:1], annotators_per_doc=1)
    _configure(app, return_codes={"no_places": "NOPLACES"})
    first = pw_page.context.new_page()
    _arrive(first, live_server.url, "P4")
    wait_loaded(first)
    first.click("#next-button")  # engaged: the slot is taken, not a brief hold
    first.wait_for_function("() => document.getElementById('prev-button').disabled === false")
    page = pw_page
    _arrive(page, live_server.url, "P5")
    page.wait_for_selector("#returned[data-reason=no_places]")
    assert page.inner_text("h1") == "No documents left"
    shoot(page, artifacts, "no-places")
    page.click("#return-link")
    page.wait_for_url("https://app.prolific.com/**")
    assert prolific == ["https://app.prolific.com/submissions/complete?cc=NOPLACES"]


def test_researcher_manages_and_previews(app, live_server, pw_page, artifacts):
    create_researcher(app, ALICE, admin=True)
    make_study(app, documents=DOCUMENTS)
    _configure(app, questionnaire=QUESTIONNAIRE, instructions="Read **each** segment.")
    page = pw_page
    log_in(page, live_server.url, ALICE, PASSWORD)
    page.goto(f"{live_server.url}/admin/studies/demo")
    page.click("#manage-link")
    page.wait_for_selector("#status-heading")
    page.click("#action-pause")
    page.wait_for_selector("#study-status:text('paused')")
    shoot(page, artifacts, "manage")
    page.click("#action-archive")  # the box is not ticked: the browser refuses
    assert page.inner_text("#study-status") == "paused"
    page.check("#archive-confirm")
    page.click("#action-archive")
    page.wait_for_selector("#study-status:text('archived')")
    page.click("#preview-link")
    page.wait_for_selector("#preview-consent")
    assert page.locator("#preview-instructions-text strong").inner_text() == "each"
    shoot(page, artifacts, "worker-preview")
    page.goto(f"{live_server.url}/admin/")
    assert page.locator("a.study-link").count() == 0
    page.click("#studies-filter a")
    assert page.locator("a.study-link").count() == 1
    shoot(page, artifacts, "studies-archived")
