"""Maintained figures (issue 34): a big study's dashboard and report.json serve the report
the recompute job stored, with its age; the job runs when the counted work changes (every
write that changes it bumps the study's counted-work state), not when a worker adds an
annotation in progress. SQLite and Postgres; small studies with the inline limit at 0."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app.db import session_scope
from app.documents import work_state
from app.models import Study, StudyFigures, utcnow
from app.quality import figures
from app.quality.reporting import study_report
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import annotation_body, open_token
from tests.test_worker_management import act, create_researcher, logged_in

DOCS = [
    ("doc-1", ["Anna met Bob today.", "He left. She stayed."]),
    ("doc-2", ["Rain fell on the town.", "Nobody came."]),
]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def study(app):
    app.config["REPORT_INLINE_MAX_ASSIGNMENTS"] = 0  # every study is served from the store
    make_study(app, documents=DOCS, annotators_per_doc=2, suggestions="off")
    create_researcher(app, "ada@example.org", admin=True)
    return logged_in(app, "ada@example.org")


def work(client, worker: str, document: str, marks: list[tuple[int, str, str]], submit=True):
    texts = dict(DOCS)[document]
    token = open_token(client, worker, document)
    for n, (segment, text, category) in enumerate(marks):
        body = annotation_body(segment, text, category, client_id=f"{worker}-{n}", texts=texts)
        assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    if submit:
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    return token


def row(app) -> StudyFigures:
    with app.app_context(), session_scope() as session:
        found = session.scalar(select(StudyFigures).where(StudyFigures.include_practice.is_(False)))
        session.expunge_all()
        return found


def run_due_jobs(app) -> int:
    """What the worker does, with the debounce's wait skipped: every queued job is due now."""
    ran = 0
    with app.app_context():
        factory = app.extensions["db_sessionmaker"]
        with factory() as session:
            session.execute(update(StudyFigures).values(run_after=utcnow() - timedelta(1)))
            session.commit()
            while figures.run_next(session, "test-worker"):
                ran += 1
    return ran


def direct(app) -> dict:
    with app.app_context(), session_scope() as session:
        return study_report(session, session.scalar(select(Study)))


def test_served_figures_are_the_stored_ones_with_their_age(app, client, study):
    work(client, "w1", "doc-1", [(0, "Anna", "CharE")])
    work(client, "w2", "doc-1", [(0, "Anna", "CharE"), (1, "left", "GramE")])
    first = study.get("/admin/studies/demo/report.json")
    assert first.status_code == 202  # nothing stored yet: the first computation is queued
    assert first.get_json() == {"figures": pytest.approx(first.get_json()["figures"])}
    assert first.get_json()["figures"]["status"] == "queued"
    page = study.get("/admin/studies/demo").get_data(as_text=True)
    assert "being computed for the first time" in page and 'id="worker-table"' not in page
    assert run_due_jobs(app) == 1
    stored = row(app)
    assert stored.status == "done" and stored.computed_version == stored.version
    answer = study.get("/admin/studies/demo/report.json")
    assert answer.status_code == 200
    served = answer.get_json()
    meta = served.pop("figures")
    assert meta["stale"] is False and meta["status"] == "done" and meta["age_seconds"] >= 0
    assert served == json.loads(json.dumps(direct(app)))  # the stored report, as computed
    assert served["categories"]["total"] == 3
    page = study.get("/admin/studies/demo").get_data(as_text=True)
    assert 'id="figures-state"' in page and "and are up to date" in page
    assert 'data-worker="w2"' in page


def test_the_job_runs_when_counted_work_changes_not_on_an_add(app, client, study):
    work(client, "w1", "doc-1", [(0, "Anna", "CharE")])
    study.get("/admin/studies/demo/report.json")
    run_due_jobs(app)
    version = row(app).version
    # an annotation of an active assignment is not counted work: nothing to recompute
    token = work(client, "w2", "doc-1", [(0, "Bob", "CharE")], submit=False)
    assert row(app).version == version and row(app).status == "done"
    assert run_due_jobs(app) == 0
    # the submit is: the state moves, a recomputation is queued a little later
    before = utcnow()
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    queued = row(app)
    assert queued.version == version + 1 and queued.status == "queued"
    run_after = queued.run_after.replace(tzinfo=None)
    assert run_after >= (before + work_state.DEBOUNCE - timedelta(seconds=2)).replace(tzinfo=None)
    # meanwhile the last figures are served, marked stale
    served = study.get("/admin/studies/demo/report.json").get_json()
    assert served["figures"]["stale"] and served["figures"]["recomputing"]
    assert served["categories"]["total"] == 1
    page = study.get("/admin/studies/demo").get_data(as_text=True)
    assert "recomputing" in page
    assert run_due_jobs(app) == 1
    fresh = study.get("/admin/studies/demo/report.json").get_json()
    assert fresh["categories"]["total"] == 2 and not fresh["figures"]["stale"]


def test_a_change_during_a_computation_queues_it_again(app, client, study):
    work(client, "w1", "doc-1", [(0, "Anna", "CharE")])
    study.get("/admin/studies/demo/report.json")
    with app.app_context(), app.extensions["db_sessionmaker"]() as session:
        session.execute(update(StudyFigures).values(run_after=utcnow() - timedelta(1)))
        session.commit()
        job = figures.claim(session, "test-worker")
        assert job is not None and job.status == "running"
        study_id = job.study_id
        with session_scope() as other:  # a submit lands while the job computes
            work_state.changed(other, study_id)
        figures.run(session, job)
    done = row(app)
    assert done.status == "queued" and done.computed_version == done.version - 1


@pytest.mark.parametrize(
    "change",
    ["reject", "approve", "settings", "import", "remove", "review"],
)
def test_every_write_that_changes_counted_work_makes_the_figures_stale(app, client, study, change):
    work(client, "w1", "doc-1", [(0, "Anna", "CharE")])
    work(client, "w2", "doc-1", [(0, "Bob", "CharE")])
    if change == "approve":
        assert act(study, "w1", "reject").status_code == 303
    study.get("/admin/studies/demo/report.json")
    run_due_jobs(app)
    assert not study.get("/admin/studies/demo/report.json").get_json()["figures"]["stale"]
    if change in ("reject", "approve"):
        assert act(study, "w1", change).status_code == 303
    with app.app_context(), session_scope() as session:
        target = session.scalar(select(Study))
        if change in ("reject", "approve"):
            pass
        elif change == "settings":
            target.annotators_per_doc = 3  # what counts as complete: no bump, the hash moves
        elif change == "import":
            from app.documents.studies import import_documents
            from app.formats import DocumentInput

            import_documents(session, target, [DocumentInput("doc-3", ["Later."])])
        elif change == "remove":
            from app.documents.lifecycle import remove_document

            remove_document(session, target, "doc-2")
        else:
            from app.models import Document
            from app.quality.adjudication import set_status

            document = session.scalar(select(Document).where(Document.external_id == "doc-1"))
            set_status(session, document, {"status": "done", "version": 0}, "ada@example.org")
    served = study.get("/admin/studies/demo/report.json").get_json()
    assert served["figures"]["stale"] is True
    assert run_due_jobs(app) == 1
    served = study.get("/admin/studies/demo/report.json").get_json()
    assert served["figures"]["stale"] is False
    expected = json.loads(json.dumps(direct(app)))
    assert {k: v for k, v in served.items() if k != "figures"} == expected


def test_progress_json_says_when_new_figures_land(app, client, study):
    work(client, "w1", "doc-1", [(0, "Anna", "CharE")])
    before = study.get("/admin/studies/demo/progress.json").get_json()
    assert before["figures"]["computed_at"] is None
    study.get("/admin/studies/demo")
    run_due_jobs(app)
    after = study.get("/admin/studies/demo/progress.json").get_json()
    assert after["figures"]["computed_at"] and after["figures"]["stale"] is False
    assert after["fingerprint"] != before["fingerprint"]


def test_a_small_study_is_computed_in_the_request(app, client):
    make_study(app, documents=DOCS, suggestions="off")
    create_researcher(app, "ada@example.org", admin=True)
    ada = logged_in(app, "ada@example.org")
    work(client, "w1", "doc-1", [(0, "Anna", "CharE")])
    served = ada.get("/admin/studies/demo/report.json").get_json()
    assert served["figures"]["status"] == "live" and served["categories"]["total"] == 1
    assert row(app) is None  # nothing stored, nothing queued
