"""The served report (app/quality/served.py) over real HTTP, on SQLite and Postgres: a big study's
dashboard and report.json serve the figure job's stored report with its state; each kind of
change to the counted work makes it stale (app/models/changes.py) and nothing else does; one
job per study, debounced; a small study is computed in the request as before."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from app import create_app
from app.db import session_scope
from app.models import Document, FigureJob, GoldError, Study, WorkChange, utcnow
from app.quality.figure_jobs import run_next
from app.quality.reporting import study_report
from tests.conftest import BACKENDS, TEST_PASSWORD_HASH, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, open_token
from tests.test_admin import login

THIRD = ("doc-3", ["A third document.", "Nobody works on it."])


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path) -> str:
    return make_database_url(request.param, request, tmp_path)


def _app(database_url: str, inline: int):
    return create_app(
        {
            "DATABASE_URL": database_url,
            "TESTING": True,
            "SECRET_KEY": "test",
            "PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH,
            "REPORT_INLINE_ANNOTATIONS": inline,  # 0: any study with work is "big"
            "REPORT_REFRESH_SECONDS": 0,
        }
    )


@pytest.fixture
def app(database_url):
    application = _app(database_url, 0)
    yield application
    application.extensions["db_engine"].dispose()


@pytest.fixture
def admin(app):
    from app.researchers.accounts import create_researcher
    from tests.test_admin import EMAIL, PASSWORD

    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    client = app.test_client()
    assert login(client).status_code == 302
    return client


def work(app, worker: str, text: str = "Anna", submit: bool = True, document="doc-1") -> str:
    client = app.test_client()
    token = open_token(client, worker, document)
    body = annotation_body(0, text, "CharE", texts=dict([*DOCUMENTS, THIRD])[document])
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    if submit:
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    return token


@pytest.fixture
def study(app, admin):
    app.config["FIGURES_GAMMA_SECONDS"] = 0  # γ off: this is the report's path (γ: elsewhere)
    make_study(app, documents=[*DOCUMENTS, THIRD], annotators_per_doc=3)
    work(app, "w1")
    work(app, "w2", "Paris")
    return "demo"


def run_jobs(app, *, waited: bool = True) -> int:
    """Run the figure jobs; ``waited``: as if their debounce interval had passed."""
    ran = 0
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        if waited:
            session.execute(update(FigureJob).values(run_after=utcnow() - timedelta(seconds=1)))
            session.commit()
        try:
            while run_next(session, "test"):
                ran += 1
        finally:
            session.close()
    return ran


def report_json(admin, query: str = "") -> tuple[int, dict]:
    answer = admin.get(f"/admin/studies/demo/report.json{query}")
    return answer.status_code, answer.get_json()


def current(app, admin) -> dict:
    report_json(admin)  # queues a job when stale
    run_jobs(app)
    status, body = report_json(admin)
    assert status == 200 and body["served"]["state"] == "current", body["served"]
    return body


def test_served_report_equals_the_inline_computation_once_the_job_ran(app, admin, study):
    status, body = report_json(admin)
    assert status == 202 and set(body) == {"served"}  # nothing stored yet: queued, no report
    assert body["served"] | {"runs_after": None} == {
        "mode": "stored",
        "state": "none",
        "computed_at": None,
        "age_seconds": None,
        "seconds": None,
        "job": "queued",
        "runs_after": None,
        "error": None,
    }
    assert run_jobs(app) == 1
    status, body = report_json(admin)
    served = body.pop("served")
    assert status == 200 and served["state"] == "current" and served["job"] is None
    assert served["computed_at"] and served["age_seconds"] >= 0 and served["seconds"] >= 0
    with app.app_context(), session_scope() as session:
        demo = session.scalar(select(Study))
        inline = json.loads(json.dumps(study_report(session, demo), default=str))
    assert body == inline
    assert body["categories"]["total"] == 2 and len(body["workers"]) == 2


def _submit(app, admin):
    work(app, "w3", "Zoë")


def _reject(app, admin):
    data = {"worker": "w1", "action": "reject", "csrf_token": _csrf(admin)}
    assert admin.post("/admin/studies/demo/workers/action", data=data).status_code == 303


def _approve(app, admin):  # after _reject (PREPARE)
    data = {"worker": "w1", "action": "approve", "csrf_token": _csrf(admin)}
    assert admin.post("/admin/studies/demo/workers/action", data=data).status_code == 303


def _import(app, admin):
    from tests.helpers import run_import_worker

    payload = json.dumps({"doc-9": ["New.", "Text."]}).encode()
    data = {"file": (io.BytesIO(payload), "new.json"), "format": "auto", "csrf_token": _csrf(admin)}
    assert admin.post("/admin/studies/demo/documents", data=data).status_code == 302
    assert run_import_worker(app) == {"done": 1}


def _remove(app, admin):
    data = {"document_id": "doc-3", "csrf_token": _csrf(admin)}
    assert admin.post("/admin/studies/demo/documents/remove", data=data).status_code in (302, 303)


def _replace(app, admin):
    from app.documents.lifecycle import replace_documents
    from app.formats import DocumentInput

    with app.app_context(), session_scope() as session:
        demo = session.scalar(select(Study))
        replace_documents(session, demo, [DocumentInput("doc-3", ["Replaced.", "Text."])])


def _gold(app, admin):
    with app.app_context(), session_scope() as session:
        doc = session.scalar(select(Document).where(Document.external_id == "doc-1"))
        session.add(
            GoldError(document_id=doc.id, segment=0, start=0, end=4, category="CharE", text="Anna")
        )


def _settings(app, admin):
    with app.app_context(), session_scope() as session:
        session.scalar(select(Study)).annotators_per_doc = 2


def _suggestions(app, admin):
    from types import SimpleNamespace

    from app.detection.worker import store_suggestions

    row = SimpleNamespace(
        segment=0, start=0, end=4, text="Anna", category="CharE", score=0.9, detector="t",
        detector_version="t-1",
    )  # fmt: skip
    with app.app_context(), session_scope() as session:
        doc = session.scalar(select(Document).where(Document.external_id == "doc-1"))
        store_suggestions(session, doc, [row])


def _review(app, admin):
    answer = admin.post(
        "/admin/studies/demo/review/status?document=doc-1",
        json={"status": "in_review", "version": 0},
        headers={"X-CSRFToken": _csrf(admin)},
    )
    assert answer.status_code < 400, answer.get_data(as_text=True)[:300]


def _csrf(admin) -> str:
    from tests.test_admin import TOKEN_PATTERN

    page = admin.get("/admin/studies/demo/settings").get_data(as_text=True)
    return TOKEN_PATTERN.search(page).group(1)


CHANGES = {
    "submit": _submit,
    "reject": _reject,
    "approve": _approve,
    "import": _import,
    "document removed": _remove,
    "document replaced": _replace,
    "gold": _gold,
    "settings": _settings,
    "suggestions": _suggestions,
    "document review": _review,
}

PREPARE = {"approve": _reject}


@pytest.mark.parametrize("change", CHANGES)
def test_each_change_to_the_counted_work_makes_the_served_report_stale(app, admin, study, change):
    if change in PREPARE:
        PREPARE[change](app, admin)
    before = current(app, admin)
    CHANGES[change](app, admin)
    status, body = report_json(admin)
    assert status == 200 and body["served"]["state"] == "stale", change
    assert body["served"]["job"] == "queued"  # the change queued a recomputation
    assert body["categories"] == before["categories"]  # the last computation's figures
    after = current(app, admin)
    with app.app_context(), session_scope() as session:
        fresh = json.loads(json.dumps(study_report(session, session.scalar(select(Study)))))
    assert {k: v for k, v in after.items() if k != "served"} == fresh


def _arrive(app, admin):
    work(app, "w4", submit=False)  # an arrival and an annotation in an active assignment


def _look(app, admin):
    for path in ("", "/progress.json", "/export.csv", "/export.parquet", "/workers"):
        assert admin.get(f"/admin/studies/demo{path}").status_code == 200, path


def _pause(app, admin):
    data = {"action": "pause", "csrf_token": _csrf(admin)}
    assert admin.post("/admin/studies/demo/status", data=data).status_code in (302, 303)


def _block(app, admin):
    for action in ("block", "unblock", "note"):
        data = {"worker": "w1", "action": action, "note": "hi", "csrf_token": _csrf(admin)}
        assert admin.post("/admin/studies/demo/workers/action", data=data).status_code == 303


@pytest.mark.parametrize("action", [_arrive, _look, _pause, _block])
def test_nothing_else_makes_it_stale(app, admin, study, action):
    current(app, admin)
    action(app, admin)
    status, body = report_json(admin)
    assert status == 200 and body["served"]["state"] == "current"
    assert run_jobs(app) == 0


def test_one_job_per_study_and_debounced(app, admin, study, database_url):
    current(app, admin)
    _submit(app, admin)
    for _ in range(3):
        report_json(admin)
        admin.get("/admin/studies/demo")
    with app.app_context(), session_scope() as session:
        jobs = session.scalars(select(FigureJob)).all()
        assert [j.status for j in jobs] == ["queued"]  # one job: the report and its figures
        changes = session.scalar(select(func.count()).select_from(WorkChange))
    assert run_jobs(app) == 1
    with app.app_context(), session_scope() as session:  # the job pruned the log to its mark
        assert session.scalar(select(func.count()).select_from(WorkChange)) < changes
    slow = _app(database_url, 0)
    slow.config["REPORT_REFRESH_SECONDS"] = 3600
    try:
        client = slow.test_client()
        assert login(client).status_code == 302
        work(slow, "w5", document="doc-2", text="Another")
        assert client.get("/admin/studies/demo/report.json").get_json()["served"]["job"] == "queued"
        assert run_jobs(slow, waited=False) == 0  # not before an hour after the last computation
        with slow.app_context(), session_scope() as session:
            job = session.scalar(select(FigureJob))
            assert job.run_after.replace(tzinfo=None) >= job.report_at.replace(
                tzinfo=None
            ) + timedelta(seconds=3599)
    finally:
        slow.extensions["db_engine"].dispose()


def test_the_dashboard_says_how_old_its_figures_are(app, admin, study):
    progress = admin.get("/admin/studies/demo/progress.json").get_json()["fingerprint"]
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert 'id="report-pending"' in page and "not computed yet · queued" in page
    run_jobs(app)  # the polled fingerprint changes: the page refreshes its figures
    assert admin.get("/admin/studies/demo/progress.json").get_json()["fingerprint"] != progress
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert 'data-state="current"' in page and " ago · up to date" in page
    assert 'id="worker-table"' in page and 'id="report-pending"' not in page
    _submit(app, admin)
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert 'data-state="stale"' in page and " ago · recomputation queued" in page


def test_bad_input_is_never_a_500(app, admin, study):
    for query in ("?include_practice=x", "?include_practice=1", "?include_practice=%00"):
        status, body = report_json(admin, query)
        assert status in (200, 202) and "served" in body
    assert admin.get("/admin/studies/nope/report.json").status_code == 404
    assert admin.get("/admin/studies/demo?include_practice=%ff").status_code == 200


def _card(admin) -> str:
    answer = admin.get("/admin/studies/demo/export.parquet")
    assert answer.status_code == 200
    return zipfile.ZipFile(io.BytesIO(answer.data)).read("README.md").decode()


def test_the_dataset_card_reads_the_stored_agreement(app, admin, study):
    assert "(not computed yet: the study is big" in _card(admin)
    assert run_jobs(app) == 0  # an export does not queue the report: the dashboard does
    report_json(admin)
    run_jobs(app)
    assert "UTC, for the work as exported)" in _card(admin)
    _submit(app, admin)
    assert "the work changed since: they may differ from this export" in _card(admin)


def test_a_small_study_is_computed_in_the_request(database_url):
    app = _app(database_url, 5000)
    try:
        make_study(app, documents=DOCUMENTS)
        work(app, "w1")
        with app.app_context(), session_scope() as session:
            from app.researchers.accounts import create_researcher
            from tests.test_admin import EMAIL, PASSWORD

            create_researcher(session, EMAIL, PASSWORD, role="admin")
        client = app.test_client()
        assert login(client).status_code == 302
        body = client.get("/admin/studies/demo/report.json").get_json()
        assert body["served"]["mode"] == "inline" and body["categories"]["total"] == 1
        work(app, "w2")  # seen at once, no job
        body = client.get("/admin/studies/demo/report.json").get_json()
        assert body["categories"]["total"] == 2 and run_jobs(app) == 0
        assert "up to date (computed for this page)" in client.get("/admin/studies/demo").text
    finally:
        app.extensions["db_engine"].dispose()


def test_the_job_reads_the_last_change_only_once_writers_in_flight_committed(app, study):
    """Postgres hands ids out in insert order: a writer's uncommitted change must hold the job
    back (app/models/changes.py), or a report could be current while missing it."""
    if app.extensions["db_engine"].dialect.name != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from app.models import changes

    factory = app.extensions["db_sessionmaker"]
    with app.app_context():
        writer, job = factory(), factory()
        try:
            study_id = writer.scalar(select(Study.id))
            changes.mark(writer, study_id, "in flight")
            writer.flush()  # its id is taken, not committed
            job.execute(text("SET lock_timeout = '200ms'"))
            with pytest.raises(OperationalError, match="lock timeout"):
                changes.settled(job, study_id)
            job.rollback()
            writer.commit()
            mine = writer.scalar(select(func.max(WorkChange.id)))
            assert changes.settled(job, study_id) == mine
            job.commit()
        finally:
            writer.close()
            job.close()
