"""The study management page: status buttons, archive and delete confirmations,
removing documents, instructions as safe Markdown, questionnaire YAML errors, return codes,
the preview as a worker (stores nothing) and the answers download (spreadsheet-safe)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.db import session_scope
from app.models import Assignment, Document, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.test_researcher_isolation import ALICE, create_researcher, csrf, logged_in

HOSTILE = (
    "# Read me\n\n<script>alert('x')</script> <img src=x onerror=alert(1)>\n\n"
    "[click](javascript:alert(1)) [ok](https://example.org) **bold**"
)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def alice(app):
    create_researcher(app, ALICE, admin=True)
    make_study(app, documents=[("doc-1", ["One.", "Two."]), ("doc-2", ["Three.", "Four."])])
    return logged_in(app, ALICE)


def _post(client, path: str, **data):
    return client.post(f"/admin/studies/demo/{path}", data={"csrf_token": csrf(client), **data})


def _status(app) -> str:
    with app.app_context(), session_scope() as session:
        return session.scalar(select(Study.status))


def test_status_buttons_archive_confirmation_and_the_archived_filter(app, alice) -> None:
    page = alice.get("/admin/studies/demo/manage").get_data(as_text=True)
    assert 'id="action-pause"' in page and 'id="action-reopen"' not in page
    assert _post(alice, "status", action="pause").status_code == 302
    assert _status(app) == "paused"
    assert "paused" in alice.get("/admin/studies/demo").get_data(as_text=True)
    refused = _post(alice, "status", action="pause")
    assert refused.status_code == 409 and "cannot pause" in refused.get_data(as_text=True)
    unconfirmed = _post(alice, "status", action="archive")
    assert unconfirmed.status_code == 400 and _status(app) == "paused"
    assert _post(alice, "status", action="archive", confirm="yes").status_code == 302
    assert '/admin/studies/demo"' not in alice.get("/admin/").get_data(as_text=True)
    assert 'href="/admin/studies/demo"' in alice.get("/admin/?archived=1").get_data(as_text=True)
    assert _post(alice, "status", action="reopen").status_code == 302
    assert _status(app) == "open"


def test_delete_needs_the_slug_typed(app, alice) -> None:
    wrong = _post(alice, "delete", confirm="dem")
    assert wrong.status_code == 400 and "type the study" in wrong.get_data(as_text=True)
    assert _status(app) == "open"
    done = _post(alice, "delete", confirm="demo")
    assert done.status_code == 302 and done.headers["Location"].endswith("/admin/")
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Study)) == 0
    assert alice.get("/admin/studies/demo/manage").status_code == 404


def test_remove_a_document_only_without_work(app, alice, client) -> None:
    token = client.get("/s/demo", query_string={"worker_id": "w1"}).headers["Location"]
    token = token.split("/a/")[1]
    body = {"segment": 0, "start": 0, "end": 3, "text": "One", "category": "CharE"}
    with app.app_context(), session_scope() as session:
        doc = session.scalar(select(Assignment).where(Assignment.token == token)).document
        worked, other = doc.external_id, {"doc-1": "doc-2", "doc-2": "doc-1"}[doc.external_id]
        text = doc.segments[0].text
    body.update(end=len(text) - 1, text=text[:-1])
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    refused = _post(alice, "documents/remove", document_id=worked)
    assert refused.status_code == 409 and "annotations a worker saved" in refused.get_data(
        as_text=True
    )
    missing = _post(alice, "documents/remove", document_id="nope")
    assert missing.status_code == 404 and "no document" in missing.get_data(as_text=True)
    assert _post(alice, "documents/remove", document_id=other).status_code == 302
    with app.app_context(), session_scope() as session:
        assert session.scalars(select(Document.external_id)).all() == [worked]


def test_instructions_render_as_safe_markdown_on_the_worker_page(app, alice, client) -> None:
    assert _post(alice, "instructions", instructions=HOSTILE).status_code == 302
    nul = _post(alice, "instructions", instructions="bad \x00 text")
    assert nul.status_code == 400 and "NUL" in nul.get_data(as_text=True)
    token = client.get("/s/demo", query_string={"worker_id": "w1"}).headers["Location"]
    page = client.get(token).get_data(as_text=True)
    start = page.index('id="study-instructions"')
    shown = page[start : page.index("</div>", start)]
    assert "<h1>Read me</h1>" in shown and "<strong>bold</strong>" in shown
    assert "<script" not in shown and "<img" not in shown and "&lt;script&gt;" in shown
    assert 'href="javascript' not in shown and 'href="https://example.org"' in shown
    assert 'rel="noopener noreferrer nofollow"' in shown


def test_questionnaire_form_errors_name_the_line_and_change_nothing(app, alice) -> None:
    bad = "after_document:\n  - id: q1\n    type: likert\n    prompt: Hard?\n    scale: 99\n"
    answer = _post(alice, "questionnaire", questionnaire=bad)
    page = answer.get_data(as_text=True)
    assert answer.status_code == 400
    assert "questionnaire.yaml:5: after_document[0].scale: must be between 2 and 11" in page
    with app.app_context(), session_scope() as session:
        assert "journey" not in (session.scalar(select(Study)).settings or {})
    good = bad.replace("99", "7")
    assert _post(alice, "questionnaire", questionnaire=good).status_code == 302
    assert "scale: 7" in alice.get("/admin/studies/demo/settings").get_data(as_text=True)
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study)).settings["journey"]["after_document"][0]["scale"] == 7


def test_return_codes_are_checked(app, alice) -> None:
    bad = _post(alice, "return-codes", no_places="=cmd|' /C calc'!A0")
    assert bad.status_code == 400 and "letters, digits" in bad.get_data(as_text=True)
    assert _post(alice, "return-codes", no_places="NOPLACES", declined="").status_code == 302
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study)).settings["return_codes"] == {"no_places": "NOPLACES"}


def test_preview_as_a_worker_stores_nothing(app, alice) -> None:
    _post(alice, "instructions", instructions="Mark **every** error.")
    _post(
        alice,
        "questionnaire",
        questionnaire="consent: Do you agree?\nafter_study:\n  - {id: f, type: text, prompt: 'Thoughts?'}\n",
    )
    page = alice.get("/admin/studies/demo/preview").get_data(as_text=True)
    assert "Do you agree?" in page and "<strong>every</strong>" in page
    assert "One." in page and "Thoughts?" in page
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Assignment)) == 0


def test_answers_download_is_spreadsheet_safe(app, alice, client) -> None:
    _post(
        alice,
        "questionnaire",
        questionnaire="after_document:\n  - {id: note, type: text, prompt: 'Note?'}\n",
    )
    token = client.get("/s/demo", query_string={"worker_id": "w1"}).headers["Location"]
    token = token.split("/a/")[1]
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    answer = client.post(f"/a/{token}/questionnaire", data={"stage": "document", "note": "=1+2"})
    assert answer.status_code == 302
    csv_text = alice.get("/admin/studies/demo/answers.csv").get_data(as_text=True)
    lines = csv_text.splitlines()
    assert lines[0] == "worker_id,document_id,assignment_status,document.note"
    assert lines[1].startswith("w1,doc-") and lines[1].endswith(",submitted,'=1+2")


def test_changes_need_the_csrf_token(app, alice) -> None:
    for path, data in (
        ("status", {"action": "pause"}),
        ("delete", {"confirm": "demo"}),
        ("documents/remove", {"document_id": "doc-1"}),
        ("instructions", {"instructions": "x"}),
    ):
        assert alice.post(f"/admin/studies/demo/{path}", data=data).status_code == 400, path
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        assert study.status == "open" and "instructions" not in (study.settings or {})
        assert session.scalar(select(func.count()).select_from(Document)) == 2
