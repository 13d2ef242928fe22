"""Researcher side over HTTP: every admin route refused without a login, CSRF, login
throttling, never framable; creating studies, uploading taxonomies and documents with the
CLI's messages, settings, the dashboard and its progress JSON."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from markupsafe import escape
from sqlalchemy import func, select

from app.db import session_scope
from app.models import Document, Study
from tests.conftest import make_study
from tests.helpers import run_import_worker
from tests.routes import requests

EMAIL, PASSWORD = "researcher@example.org", "a long enough password"
TOKEN_PATTERN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def researcher(app):
    """An admin: these tests use studies made by fixtures (no owner), which only admins see.
    Owners, collaborators and plain researchers: tests/test_researcher_isolation.py."""
    from app.researchers.accounts import create_researcher

    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")


def csrf(client) -> str:
    page = client.get("/admin/login").get_data(as_text=True)
    return TOKEN_PATTERN.search(page).group(1)


def login(client, password: str = PASSWORD):
    return client.post(
        "/admin/login",
        data={
            "email": EMAIL,
            "password": password,
            "csrf_token": csrf(client),
        },
    )


@pytest.fixture
def admin(client, researcher):
    assert login(client).status_code == 302
    return client


def study_count(app) -> int:
    with app.app_context(), session_scope() as session:
        return session.scalar(select(func.count()).select_from(Study))


def document_ids(app, slug: str = "demo") -> list[str]:
    with app.app_context(), session_scope() as session:
        return list(
            session.scalars(
                select(Document.external_id)
                .join(Study)
                .where(Study.slug == slug)
                .order_by(Document.position)
            )
        )


# --- every admin route refuses anonymous visitors -------------------------------------------


def admin_routes(app) -> list[tuple[str, str]]:
    """(method, url) for every /admin rule, each argument a value of its converter's type,
    matched back to its own rule (tests/routes.py)."""
    samples = {"slug": "demo", "fmt": "csv", "prefix": "mgk_00000000"}
    skip = ("admin.login", "admin.logout")
    return [(method, url) for _, method, url in requests(app, "/admin", samples, skip=skip)]


def test_every_admin_route_refuses_anonymous_visitors(app, client):
    make_study(app, documents=[("doc-1", ["Secret text of the study."])])
    routes = admin_routes(app)
    # the routes the admin pages promise, at least
    urls = {url for _, url in routes}
    for expected in (
        "/admin/",
        "/admin/studies/new",
        "/admin/studies/demo",
        "/admin/studies/demo/progress.json",
        "/admin/studies/demo/report.json",
        "/admin/studies/demo/documents",
        "/admin/studies/demo/settings",
        "/admin/studies/demo/export.csv",
    ):
        assert expected in urls
    token = csrf(client)  # a valid CSRF token, so the login check itself is what refuses
    for method, url in routes:
        for fmt in ("csv", "jsonl", "snac") if "<fmt>" in url or "export." in url else ("",):
            target = re.sub(r"export\.\w+$", f"export.{fmt}", url) if fmt else url
            answer = client.open(target, method=method, data={"csrf_token": token})
            assert answer.status_code == 302, (method, target, answer.status_code)
            assert answer.headers["Location"].startswith("/admin/login"), (method, target)
            assert b"Secret text" not in answer.data
            json_answer = client.open(
                target,
                method=method,
                data={"csrf_token": token},
                headers={"Accept": "application/json"},
            )
            assert json_answer.status_code == 401, (method, target)
    assert study_count(app) == 1


def test_admin_pages_are_never_framable(app, admin):
    make_study(app)
    for url in (
        "/admin/login",
        "/admin/",
        "/admin/studies/demo",
        "/admin/studies/demo/progress.json",
        "/admin/studies/demo/export.csv",
    ):
        answer = admin.get(url)
        assert answer.status_code == 200, url
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"], url
        assert answer.headers["X-Frame-Options"] == "DENY"
    # even for an MTurk study, whose worker pages may be framed by MTurk
    admin.post(
        "/admin/studies/demo/settings", data={"csrf_token": csrf(admin), "platform": "mturk"}
    )
    answer = admin.get("/admin/studies/demo")
    assert "mturk.com" not in answer.headers["Content-Security-Policy"]


def test_login_is_throttled(app, client, researcher):
    answers = [login(client, password=f"wrong password {i}").status_code for i in range(11)]
    assert answers[:10] == [401] * 10
    assert answers[10] == 429


def test_researcher_forms_need_a_csrf_token(app, admin):
    make_study(app)
    answer = admin.post("/admin/studies/new", data={"slug": "sneaky", "taxonomy": "snac.yaml"})
    assert answer.status_code == 400
    assert study_count(app) == 1
    answer = admin.post("/admin/studies/demo/settings", data={"platform": "mturk"})
    assert answer.status_code == 400
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study.platform)) == "generic"


# --- creating studies ----------------------------------------------------------------------------


def test_create_study_with_a_shipped_taxonomy(app, admin):
    answer = admin.post(
        "/admin/studies/new",
        data={
            "csrf_token": csrf(admin),
            "slug": "coherence-1",
            "title": "Coherence pilot",
            "taxonomy": "snac.yaml",
            "annotators_per_doc": "2",
            "suggestions": "shown",
            "platform": "prolific",
            "completion_url": "https://app.prolific.com/submissions/complete?cc=XYZ",
        },
    )
    assert answer.status_code == 302
    assert answer.headers["Location"] == "/admin/studies/coherence-1"
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        assert (study.slug, study.title, study.annotators_per_doc, study.suggestions) == (
            "coherence-1",
            "Coherence pilot",
            2,
            "shown",
        )
        assert study.platform == "prolific"
        assert study.completion_url.endswith("cc=XYZ")
        assert [c["id"] for c in study.taxonomy["categories"]][:2] == ["CharE", "RefE"]
    page = admin.get("/admin/studies/coherence-1").get_data(as_text=True)
    assert "Study coherence-1 created" in page
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in page


def test_create_study_with_an_uploaded_taxonomy(app, admin, tmp_path, monkeypatch):
    good = (
        b"name: Tiny\ncategories:\n  - id: Typo\n    label: Typo\n"
        b"    definition: A misspelt word.\n"
    )
    import io

    answer = admin.post(
        "/admin/studies/new",
        data={
            "csrf_token": csrf(admin),
            "slug": "tiny",
            "taxonomy": "snac.yaml",
            "taxonomy_file": (io.BytesIO(good), "tiny.yaml"),
        },
        content_type="multipart/form-data",
    )
    assert answer.status_code == 302
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study.taxonomy_name)) == "Tiny"
    # a broken file: the page names file:line:field exactly as `marginalia taxonomy check`
    bad = b"name: Broken\ncategories:\n  - id: Typo\n    label: Typo\n    kind: triple\n"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.yaml").write_bytes(bad)
    from app.cli import main

    cli = CliRunner().invoke(main, ["taxonomy", "check", "broken.yaml"])
    assert cli.exit_code == 1
    message = cli.output.strip().splitlines()[-1]
    assert message.startswith("broken.yaml:5: categories[0].kind:")
    answer = admin.post(
        "/admin/studies/new",
        data={
            "csrf_token": csrf(admin),
            "slug": "broken",
            "taxonomy": "snac.yaml",
            "taxonomy_file": (io.BytesIO(bad), "broken.yaml"),
        },
        content_type="multipart/form-data",
    )
    assert answer.status_code == 400
    assert str(escape(message)) in answer.get_data(as_text=True)
    assert study_count(app) == 1


def test_create_study_refuses_bad_input_and_keeps_the_form(app, admin):
    make_study(app)
    for data, message in [
        ({"slug": "demo", "taxonomy": "snac.yaml"}, "already exists"),
        ({"slug": "Bad Slug", "taxonomy": "snac.yaml"}, "must be lower-case"),
        ({"slug": "x1", "taxonomy": "../secret.yaml"}, "choose one of the shipped"),
        ({"slug": "x2", "taxonomy": "snac.yaml", "annotators_per_doc": "many"}, "whole number"),
        (
            {
                "slug": "x3",
                "taxonomy": "snac.yaml",
                "platform": "mturk",
                "completion_url": "https://x.org",
            },
            "leave the completion URL empty",
        ),
    ]:
        answer = admin.post("/admin/studies/new", data={"csrf_token": csrf(admin), **data})
        assert answer.status_code == 400, data
        assert message in answer.get_data(as_text=True), data
    assert study_count(app) == 1


# --- uploading documents --------------------------------------------------------------------------


def upload(admin, content: bytes, name: str = "docs.json", **fields):
    """Upload a document file and, when it was queued, run the worker's import queue."""
    import io

    answer = admin.post(
        "/admin/studies/demo/documents",
        data={
            "csrf_token": csrf(admin),
            "file": (io.BytesIO(content), name),
            "format": "auto",
            **fields,
        },
        content_type="multipart/form-data",
    )
    if answer.status_code == 302:
        run_import_worker(admin.application)
    return answer


def test_upload_documents_like_marginalia_import(app, admin):
    make_study(app, documents=[("doc-0", ["Existing."])])
    paragraphs = {"story-1": ["Anna walks home.", "She sleeps."], "story-2": ["One.", "Two."]}
    answer = upload(admin, json.dumps(paragraphs).encode())
    assert answer.status_code == 302
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert "Imported 2 documents (4 segments)" in page
    assert document_ids(app) == ["doc-0", "story-1", "story-2"]
    jsonl = b'{"id": "j-1", "segments": ["A.", "B."], "meta": {"source": "gpt"}}\n'
    assert upload(admin, jsonl, "more.jsonl").status_code == 302
    assert document_ids(app)[-1] == "j-1"


def test_upload_errors_match_the_cli_and_import_nothing(
    app, admin, database_url, tmp_path, monkeypatch
):
    from app.cli import main

    make_study(app, documents=[("doc-0", ["Existing."])])
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.chdir(tmp_path)
    cases = {
        "empty.json": b'{"doc-1": ["fine", ""]}',
        "clash.json": b'{"new-1": ["fine"], "doc-0": ["clashes with an existing one"]}',
        "broken.json": b'{"doc-1": ["fine",\n  ]\n',
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        cli = CliRunner().invoke(main, ["import", "demo", name, "--no-ner"])
        assert cli.exit_code == 1, cli.output
        message = cli.output.strip().splitlines()[-1].removeprefix("error: ")
        answer = upload(admin, content, name, ner="")
        assert answer.status_code == 302, name  # queued; the worker reads the file
        page = admin.get("/admin/studies/demo").get_data(as_text=True)
        assert "Import failed: " + str(escape(message)) in page, (name, message)
        assert document_ids(app) == ["doc-0"], name  # one transaction: nothing imported
    assert "choose a document file" in upload(admin, b"", "").get_data(as_text=True)


def test_upload_gold_documents(app, admin):
    make_study(app, documents=[("doc-0", ["Existing."])])
    snac = {
        "gold-1": {
            "0": {
                "text": "Anna met Bob there.",
                "errors": [{"span": "Bob", "error_type": "CharE", "votes": 2}],
            }
        }
    }
    answer = upload(admin, json.dumps(snac).encode(), "gold.json", gold="1", format="snac")
    assert answer.status_code == 302
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert "1 gold error" in page and "1 gold errors" not in page
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Document.is_gold).where(Document.external_id == "gold-1"))


# --- settings and the dashboard ---------------------------------------------------------------------


def test_settings_form(app, admin):
    make_study(app)
    answer = admin.post(
        "/admin/studies/demo/settings",
        data={
            "csrf_token": csrf(admin),
            "platform": "prolific",
            "abandon_after_minutes": "20",
            "completion_url": "https://app.prolific.com/submissions/complete?cc=AB12",
            "randomise_conditions": "1",
            "qualification_f1": "0.7",
            "qualification_attempts": "3",
        },
    )
    assert answer.status_code == 302
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        assert study.platform == "prolific"
        assert study.settings == {
            "abandon_after_minutes": 20,
            "randomise_conditions": True,
            "qualification": {"min_f1": 0.7, "attempts": 3},
        }
    bad = admin.post(
        "/admin/studies/demo/settings",
        data={
            "csrf_token": csrf(admin),
            "platform": "prolific",
            "qualification_f1": "2",
        },
    )
    assert bad.status_code == 400 and "at most 1" in bad.get_data(as_text=True)


def test_dashboard_shows_progress_workers_and_charts(app, admin, client):
    make_study(
        app,
        documents=[
            ("alpha-1", ["Anna is here.", "Bob is there."]),
            ("beta-1", ["Carl sings.", "Dora dances."]),
        ],
        annotators_per_doc=2,
    )
    progress = admin.get("/admin/studies/demo/progress.json").get_json()
    assert progress["assignments"]["total"] == 0 and progress["slots"] == 4
    before = progress["fingerprint"]
    # a worker arrives, annotates and submits (worker requests carry no login)
    worker = app.test_client()
    token = worker.get("/s/demo?worker_id=wk-1").headers["Location"].split("/a/")[1]
    progress = admin.get("/admin/studies/demo/progress.json").get_json()
    assert progress["assignments"]["active"] == 1 and progress["fingerprint"] != before
    body = {"segment": 0, "start": 0, "end": 4, "text": "Anna", "category": "CharE"}
    assert worker.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    assert admin.get("/admin/studies/demo/progress.json").get_json()["annotations"] == {
        "in_progress": 1,
        "submitted": 0,
    }
    worker.post(f"/api/assignments/{token}/submit")
    progress = admin.get("/admin/studies/demo/progress.json").get_json()
    assert progress["assignments"]["submitted"] == 1 and progress["slots_submitted"] == 1
    assert progress["percent"] == 25.0
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert "wk-1" in page
    assert page.count('<svg class="chart"') == 2  # no suggestions or gold: no recall chart
    assert "nothing to recall yet" in page
    assert (
        "Annotations per error category" in page and "Error distribution by document source" in page
    )
    # The sources are drawn inside the Figure 4 chart (the page's document grid also names
    # "alpha-1", so look in the chart's own SVG for the source labels and their bars).
    figure = chart(page, "Error distribution by document source")
    assert ">alpha</text>" in figure and ">beta</text>" in figure
    assert "alpha · New character without introduction: 1 of 1 (100%)" in figure
    assert "<script" not in re.sub(
        r'<script type="module" src="/assets/[0-9a-f]{16}/js/admin/(dashboard|confirm).js"></script>',
        "",
        page,
    )
    for fmt in ("csv", "jsonl", "snac"):
        assert f"/admin/studies/demo/export.{fmt}" in page
    report = admin.get("/admin/studies/demo/report.json").get_json()
    assert report["workers"][0]["worker_id"] == "wk-1"
    assert report["categories"]["overall"]["CharE"] == 1


def test_dashboard_compares_conditions(app, admin):
    make_study(
        app,
        documents=[(f"doc-{i}", ["Anna is here.", "Bob is there."]) for i in range(4)],
        annotators_per_doc=4,
        suggestions="shown",
    )
    admin.post(
        "/admin/studies/demo/settings",
        data={"csrf_token": csrf(admin), "platform": "generic", "randomise_conditions": "1"},
    )
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert "No worker has been assigned a condition yet." in page
    worker = app.test_client()
    for name in ("w1", "w2", "w3", "w4"):
        token = worker.get(f"/s/demo?worker_id={name}").headers["Location"].split("/a/")[1]
        body = {"segment": 0, "start": 0, "end": 4, "text": "Anna", "category": "CharE"}
        assert worker.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
        worker.post(f"/api/assignments/{token}/submit")
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    table = page[page.index('id="condition-table"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr><td>(\w+)</td><td class=\"num\">(\d+)</td>", table)
    assert rows == [("assisted", "2"), ("unassisted", "2")]


def chart(page: str, title: str) -> str:
    """The SVG of the chart titled ``title`` in ``page`` (fails when it is not drawn)."""
    for svg in re.findall(r'<svg class="chart".*?</svg>', page, re.DOTALL):
        if f">{title}</title>" in svg:
            return svg
    raise AssertionError(f"no chart titled {title!r} on the page")


def test_dashboard_names_each_recall_and_shows_the_detector_precision(app, admin):
    """ "Suggestions marked" (capped by the detector's precision) and "recall on confident
    suggestions" (n/a with the reason where no threshold reaches dev precision 0.9)."""
    from app.db import session_scope
    from app.models import Assignment, DetectorVersion, Document, Suggestion

    make_study(app, documents=[("doc-1", ["Anna met Bob at the ball."])])
    worker = app.test_client()
    token = worker.get("/s/demo?worker_id=wk-1").headers["Location"].split("/a/")[1]
    with app.app_context(), session_scope() as session:
        doc = session.query(Document).filter_by(external_id="doc-1").one()
        for start, end, category, score in ((0, 4, "CharE", 0.99), (9, 12, "CharE", 0.5)):
            session.add(
                Suggestion(
                    document_id=doc.id,
                    segment=0,
                    start=start,
                    end=end,
                    text="Anna met Bob at the ball."[start:end],
                    category=category,
                    score=score,
                    detector="minilm",
                    detector_version="1+abc",
                )
            )
        calibration = {
            "categories": {
                "CharE": {"label": "character", "threshold": 0.9666, "dev_precision": 0.9091},
                "RefE": {"label": "event", "threshold": None, "reason": "never reaches 0.90"},
            }
        }
        session.add(DetectorVersion(detector="minilm", version="1+abc", calibration=calibration))
    body = {"segment": 0, "start": 0, "end": 4, "text": "Anna", "category": "CharE"}
    assert worker.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    assert worker.post(f"/api/assignments/{token}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        assert session.query(Assignment).filter_by(status="submitted").count() == 1
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    # the worker's ID links to their worker page (app/web/admin/workers.py)
    row = re.search(r'<tr data-worker="wk-1"[^>]*>.*?</tr>', page, re.DOTALL).group(0)
    assert re.search(r'<a class="mono" href="[^"]*worker\?id=wk-1">wk-1</a>', row)
    assert "50%" in row and "1/2" in row  # suggestions marked: Anna of Anna, Bob
    sure = re.search(r'<td class="num confident-recall">(.*?)</td>', row, re.DOTALL).group(1)
    assert "100%" in sure and "1/1" in sure  # Bob at 0.5 is below CharE's 0.9666
    listed = re.search(r'<ul class="confident" id="confident-thresholds">(.*?)</ul>', page, re.S)
    assert (
        "CharE: score ≥ 0.97 (precision ≥ 0.9 out-of-fold on SNaC train), detector precision 0.91 on SNaC dev"
        in listed.group(1)
    )
    assert "RefE: n/a (never reaches 0.90)" in listed.group(1)
    assert "Suggestions marked" in page and "Recall on confident" in page
