"""The whole paid-study loop in Chromium over real HTTP: a worker arriving
from Prolific consents, fails a practice document once (feedback on the missed span), passes the
second attempt, annotates a real document carrying an attention check (and misses it), answers
the questionnaires and is returned to Prolific; the researcher sees the worker's time, catch
rate and flag, rejects them, and the exports (annotation CSV / JSONL / SNaC, assignment CSV),
the agreement of ``marginalia report --json`` and the reopened slot change accordingly.

Prolific is a stand-in: Playwright answers every request to app.prolific.com (no network)."""

from __future__ import annotations

import csv
import io
import json
import statistics
import time

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.cli import main
from app.crowd import platforms
from app.db import session_scope
from app.documents import journey
from app.documents.studies import create_study, import_documents
from app.formats import DocumentInput, GoldSpan
from app.models import Assignment, Consent, QuestionnaireAnswer, SegmentTime, Study
from tests.browser.conftest import ARTIFACTS
from tests.browser.helpers import (
    category_button,
    drag_select,
    log_in,
    progress_text,
    wait_loaded,
    wait_saved,
    wait_value,
)
from tests.conftest import REPO
from tests.helpers import export_text

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "paid@example.org", "researcher password 13e"
SLUG = "paid"
DONE = "https://app.prolific.com/submissions/complete?cc=DONE13"
SCREENED = "https://app.prolific.com/submissions/complete?cc=SCREEN13"
SHOTS = ARTIFACTS / "paid-study"
PRACTICE = [
    "Anna met Bob at the station. Bob said hello to the wrong person.",
    "Then Carla leaved the house and walked to the harbour.",
]
PRACTICE_GOLD = [
    (0, "the wrong person", "CharE"),
    (0, "Anna", "RefE"),
    (1, "leaved", "GramE"),
]
# the qualification documents: another text, graded, their answers never shown
QUALIFY = [
    "Tomas met Lena at the market. Lena gave the basket to the wrong woman.",
    "Later Piet goed home along the river.",
]
QUALIFY_GOLD = [(0, "the wrong woman", "CharE"), (1, "goed", "GramE")]
REAL = [
    "Mara keeps the lighthouse on the cliff. She has never once seen the sea.",
    "Her brother Tomas visits in spring and they argues about the lamp.",
    "Tomas and Piet leave before dawn, and he lights the lamp alone.",
]
SCENE = "Mara keeps the lighthouse on the cliff."
CHECK = (0, "She has never once seen the sea", "CharE")  # any attentive worker marks it
COREF = (2, "he", "CorefE")  # both workers mark it: the one category only story-7 has
QUESTIONNAIRE = """\
consent: |
  ## Taking part
  You will read short stories and mark errors. Your answers are **anonymous**.
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
"""


def seed(app) -> None:
    """The study as a researcher sets it up: one real document with a planted check (two
    workers each), a practice document and two qualification documents, pass mark F1 0.6 in
    two attempts, flag below 50%."""
    gold = [GoldSpan(segment=s, text=t, category=c, votes=1) for s, t, c in PRACTICE_GOLD]
    practice = [DocumentInput("practice-1", list(PRACTICE), gold=gold)]
    graded = [GoldSpan(segment=s, text=t, category=c, votes=1) for s, t, c in QUALIFY_GOLD]
    qualify = [DocumentInput(f"qualify-{n}", list(QUALIFY), gold=graded) for n in (1, 2)]
    story = DocumentInput(
        "story-7", list(REAL), gold=[GoldSpan(segment=0, text=CHECK[1], category="CharE", votes=1)]
    )
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session, SLUG, REPO / "taxonomies/snac.yaml", suggestions="off", annotators_per_doc=2
        )
        import_documents(session, study, [story], checks=True)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        import_documents(session, study, practice, gold=True, practice=True)
        import_documents(session, study, qualify, gold=True)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        platforms.configure_study(
            study,
            platform="prolific",
            completion_url=DONE,
            screen_out_url=SCREENED,
            qualification_f1=0.6,
            qualification_attempts=2,
            min_catch_rate=0.5,
        )
        journey.set_definition(study, QUESTIONNAIRE, "q.yaml")


def body(texts: list[str], segment: int, text: str, category: str) -> dict:
    start = texts[segment].index(text)
    return {
        "segment": segment,
        "start": start,
        "end": start + len(text),
        "text": text,
        "category": category,
    }


def consent_proof(client, worker: str) -> str:
    """What the study's consent form answers to ``worker``'s agreement: the proof an arrival
    through the API carries (the API gives no work without it)."""
    import re

    page = client.get(f"/s/{SLUG}", query_string={"worker_id": worker}).get_data(as_text=True)
    token = re.search(r'name="consent_token" value="([^"]+)"', page)[1]
    form = {"worker_id": worker, "decision": "agree", "consent_token": token}
    agreed = client.post(f"/s/{SLUG}/consent", data=form)
    return re.search(r"[?&]consent=([^&]+)", agreed.headers["Location"])[1]


def api_work(client, worker: str, texts: list[str], marks) -> tuple[str, str]:
    """An arrival through the JSON API with the worker's consent: the next document for
    ``worker``, marked, submitted."""
    arrival = {"study": SLUG, "worker_id": worker, "consent": consent_proof(client, worker)}
    answer = client.post("/api/assignments", json=arrival)
    assert answer.status_code in (200, 201), answer.get_json()
    token = answer.get_json()["token"]
    for mark in marks:
        added = client.post(f"/api/assignments/{token}/annotations", json=body(texts, *mark))
        assert added.status_code == 201, added.get_json()
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with client.application.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment).where(Assignment.token == token))
        return token, row.document.external_id


def api_qualify(client, worker: str) -> None:
    """The practice document, then a qualification document, both marked right."""
    api_work(client, worker, PRACTICE, PRACTICE_GOLD)
    _, document = api_work(client, worker, QUALIFY, QUALIFY_GOLD)
    assert document.startswith("qualify-")


def arrive_api(client, worker: str) -> int:
    """The status of an arrival through the JSON API (201: a document was given)."""
    arrival = {"study": SLUG, "worker_id": worker, "consent": consent_proof(client, worker)}
    return client.post("/api/assignments", json=arrival).status_code


def busy(page, seconds: float) -> None:
    """A reader at work: the pointer moves now and then for ``seconds``."""
    end = time.monotonic() + seconds
    x = 200
    while time.monotonic() < end:
        x = 200 + (x + 37) % 400
        page.mouse.move(x, 300)
        page.wait_for_timeout(150)


def mark(page, segment: int, text: str, category: str) -> None:
    drag_select(page, segment, text)
    wait_value(page, "#span-field", text)
    category_button(page, category).click()
    page.click("#add-button")
    wait_saved(page)


def feedback(page, kind: str) -> list[str]:
    return page.locator(f'#practice-panel [data-kind="{kind}"] .practice-mark').all_inner_texts()


def shoot(page, name: str, *, selector: str | None = None) -> None:
    """Screenshots at 1440, 1024 and 390 px wide (full page, or ``selector`` in view)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1440, 1024, 390):
        page.set_viewport_size({"width": width, "height": 900})
        if selector:
            page.locator(selector).scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"{name}-{width}.png"))
        else:
            page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"{name} at {width}px scrolls sideways by {overflow}px"
    page.set_viewport_size({"width": 1280, "height": 800})


CONTRAST_JS = """(el) => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => {
    const [r, g, b] = rgb(c).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const style = getComputedStyle(el);
  const [a, b] = [lum(style.color), lum(style.backgroundColor)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def report_json(database_url: str, monkeypatch) -> dict:
    """``marginalia report paid --json``, run in-process against the test database."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    # the stored γ and worker models (checked in test_reliability); the JSON is the output,
    # a note on what is current goes to standard error
    result = CliRunner().invoke(main, ["report", SLUG, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def exports(app) -> dict:
    """What each export says about who marked what."""
    rows = list(csv.DictReader(io.StringIO(export_text(app, SLUG, "csv"))))
    lines = [json.loads(x) for x in export_text(app, SLUG, "jsonl").splitlines() if x.strip()]
    snac = json.loads(export_text(app, SLUG, "snac"))
    per_assignment = list(csv.DictReader(io.StringIO(export_text(app, SLUG, "assignments-csv"))))
    return {
        "csv": sorted((r["worker_id"], r["document"], r["span_text"]) for r in rows),
        "jsonl": sorted((r["worker_id"], r["document"], r["span_text"]) for r in lines),
        "snac": sorted(
            (e["span"] if "span" in e else e.get("text"), e["votes"])
            for segment in snac["story-7"].values()
            for e in segment["errors"]
        ),
        "assignments": per_assignment,
    }


def test_paid_study_end_to_end(app, client, database_url, live_server, pw_page, monkeypatch):
    from app.researchers.accounts import create_researcher

    seed(app)
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    # Another worker (through the API) qualifies and annotates story-7: catches the check and
    # marks the agreement error the Prolific worker will mark too.
    api_qualify(client, "api-worker")
    _, document = api_work(client, "api-worker", REAL, [CHECK, COREF])
    assert document == "story-7"
    # The next worker qualifies too and waits for a place.
    api_qualify(client, "next-worker")

    # --- the Prolific worker ------------------------------------------------------------
    prolific: list[str] = []

    def answer(route):
        prolific.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1>Prolific stand-in</h1>")

    page = pw_page
    page.route("https://app.prolific.com/**", answer)
    page.goto(f"{live_server.url}/s/{SLUG}?PROLIFIC_PID=P1&STUDY_ID=st1&SESSION_ID=se-P1")
    page.wait_for_selector("#consent-text")
    assert page.locator("#consent-text strong").inner_text() == "anonymous"
    shoot(page, "consent")
    page.click("#consent-agree")
    wait_loaded(page)

    # Practice: "Anna" (RefE) missed; the feedback shows it with its definition.
    mark(page, 0, "the wrong person", "CharE")
    page.click("#next-button")
    page.wait_for_selector("#practice-panel:not([hidden])")
    assert feedback(page, "found") == ["the wrong person"]
    assert feedback(page, "missed") == ["Anna"]
    missed = page.locator('#practice-panel [data-kind="missed"]').inner_text()
    assert "as if the reader already knew it" in missed
    shoot(page, "practice-feedback", selector="#practice-panel")
    page.click("#next-button")
    assert progress_text(page) == "Segment 2 of 2"
    page.click("#submit-button")
    page.wait_for_selector("#practice-panel:not([hidden])")
    assert feedback(page, "missed") == ["leaved"]
    page.click("#submit-button")
    page.wait_for_selector("#qualification")
    assert "Practice done" in page.inner_text("#qualification")  # never graded

    # Qualification, attempt 1 (no answers shown): one error found, one mark wrong.
    page.click("#continue-link")
    wait_loaded(page)
    mark(page, 0, "the wrong woman", "CharE")
    mark(page, 0, "Tomas", "RefE")
    page.click("#next-button")
    assert progress_text(page) == "Segment 2 of 2"  # moves on at once: no feedback
    assert page.locator("#practice-panel").is_hidden()
    page.click("#submit-button")
    page.wait_for_selector("#qualification")
    assert "Not quite yet" in page.inner_text("#qualification")
    assert "F1" not in page.inner_text("#qualification")  # P 1/2, R 1/2: failed, no score

    # Qualification, attempt 2 (the other document): everything found.
    page.click("#continue-link")
    wait_loaded(page)
    mark(page, 0, "the wrong woman", "CharE")
    page.click("#next-button")
    mark(page, 1, "goed", "GramE")
    page.click("#submit-button")
    page.wait_for_selector("#qualification")
    assert "You qualified" in page.inner_text("#qualification")
    page.click("#continue-link")
    wait_loaded(page)

    # The real document: the check (first segment) goes unmarked; time is spent on each segment.
    assert "lighthouse" in page.inner_text("#current")
    assert page.locator("#practice-panel").is_hidden()
    token = page.url.rstrip("/").rsplit("/", 1)[-1]
    started = time.monotonic()
    busy(page, 1.5)
    mark(page, 0, "lighthouse", "SceneE")
    page.click("#next-button")
    busy(page, 1.0)
    mark(page, 1, "they argues", "GramE")
    page.click("#next-button")
    busy(page, 1.0)
    mark(page, *COREF)
    page.click("#submit-button")
    elapsed = time.monotonic() - started

    page.wait_for_selector("#questionnaire")
    assert "easy to follow" in page.inner_text("#questionnaire")
    page.check('input[name="difficulty"][value="2"]')
    page.click("#questionnaire-submit")
    page.wait_for_selector("text=Which device did you use?")
    page.check('input[name="device"][value="Phone"]')
    page.click("#questionnaire-submit")
    page.wait_for_url("https://app.prolific.com/**")
    assert prolific == [DONE]

    with app.app_context(), session_scope() as session:
        consent = session.scalar(select(Consent).where(Consent.worker_id == "P1"))
        assert consent is not None and consent.agreed
        mine = session.scalar(select(Assignment).where(Assignment.token == token))
        assert (mine.worker_id, mine.document.external_id, mine.status) == (
            "P1",
            "story-7",
            "submitted",
        )
        seconds = {
            t.segment: t.active_seconds
            for t in session.scalars(
                select(SegmentTime).where(SegmentTime.assignment_id == mine.id)
            )
        }
        # every segment of the worker's submitted real documents; with a pass mark the practice
        # documents are left out of the median (METRICS.md, "Active time")
        every = []
        for a in session.scalars(select(Assignment).where(Assignment.worker_id == "P1")):
            if a.document.is_gold:
                continue
            times = {
                t.segment: t.active_seconds
                for t in session.scalars(
                    select(SegmentTime).where(SegmentTime.assignment_id == a.id)
                )
            }
            every += [times.get(i, 0.0) for i in range(len(a.document.segments))]
        answers = {
            (a.stage, a.question): a.answer for a in session.scalars(select(QuestionnaireAnswer))
        }
    assert set(seconds) == {0, 1, 2} and seconds[0] >= 1.0, seconds
    assert sum(seconds.values()) <= elapsed + 1, (seconds, elapsed)
    assert answers == {("document", "difficulty"): "2", ("study", "device"): "Phone"}

    # --- the researcher ------------------------------------------------------------------
    log_in(page, live_server.url, EMAIL, PASSWORD)
    page.goto(f"{live_server.url}/admin/studies/{SLUG}")
    flagged = page.locator("#attention-table tr.flagged")
    assert flagged.count() == 1 and flagged.get_attribute("data-worker") == "P1"
    assert "0%" in flagged.inner_text() and "flagged" in flagged.inner_text()
    assert "100%" in page.locator('#attention-table tr[data-worker="api-worker"]').inner_text()
    page.goto(f"{live_server.url}/admin/studies/{SLUG}/worker?id=P1")
    page.wait_for_selector("#worker-id")
    median = float(page.locator("#median-seconds").inner_text())
    assert median > 0 and median == pytest.approx(statistics.median(every), abs=0.051)
    assert "story-7" in page.locator("#worker-assignments").inner_text()
    summary = page.locator("#worker-summary").inner_text()
    assert "CATCH RATE\t0%" in summary.upper(), summary  # 0 of the 1 check caught
    assert "missed checks" in page.locator(".page-head").inner_text()
    shoot(page, "worker")

    before = exports(app)
    story = {(w, text) for w, doc, text in before["csv"] if doc == "story-7"}
    assert story == {
        ("api-worker", CHECK[1]),
        ("api-worker", "he"),
        ("P1", "he"),
        ("P1", "they argues"),
        ("P1", SCENE),  # SceneE marks a whole sentence
    }
    assert before["jsonl"] == before["csv"]
    assert sorted(before["snac"]) == sorted(
        [(CHECK[1], 1), ("he", 2), ("they argues", 1), (SCENE, 1)]
    )
    p1_rows = [r for r in before["assignments"] if r["worker_id"] == "P1"]
    assert {r["document"] for r in p1_rows} == {"practice-1", "qualify-1", "qualify-2", "story-7"}
    real_row = next(r for r in p1_rows if r["document"] == "story-7")
    assert (real_row["prolific_pid"], real_row["prolific_session_id"]) == ("P1", "se-P1")
    assert real_row["status"] == "submitted" and float(real_row["active_seconds"]) > 0
    assert (real_row["check_catch_rate"], real_row["check_flagged"]) == ("0.0", "true")
    assert json.loads(real_row["questionnaire"]) == {
        "document.difficulty": "2",
        "study.device": "Phone",
    }
    # Agreement (METRICS.md) is over the submitted assignments of real documents: with a pass
    # mark the practice documents are left out, so only story-7 counts (P1 and api-worker).
    # CorefE is marked only on story-7, by both workers, on the same token: alpha 1, 1/1.
    agreement = report_json(database_url, monkeypatch)["agreement"]
    assert (agreement["workers"], agreement["documents"]) == (2, 1)
    assert agreement["per_category"]["CorefE"]["token"] == {
        "alpha": 1.0,
        "two_agree": 1.0,
        "marked_units": 1,
    }
    alpha_all = agreement["all"]["token"]["alpha"]
    assert arrive_api(client, "next-worker") == 409  # story-7 has both its workers

    # the Reject button's label is readable (two slices' button.danger rules once made it
    # red on red)
    assert page.locator("#action-reject").evaluate(CONTRAST_JS) >= 4.5
    assert page.locator("#action-reject").inner_text() == "Reject"
    page.once("dialog", lambda dialog: dialog.accept())  # Reject asks to confirm
    page.click("#action-reject")
    page.wait_for_selector(".flash-ok")
    assert "reject" in page.locator("#worker-log").inner_text()
    # the worker page still shows why: their time, catch rate and flag (METRICS.md)
    assert "CATCH RATE\t0%" in page.locator("#worker-summary").inner_text().upper()
    head = page.locator(".page-head").inner_text()
    assert "missed checks" in head and "rejected" in head
    shoot(page, "worker-rejected")

    after = exports(app)
    assert after["csv"] == [row for row in before["csv"] if row[0] != "P1"]
    assert after["jsonl"] == after["csv"]
    assert sorted(after["snac"]) == sorted([(CHECK[1], 1), ("he", 1)])
    p1_after = {r["document"]: r["status"] for r in after["assignments"] if r["worker_id"] == "P1"}
    assert p1_after.get("story-7") == "rejected", p1_after
    rejected_row = next(
        r for r in after["assignments"] if r["worker_id"] == "P1" and r["document"] == "story-7"
    )
    assert (rejected_row["check_catch_rate"], rejected_row["check_flagged"]) == ("0.0", "true")
    assert rejected_row["review_status"] == "rejected"
    # P1's work is gone: story-7 has one worker left, so no document has two workers.
    agreement = report_json(database_url, monkeypatch)["agreement"]
    assert (agreement["workers"], agreement["documents"]) == (1, 0)
    assert agreement["per_category"]["CorefE"]["token"] == {
        "alpha": None,
        "two_agree": None,
        "marked_units": 0,
    }
    assert agreement["all"]["token"]["alpha"] != alpha_all
    assert arrive_api(client, "next-worker") == 201  # the reopened slot goes to the next worker
    with app.app_context(), session_scope() as session:
        given = session.scalar(
            select(Assignment).where(
                Assignment.worker_id == "next-worker", Assignment.status == "active"
            )
        )
        assert given.document.external_id == "story-7"
    assert arrive_api(client, "P1") == 409  # the rejected worker is blocked
