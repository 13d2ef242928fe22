"""The paid-study walk of a new researcher, in Chromium over real HTTP, on SQLite and Postgres:
each step that once went wrong for a researcher doing it for the first time, asserted.

The researcher makes a Prolific study in the New study form (pass mark, attempts, screen-out
URL, check flag, speeder threshold), uploads practice documents (gold), real documents with
planted attention checks, and a SNaC file without a tick (each upload says what it did with
every part of the file). Workers: ``careful`` (catches the checks, comments), ``lazy`` (misses
them), ``speeder`` (too fast), ``out`` (fails the practice: screened out, with no completion code),
all through the API, and ``browser`` in Chromium (practice with feedback, a real document, an
annotation edited in place). Then the dashboard, the Workers and worker pages, the review with
one document's auto-accept and curation with comments by selection, the curated and Hugging
Face exports. Screenshots at 1440, 1024
and 390 px of the dashboard, the Workers page, a worker page, the Settings page and the
review page, each checked: nothing overflows its box, no two labels of a chart overlap.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, Document, DocumentReview, WorkerReview
from tests.browser.helpers import (
    category_button,
    drag_review,
    drag_select,
    log_in,
    wait_loaded,
    wait_saved,
    wait_value,
)
from tests.conftest import BACKENDS, make_database_url
from tests.helpers import run_import_worker

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "walk@example.org", "researcher password 27"
SLUG = "paid27"
DONE = "https://app.prolific.com/submissions/complete?cc=DONE27"
OUT = "https://app.prolific.com/submissions/complete?cc=OUT27"
PRACTICE = {
    "practice-1": {
        "0": {
            "text": "Anna met Bob. Bob said hello to the wrong person.",
            "errors": [{"span": "the wrong person", "error_type": "CharE"}],
        }
    }
}
STORY = "Mara keeps the lighthouse. She has never once seen the sea. Tomas visits in spring."
CHECK = "She has never once seen the sea"
REAL = {
    f"story-{n}": {"0": {"text": STORY, "errors": [{"span": CHECK, "error_type": "CharE"}]}}
    for n in (1, 2)
}
QUALIFY = {
    "qualify-1": {
        "0": {
            "text": "Tom saw Eve. Eve gave the keys to the wrong man.",
            "errors": [{"span": "the wrong man", "error_type": "CharE"}],
        }
    }
}
ASIDE = {
    "aside-1": {
        "0": {
            "text": "Piet rows home. The boat leaks.",
            "errors": [{"span": "The boat leaks", "error_type": "GramE", "votes": 2}],
        }
    }
}
WIDTHS = (1440, 1024, 390)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


# --- helpers -----------------------------------------------------------------------------------


def body(text: str, span: str, category: str, comment: str = "") -> dict:
    start = text.index(span)
    return {
        "segment": 0,
        "start": start,
        "end": start + len(span),
        "text": span,
        "category": category,
        "comment": comment,
    }


def arrive(client, worker: str) -> str | None:
    """A Prolific arrival through the worker link; the token, or None (no document)."""
    query = {"PROLIFIC_PID": worker, "STUDY_ID": "st27", "SESSION_ID": f"se{worker}"}
    answer = client.get(f"/s/{SLUG}", query_string=query)
    location = answer.headers.get("Location", "")
    return location.split("/a/")[1].split("/")[0] if "/a/" in location else None


def work(client, worker: str, marks: list[dict], seconds: float = 8.0) -> dict:
    """The worker's next document: marked, its one segment seen for ``seconds``, submitted."""
    token = arrive(client, worker)
    assert token is not None, worker
    for mark in marks:
        assert client.post(f"/api/assignments/{token}/annotations", json=mark).status_code == 201
    position = {"segment": 0, "active": {"0": seconds}}
    assert client.post(f"/api/assignments/{token}/position", json=position).status_code == 204
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 200, answer.get_json()
    return {**answer.get_json(), "token": token}


def practice_pass(client, worker: str) -> None:
    """The practice document (it teaches, never graded), then the qualification document
    marked right."""
    work(client, worker, [])
    text = QUALIFY["qualify-1"]["0"]["text"]
    work(client, worker, [body(text, "the wrong man", "CharE")])


OVERFLOW_JS = """() => {
  const page = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  const boxes = [...document.querySelectorAll('.card, .page-head, .review-segment')]
    .filter((el) => el.scrollWidth - el.clientWidth > 1)
    .map((el) => `${el.id || el.className}: ${el.scrollWidth - el.clientWidth}px`);
  return {page, boxes};
}"""

OVERLAP_JS = """() => {
  const hits = [];
  for (const svg of document.querySelectorAll('svg.chart')) {
    const boxes = [...svg.querySelectorAll('text')].map((t) => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, r] = boxes[i], [b, s] = boxes[j];
      if (r.left < s.right - 0.5 && s.left < r.right - 0.5 && r.top < s.bottom - 0.5 && s.top < r.bottom - 0.5) hits.push(`${a} / ${b}`);
    }
  }
  return hits;
}"""


def shoot(page, shots: Path | None, name: str) -> None:
    """Full-page screenshots at each width; nothing may overflow its box, no chart labels
    may overlap (wide tables scroll inside their .table-wrap, which is allowed). Layout does
    not depend on the database: on Postgres (``shots`` None) the walk skips this."""
    if shots is None:
        return
    shots.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
        found = page.evaluate(OVERFLOW_JS)
        assert found["page"] <= 1 and found["boxes"] == [], (name, width, found)
        assert page.evaluate(OVERLAP_JS) == [], (name, width)
    page.set_viewport_size({"width": 1440, "height": 900})


def submit_form(page, selector: str) -> None:
    with page.expect_navigation():
        page.click(selector)


# --- the walk ----------------------------------------------------------------------------------


def test_paid_study_walk(app, client, live_server, pw_browser, artifacts, database_url):
    from app.researchers.accounts import create_researcher

    shots = None if database_url.startswith("postgresql") else artifacts / "paid-walk"
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    context = pw_browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    base = live_server.url

    # --- the researcher sets the study up in the web admin (the New study form) -----------
    log_in(page, base, EMAIL, PASSWORD)
    page.goto(f"{base}/admin/studies/new")
    page.fill('input[name="slug"]', SLUG)
    page.fill('input[name="title"]', "Lighthouse pilot")
    page.select_option('select[name="platform"]', "prolific")
    page.select_option('select[name="suggestions"]', "off")
    page.fill('input[name="annotators_per_doc"]', "3")
    page.fill('input[name="completion_url"]', DONE)
    page.fill('input[name="qualification_f1"]', "0.5")
    page.fill('input[name="qualification_attempts"]', "1")
    page.fill('input[name="screen_out_url"]', OUT)
    page.fill('input[name="min_catch_rate"]', "0.5")
    page.fill('input[name="min_seconds_per_segment"]', "3")
    submit_form(page, "#new-study-form button[type=submit]")
    assert page.url.endswith(f"/admin/studies/{SLUG}")

    # each upload says what it did with every part of the file
    for name, data, tick in (
        ("practice.json", PRACTICE, "practice"),
        ("qualify.json", QUALIFY, "gold"),
        ("stories.json", REAL, "checks"),
        ("aside.json", ASIDE, None),
    ):
        page.set_input_files(
            '#upload-form input[name="file"]',
            files=[
                {"name": name, "mimeType": "application/json", "buffer": json.dumps(data).encode()}
            ],
        )
        page.select_option('#upload-form select[name="format"]', "snac")
        page.uncheck('#upload-form input[name="ner"]')
        if tick:
            page.check(f'#upload-form input[name="{tick}"]')
        submit_form(page, "#upload-form button[type=submit]")
        assert run_import_worker(app) == {"done": 1}
    page.reload()
    jobs = page.locator("#import-jobs").inner_text()
    assert jobs.count("1 gold error") == 2  # the practice and the qualification document
    assert "2 attention checks planted in 2 documents" in jobs
    assert "1 annotation in the file not imported" in jobs and "Keep the annotations" in jobs
    page.goto(f"{base}/admin/studies/{SLUG}/manage")
    roles = {
        row.get_attribute("data-document"): row.get_attribute("data-role")
        for row in page.locator("#document-table tbody tr").all()
    }
    practice_row = page.locator('#document-table tr[data-document="practice-1"] td.role')
    assert practice_row.inner_text() == "practice (answers shown, never graded)"
    qualify_row = page.locator('#document-table tr[data-document="qualify-1"] td.role')
    assert qualify_row.inner_text() == "qualification"
    assert roles == {
        "practice-1": "practice",
        "qualify-1": "qualification",  # the training phase's roles (app/rules/work.py)
        "story-1": "check",
        "story-2": "check",
        "aside-1": "real",
    }
    # the aside document is no part of this study's walk
    with page.expect_navigation():
        page.locator('#document-table tr[data-document="aside-1"] button').click()
    # one Settings page, holding what the New study form set
    page.goto(f"{base}/admin/studies/{SLUG}/settings")
    assert page.input_value('input[name="qualification_f1"]') == "0.5"
    assert page.input_value('input[name="screen_out_url"]') == OUT
    assert page.input_value('input[name="min_seconds_per_segment"]') == "3"
    shoot(page, shots, "settings")
    # the preview shows the practice document first, as workers meet it
    page.goto(f"{base}/admin/studies/{SLUG}/preview")
    assert page.locator("#preview-practice h2").inner_text() == "3. Practice first (practice-1)"

    # --- the workers -------------------------------------------------------------------------
    careful = [
        body(STORY, CHECK, "CharE", "she lives by the sea"),
        body(STORY, "Tomas", "CharE", "who is Tomas?"),
    ]
    practice_pass(client, "careful")
    work(client, "careful", careful)  # story-1
    practice_pass(client, "lazy")
    work(client, "lazy", [body(STORY, "Tomas", "CharE")])  # story-2: misses the check
    practice_pass(client, "speeder")
    work(client, "speeder", [body(STORY, CHECK, "CharE"), body(STORY, "Tomas", "CharE")], 0.5)
    work(client, "out", [])  # the practice document
    text = QUALIFY["qualify-1"]["0"]["text"]
    failed = work(client, "out", [body(text, "Tom", "RefE")])  # F1 0: out of its one attempt
    # no code for a screened-out worker (it would pay them), the screen-out return instead
    assert failed["completion_code"] is None and failed["screened_out"] is True
    assert arrive(client, "out") is not None  # back to their done page: the screen-out page
    done_page = client.get(f"/a/{failed['token']}/done").get_data(as_text=True)
    assert "Thank you for trying" in done_page and "OUT27" in done_page

    # the browser worker: practice with feedback, a real document, an annotation edited
    worker = context.new_page()
    worker.on("pageerror", lambda exc: errors.append(str(exc)))
    prolific: list[str] = []
    worker.route(
        "https://app.prolific.com/**",
        lambda route: (
            prolific.append(route.request.url),
            route.fulfill(status=200, content_type="text/html", body="<h1>Prolific</h1>"),
        ),
    )
    worker.goto(f"{base}/s/{SLUG}?PROLIFIC_PID=browser&STUDY_ID=st27&SESSION_ID=sebrowser")
    wait_loaded(worker)
    drag_select(worker, 0, "the wrong person")
    wait_value(worker, "#span-field", "the wrong person")
    category_button(worker, "CharE").click()
    worker.click("#add-button")
    wait_saved(worker)
    worker.click("#submit-button")
    worker.wait_for_selector("#practice-panel:not([hidden])")  # the answers of practice
    worker.click("#submit-button")
    worker.wait_for_selector("#qualification")  # practice done, never graded
    worker.click("#continue-link")
    wait_loaded(worker)
    drag_select(worker, 0, "the wrong man")  # the qualification document, no answers
    wait_value(worker, "#span-field", "the wrong man")
    category_button(worker, "CharE").click()
    worker.click("#add-button")
    wait_saved(worker)
    worker.click("#submit-button")
    worker.wait_for_selector("#qualification")
    assert "You qualified" in worker.inner_text("#qualification")
    worker.click("#continue-link")
    wait_loaded(worker)
    assert "lighthouse" in worker.inner_text("#current")
    drag_select(worker, 0, "Tomas")
    wait_value(worker, "#span-field", "Tomas")
    category_button(worker, "RefE").click()
    worker.fill("#comment-field", "a visitor nobody introduced")
    worker.click("#add-button")
    wait_saved(worker)
    # edit in place: RefE was wrong, CharE is meant; the comment stays
    item = worker.locator("#annotation-list .annot-item").first
    item.locator(".edit-btn").click()
    item.locator("select.edit-category").select_option("CharE")
    item.locator(".save-edit").click()
    wait_saved(worker)
    assert worker.locator("#annotation-list .annot-cat").all_inner_texts() == [
        "New character without introduction"
    ]
    worker.wait_for_timeout(50)
    worker.click("#submit-button")
    worker.wait_for_url("https://app.prolific.com/**")
    assert prolific == [DONE]
    with app.app_context(), session_scope() as session:
        marks = session.execute(
            select(Assignment.worker_id, Assignment.status)
            .join(Document, Document.id == Assignment.document_id)
            .where(Document.external_id == "story-2", Assignment.worker_id == "browser")
        ).all()
        assert [tuple(m) for m in marks] == [("browser", "submitted")]

    # --- the dashboard --------------------------------------------------------------------------
    page.goto(f"{base}/admin/studies/{SLUG}")
    assert page.locator("#screened-out-count").inner_text() == "1"
    out_row = page.locator('#worker-table tr[data-worker="out"]')
    assert out_row.get_attribute("data-state") == "screened_out"
    assert "screened out" in out_row.inner_text()
    assert "speeder" in page.locator('#worker-table tr[data-worker="speeder"]').inner_text()
    # the workers table fits its box at 1440 px (gold P/R/F1 were off-screen)
    fits = page.evaluate("""() => {
      const wrap = document.querySelector('#worker-table').closest('.table-wrap');
      return [wrap.scrollWidth, wrap.clientWidth];
    }""")
    assert fits[0] <= fits[1], fits
    assert page.locator("#agreement-per-document tbody tr").count() == 2
    assert page.locator("#agreement-per-pair tbody tr").count() >= 2
    shoot(page, shots, "dashboard")

    # --- the Workers page and a worker page -----------------------------------------------------
    page.goto(f"{base}/admin/studies/{SLUG}/workers?state=screened_out")
    assert [
        r.get_attribute("data-worker") for r in page.locator("#workers-table tbody tr").all()
    ] == ["out"]
    listed = page.request.get(f"{base}/admin/studies/{SLUG}/workers.csv?state=screened_out").text()
    assert [
        (r["worker_id"], r["prolific_session_id"]) for r in csv.DictReader(io.StringIO(listed))
    ] == [("out", "seout")]
    assignments = page.request.get(f"{base}/admin/studies/{SLUG}/export.assignments-csv").text()
    out_rows = [r for r in csv.DictReader(io.StringIO(assignments)) if r["worker_id"] == "out"]
    assert [r["status"] for r in out_rows] == ["screened_out"] * 2  # practice, qualification
    page.goto(f"{base}/admin/studies/{SLUG}/workers")
    shoot(page, shots, "workers")
    page.goto(f"{base}/admin/studies/{SLUG}/worker?id=lazy")
    spans = page.locator("#worker-spans").inner_text()
    assert "Tomas" in spans and "visits in spring" in spans  # the span in its context
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    submit_form(page, "#action-reject")
    assert asked and asked[-1].startswith("Reject lazy?")
    assert "rejected" in page.locator(".page-head").inner_text()
    # a rejected worker is tagged in the dashboard's table and chart (the chart of gold
    # F1 needs the practice documents counted: this study's only gold)
    page.goto(f"{base}/admin/studies/{SLUG}?include_practice=1")
    lazy_row = page.locator('#worker-table tr[data-worker="lazy"]')
    assert (
        lazy_row.get_attribute("data-state") == "rejected" and "rejected" in lazy_row.inner_text()
    )
    assert "lazy (rejected)" in page.locator("#workers svg.chart").text_content()
    page.goto(f"{base}/admin/studies/{SLUG}/worker?id=lazy")
    submit_form(page, "#action-approve")
    head = page.locator(".page-head").inner_text()
    assert "approved" in head and "blocked" not in head  # approve lifts reject's block
    with app.app_context(), session_scope() as session:
        review = session.scalar(select(WorkerReview).where(WorkerReview.worker_id == "lazy"))
        assert (review.status, review.blocked) == ("approved", False)
    assert arrive(client, "lazy") is not None  # a new document for them again
    assert "unblocks them unless you blocked them yourself" in page.inner_text("#manage")
    shoot(page, shots, "worker")

    # --- review: one document's auto-accept, curation with comments -----------------------------
    page.goto(f"{base}/admin/studies/{SLUG}/review/document?document=story-1")
    page.wait_for_selector("#review[data-ready]")
    lanes = page.locator("#lane-filter .lane").all_inner_texts()
    assert lanes and not any("lane" in lane for lane in lanes)
    asked.clear()
    page.fill("#auto-min-workers", "2")
    page.click("#auto-accept-document button")
    page.wait_for_function(
        "() => document.getElementById('review-summary').textContent.includes('2 decided')"
    )
    assert asked[-1].startswith("Accept 2 candidates of this document (story-1)")
    with app.app_context(), session_scope() as session:
        reviewed = set(
            session.scalars(
                select(Document.external_id).join(
                    DocumentReview, DocumentReview.document_id == Document.id
                )
            )
        )
    assert reviewed == {"story-1"}  # not story-2, not the practice document
    # an empty selection is refused in the page, with a message
    page.evaluate("() => getSelection().removeAllRanges()")
    page.click("#add-error")
    assert "nothing is selected" in page.locator("#review-message").inner_text()
    # add an error from the selected text, with a comment
    drag_review(page, 0, "Mara")
    page.click("#add-error")
    page.select_option("#edit-category", "RefE")
    page.fill("#edit-comment", "the keeper's name comes first")
    assert page.locator("#edit-preview").inner_text() == "“Mara”"
    shoot(page, shots, "review-edit")
    page.click("#save-edit")
    page.wait_for_function(
        "() => document.getElementById('review-summary').textContent.includes('1 added')"
    )
    page.evaluate("() => window.scrollTo(0, 0)")
    shoot(page, shots, "review")
    page.click("#mark-done")
    page.wait_for_selector("#review-status.status-done")

    # --- the curated export keeps the comments; the dataset zip works ---------------------------
    curated = page.request.get(f"{base}/admin/studies/{SLUG}/export.csv?layer=adjudicated").text()
    rows = {r["span_text"]: r["comment"] for r in csv.DictReader(io.StringIO(curated))}
    assert rows == {
        CHECK: "she lives by the sea",
        "Tomas": "who is Tomas?",
        "Mara": "the keeper's name comes first",
    }
    dataset = page.request.get(f"{base}/admin/studies/{SLUG}/export.parquet?layer=adjudicated")
    assert dataset.status == 200
    assert "data/annotations.parquet" in zipfile.ZipFile(io.BytesIO(dataset.body())).namelist()
    context.close()
    assert errors == []
