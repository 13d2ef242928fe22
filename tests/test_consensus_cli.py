"""The worker models' consensus from the command line (docs/CONTRACT.md):
``marginalia export --layer consensus --min-posterior P`` (with its ``posterior`` column) and
``marginalia review auto-accept --min-posterior P``, and each review candidate's consensus
posterior, on the five-sentence case of tests/test_reliability.py (a, b and c mark the first
two sentences, *every* all five, *none* nothing): MACE's posteriors are 1 for the first two
sentences and 0 for the other three (two sentences against one worker); the figure job that computed them applies the pause
rule's expected-F1 bar. SQLite and Postgres."""

from __future__ import annotations

import csv
import io
import json

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import (
    AdjudicatedError,
    ConsensusUnit,
    Document,
    Study,
    WorkerAction,
    WorkerReview,
)
from app.rules.stored_figures import stored_reliability
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import annotation_body, cli_in_process, open_token

TEXT = "Anna sings. Bob dances. Cleo sleeps. Dan eats. Eve reads."
SENTENCES = ["Anna sings.", "Bob dances.", "Cleo sleeps.", "Dan eats.", "Eve reads."]
BOUNDS = [(0, 11), (12, 23), (24, 36), (37, 46), (47, 57)]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def five_sentences(app, client, pause: dict | None = None) -> None:
    """The study ``demo`` with document ``d`` (and the pause rule ``pause``) and its five
    workers' submitted work, and the worker models computed by the figure job (γ's time
    budget none: these tests are the models')."""
    from app.quality import figure_jobs, figures

    make_study(app, documents=[("d", [TEXT])], annotators_per_doc=5)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "demo"))
        study.settings = {**(study.settings or {}), **({"pause": pause} if pause else {})}
    for worker, marked in (("a", 2), ("b", 2), ("c", 2), ("every", 5), ("none", 0)):
        token = open_token(client, worker=worker, document="d")
        for sentence in SENTENCES[:marked]:
            body = annotation_body(0, sentence, "CharE", texts=[TEXT])
            assert (
                client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
            )
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    app.config["FIGURES_GAMMA_SECONDS"] = 0
    with app.app_context(), session_scope() as session:
        figures.enqueue(session, session.scalar(select(Study)), False)
    with app.app_context(), session_scope() as session:
        assert figure_jobs.run_next(session, "test")


def stored_posteriors(app) -> dict[tuple[int, int], float]:
    with app.app_context(), session_scope() as session:
        return {
            (u.start, u.end): u.posterior
            for u in session.scalars(select(ConsensusUnit).where(ConsensusUnit.category == "CharE"))
        }


def test_export_and_auto_accept_by_posterior_from_the_command_line(app, client, database_url):
    five_sentences(app, client, pause={"after": 1, "min_expected_f1": 0.5})
    # the figure job applied the pause rule (app/annotation/pausing.py) with the expected F1
    # it computed: 1 for a, b, c, 4/7 for *every*, 0 for *none*: *none* alone is paused
    # (a bar on MACE's competence would pause *every* first: it rates *none* higher)
    with app.app_context(), session_scope() as session:
        paused = session.execute(
            select(WorkerAction.worker_id, WorkerAction.actor, WorkerAction.detail).where(
                WorkerAction.action == "pause"
            )
        ).all()
        blocked = session.scalars(select(WorkerReview.worker_id).where(WorkerReview.blocked))
        assert list(blocked) == ["none"]
    assert paused == [("none", "pause rule", "expected F1 0.000 < 0.5 after 1 documents")]
    with app.app_context(), session_scope() as session:
        models, _ = stored_reliability(session, session.scalar(select(Study)))
    assert models["every"]["expected_f1"] == pytest.approx(4 / 7, abs=0.01)
    assert models["none"]["competence"] > models["every"]["competence"]  # measured 0.94, 0.82
    stored = stored_posteriors(app)
    assert sorted(stored) == BOUNDS  # every sentence was marked (by *every*)
    assert all(stored[b] > 0.99 for b in BOUNDS[:2]) and all(stored[b] < 0.01 for b in BOUNDS[2:])

    def run(*args):
        return cli_in_process({"DATABASE_URL": database_url}, *args)

    held = run(
        "export", "demo", "--format", "csv", "--layer", "consensus", "--min-posterior", "0.9"
    )
    assert held.returncode == 0, held.stderr
    rows = list(csv.DictReader(io.StringIO(held.stdout)))
    assert list(rows[0])[-1] == "posterior"
    assert [(int(r["span_start"]), int(r["span_end"])) for r in rows] == BOUNDS[:2]
    assert {r["worker_id"] for r in rows} == {"consensus"}
    for r in rows:
        assert float(r["posterior"]) == stored[(int(r["span_start"]), int(r["span_end"]))]
    every = run(
        "export", "demo", "--format", "jsonl", "--layer", "consensus", "--min-posterior", "0"
    )
    lines = [json.loads(line) for line in every.stdout.splitlines()]
    assert [(r["span_start"], r["span_end"], r["posterior"]) for r in lines] == [
        (*b, stored[b]) for b in BOUNDS
    ]
    for bad in (
        ("--layer", "consensus", "--min-posterior", "1.5"),
        ("--layer", "consensus", "--min-posterior", "high"),
        ("--min-posterior", "0.5"),  # the workers' layer has no posterior
    ):
        refused = run("export", "demo", "--format", "csv", *bad)
        assert refused.returncode != 0 and refused.stdout == "", bad
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr

    # auto-accept: a bad posterior writes nothing; by votes alone (1) it would take all five
    # candidates, with the consensus at 0.9 the two it holds
    refused = run("review", "auto-accept", "demo", "--min-workers", "1", "--min-posterior", "2")
    assert refused.returncode == 1 and "from 0 to 1" in refused.stderr
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(AdjudicatedError.id)) is None
        from app.quality.review_state import review_json

        document = session.scalar(select(Document))
        candidates = review_json(session, document)["candidates"]
        assert sorted((c["proposal"]["start"], c["votes"], c["posterior"]) for c in candidates) == [
            (start, 4 if i < 2 else 1, stored[(start, end)])
            for i, (start, end) in enumerate(BOUNDS)
        ]
    done = run("review", "auto-accept", "demo", "--min-workers", "1", "--min-posterior", "0.9")
    assert done.returncode == 0, done.stderr
    with app.app_context(), session_scope() as session:
        accepted = session.execute(
            select(AdjudicatedError.start, AdjudicatedError.end, AdjudicatedError.decision)
        ).all()
    assert sorted(accepted) == [(*b, "accepted") for b in BOUNDS[:2]]


def test_the_stored_worker_models_and_when_they_were_computed(app, database_url):
    """The reader of the stored figures (app/rules/stored_figures.py): the practice-free
    row's worker models and when it finished, as last computed; nothing before the first
    computation or without a result; the row with practice and another study's row are
    not read."""
    from datetime import UTC, datetime

    from app.models import FigureJob

    make_study(app, "other")
    make_study(app)
    with app.app_context(), session_scope() as session:
        other = session.scalar(select(Study).where(Study.slug == "other"))
        done = {"models": {"workers": {"z": {}}}}
        session.add(FigureJob(study_id=other.id, include_practice=False, result=done))
    finished = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    a = {"competence": 0.9, "expected_f1": 0.75}
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "demo"))
        assert stored_reliability(session, study) == ({}, None)
        session.add(FigureJob(study_id=study.id, include_practice=True, result={"x": 1}))
        session.add(FigureJob(study_id=study.id, include_practice=False, status="running"))
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "demo"))
        assert stored_reliability(session, study) == ({}, None)  # no result yet
        row = session.scalar(
            select(FigureJob).where(
                FigureJob.study_id == study.id, FigureJob.include_practice.is_(False)
            )
        )
        row.result = {"models": {"workers": {"a": a}, "units": 3}}
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "demo"))
        assert stored_reliability(session, study) == ({"a": a}, None)  # never finished
        row = session.scalar(
            select(FigureJob).where(
                FigureJob.study_id == study.id, FigureJob.include_practice.is_(False)
            )
        )
        row.finished_at = finished
    with app.app_context(), session_scope() as session:
        demo = session.scalar(select(Study).where(Study.slug == "demo"))
        models, when = stored_reliability(session, demo)
    assert models == {"a": a}
    assert when is not None and when.startswith("2026-01-02T03:04:05")
