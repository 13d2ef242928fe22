"""A study's learned detector retrained as its curated work grows
(``--retrain-every N``, app/detection/retraining.py): the worker queues and runs a training
each time N more documents are curated, the study switches to the new model and its
suggestions name the model version; a training the data cannot feed fails with its reason;
the due count is the training data's document count. SQLite and Postgres."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.db import session_scope
from app.models import (
    DetectorTraining,
    Document,
    DocumentReview,
    Study,
    Suggestion,
)
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.test_learned_detector import TAXONOMY, NotThisOne, curate, story


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def sailing_study(app, tmp_path, documents: int) -> None:
    taxonomy = tmp_path / "sailing.yaml"
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    make_study(
        app,
        taxonomy=str(taxonomy),
        documents=[(f"story-{n}", story(n)[0]) for n in range(documents)],
        suggestions="shown",
    )


def cli(database_url, monkeypatch, *args: str):
    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return CliRunner().invoke(main, list(args))


def trainings(app) -> list[tuple[int, str, int | None]]:
    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(DetectorTraining).order_by(DetectorTraining.id))
        return [(t.documents, t.status, t.model_id) for t in rows]


def run_worker(app, detector=None) -> dict:
    from app.detection.worker import work

    with app.app_context():
        return work(app.extensions["db_sessionmaker"], detector, once=True, figures=False)


@pytest.mark.slow  # trains twice (spaCy, torch and the encoder)
def test_the_worker_retrains_every_n_curated_documents_and_the_study_follows(
    app, client, database_url, tmp_path, monkeypatch
):
    sailing_study(app, tmp_path, 12)
    shown = cli(database_url, monkeypatch, "study", "detector", "demo", "--retrain-every", "5")
    assert shown.exit_code == 0, shown.output
    assert shown.output.splitlines()[-2:] == [
        "shipped",
        "retrained every 5 curated documents (adjudicated layer); no training yet",
    ]
    curate(app, 4)
    run_worker(app)
    assert trainings(app) == []  # 4 curated documents: not yet

    curate(app, 5, first=4)  # 10 off-topic sentences in 5 documents: enough for a head
    run_worker(app)
    [(documents, status, first_model)] = trainings(app)
    assert (documents, status) == (5, "done") and first_model is not None
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study)).settings["detector_model"] == first_model

    # the learned model (never the worker's own detector) suggests on an uncurated document
    stats = run_worker(app, NotThisOne())
    assert stats["done"] == 12 and stats["failed"] == 0
    with app.app_context(), session_scope() as session:
        doc = session.scalar(select(Document).where(Document.external_id == "story-10"))
        rows = session.scalars(select(Suggestion).where(Suggestion.document_id == doc.id)).all()
        first_version = {s.detector_version for s in rows}
        assert {s.detector for s in rows} == {"learned"} and len(first_version) == 1
        assert {(s.segment, s.text) for s in rows} == set(story(10)[1])

    curate(app, 9, first=5)
    run_worker(app)
    assert len(trainings(app)) == 1  # 9 curated: the next at 5 + 5 = 10
    curate(app, 10, first=9)
    run_worker(app)
    assert [t[:2] for t in trainings(app)] == [(5, "done"), (10, "done")]
    second_model = trainings(app)[1][2]
    assert second_model not in (None, first_model)
    run_worker(app, NotThisOne())
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study)).settings["detector_model"] == second_model
        doc = session.scalar(select(Document).where(Document.external_id == "story-10"))
        rows = session.scalars(select(Suggestion).where(Suggestion.document_id == doc.id)).all()
        assert {s.detector_version for s in rows}.isdisjoint(first_version)
    report = client.get("/admin/studies/demo/report.json")  # not logged in: no figures leak
    assert report.status_code in (302, 401, 403)
    shown = cli(database_url, monkeypatch, "study", "detector", "demo")
    assert shown.output.splitlines()[-1] == (
        "retrained every 5 curated documents (adjudicated layer); last training done at 10 documents"
    )
    off = cli(database_url, monkeypatch, "study", "detector", "demo", "--retrain-every", "0")
    assert off.exit_code == 0 and "retrained" not in off.output


def test_a_training_the_data_cannot_feed_fails_with_its_reason_and_waits_for_more(
    app, database_url, tmp_path, monkeypatch
):
    sailing_study(app, tmp_path, 4)
    assert cli(database_url, monkeypatch, "study", "detector", "demo", "--retrain-every", "1")
    curate(app, 1)
    run_worker(app)
    [(documents, status, model)] = trainings(app)
    assert (documents, status, model) == (1, "failed", None)
    with app.app_context(), session_scope() as session:
        error = session.scalar(select(DetectorTraining.last_error))
        assert "training needs at least two" in error
        assert "detector_model" not in session.scalar(select(Study)).settings
    run_worker(app)
    assert len(trainings(app)) == 1  # no new curated document: not queued again


@pytest.mark.slow  # trains (spaCy, torch and the encoder)
def test_a_model_that_would_suggest_nothing_is_not_used(app, database_url, tmp_path, monkeypatch):
    sailing_study(app, tmp_path, 4)
    assert cli(database_url, monkeypatch, "study", "detector", "demo", "--retrain-every", "4")
    curate(app, 4)  # 8 off-topic sentences: under the 10 a head needs
    run_worker(app)
    assert trainings(app) == [(4, "failed", None)]
    with app.app_context(), session_scope() as session:
        assert "no category would be suggested" in session.scalar(
            select(DetectorTraining.last_error)
        )
        assert "detector_model" not in session.scalar(select(Study)).settings


def test_bad_retrain_options_are_one_line_and_change_nothing(app, database_url, monkeypatch):
    make_study(app)
    for args, message in (
        (["--retrain-every", "-1"], "--retrain-every must be"),
        (["--retrain-every", "3", "--min-workers", "2"], "applies to the workers' layer only"),
        (["--retrain-every", "3", "--layer", "workers", "--min-workers", "0"], "be from 1 to 1000"),
    ):
        result = cli(database_url, monkeypatch, "study", "detector", "demo", *args)
        assert result.exit_code == 1 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
    with app.app_context(), session_scope() as session:
        assert "detector_retrain" not in (session.scalar(select(Study)).settings or {})


def test_the_due_count_is_the_training_datas_document_count(app, client, database_url):
    from app.detection.study_data import curated_documents, read_study
    from tests.helpers import open_token

    make_study(app)  # SNaC's taxonomy, the demo documents
    for worker in ("w1", "w2"):
        token = open_token(client, worker)
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        doc = session.scalars(select(Document).order_by(Document.position)).first()
        session.add(DocumentReview(document_id=doc.id, status="done", updated_by="ada"))
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        for layer, k in (("adjudicated", 1), ("workers", 1), ("workers", 2), ("workers", 3)):
            counted = curated_documents(session, study, layer, k)
            assert counted == len(read_study(session, study, layer, k).documents), (layer, k)
        assert curated_documents(session, study, "gold") == 0


def test_workers_checking_at_once_queue_one_training(app, database_url, tmp_path, monkeypatch):
    """Several worker processes look for due trainings at the same moment: one is queued."""
    import threading

    from app.detection.retraining import queue_due

    sailing_study(app, tmp_path, 4)
    assert cli(database_url, monkeypatch, "study", "detector", "demo", "--retrain-every", "2")
    curate(app, 2)
    factory = app.extensions["db_sessionmaker"]
    for _ in range(5):
        with app.app_context(), session_scope() as session:
            session.query(DetectorTraining).delete()
        start = threading.Barrier(4)
        errors: list[BaseException] = []

        def look(start=start, errors=errors) -> None:
            try:
                start.wait()
                with app.app_context(), factory() as session:
                    queue_due(session)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=look) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert trainings(app) == [(2, "queued", None)]
