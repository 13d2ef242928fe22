"""Figures kept current per document (app/quality/document_figures.py, corpus_gamma.py,
figure_jobs.py): the worker brings a study's γ, unitizing α and worker models current after
its counted work changes, recomputing only the documents whose work changed, and what it
gives is what a computation from nothing gives; the study's γ equals pygamma's own parts put
together by hand; MACE's restarts repeat themselves; ``marginalia report`` reads what is
current. On SQLite and Postgres where a database is involved."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from sqlalchemy import delete, func, select, update

from app.db import session_scope
from app.models import DocumentFigures, FigureJob, Study
from app.quality.corpus_gamma import SAMPLE_UNITS
from app.quality.figure_jobs import queue_changed, run_next
from app.quality.reporting import study_report
from app.quality.unitizing import PRECISION, SAMPLES, SEED, Unit
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import annotation_body, api_add, open_token

TEXTS = [
    "Anna walks to the harbour. Pedro waits there with a letter.",
    "The letter says that Anna must leave. She reads it twice.",
]
DOCS = [(f"doc-{n}", TEXTS) for n in range(4)]
MARKS = {  # worker -> (segment, text, category) marked on every document
    "w1": [(0, "Anna walks", "CharE"), (1, "reads it twice", "GramE")],
    "w2": [(0, "Anna", "CharE"), (1, "must leave", "RefE")],
    "w3": [(0, "the harbour", "SceneE"), (1, "reads it", "GramE")],
}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def submit(client, worker: str, document: str, marks) -> None:
    token = open_token(client, worker=worker, document=document)
    for segment, text, category in marks:
        body = annotation_body(segment, text, category, texts=TEXTS)
        assert api_add(client, token, body).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200


@pytest.fixture
def study(app, client):
    make_study(app, documents=DOCS, annotators_per_doc=3)
    for worker, marks in MARKS.items():
        for document, _ in DOCS[:3]:
            submit(client, worker, document, marks)
    return "demo"


def run_jobs(app, *, at_once: bool = True) -> int:
    """The worker's figure step until nothing is runnable (the one-shot worker's)."""
    ran = 0
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        try:
            queue_changed(session, at_once=at_once)
            while run_next(session, "test"):
                ran += 1
        finally:
            session.close()
    return ran


def stored(app) -> dict:
    with app.app_context(), session_scope() as session:
        return study_report(session, session.scalar(select(Study)))


def figures_of(report: dict) -> dict:
    agreement = report["agreement"]
    return {
        "gamma": agreement["gamma"],
        "unitized_alpha": agreement["unitized_alpha"],
        "pairs": agreement["pairs"],
        "per_document": [
            (r["document"], r["gamma"], r["unitized_alpha"]) for r in agreement["per_document"]
        ],
        "models": agreement["worker_models"],
        "reliability": {w["worker_id"]: w["reliability"] for w in report["workers"]},
    }


@pytest.mark.slow
def test_one_submission_recomputes_one_document_and_equals_a_computation_from_nothing(
    app, client, study
):
    assert run_jobs(app) == 1
    first = stored(app)
    assert first["agreement"]["unitized"]["state"] == "current"
    assert first["agreement"]["gamma"]["all"]["gamma"] is not None
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(DocumentFigures)) == 3
    submit(client, "w4", "doc-3", MARKS["w1"])  # doc-3's second worker: it enters pairs only
    submit(client, "w5", "doc-3", MARKS["w2"])
    submit(client, "w6", "doc-3", MARKS["w3"])  # ... and now the study's figures too
    assert stored(app)["agreement"]["unitized"]["state"] == "stale"
    assert run_jobs(app) == 1
    with app.app_context(), session_scope() as session:
        job = session.scalar(select(FigureJob))
        unitized = job.result["unitized"]
        assert unitized["computed"] == 1 and unitized["missing"] == 0  # doc-3's part only
    incremental = stored(app)
    assert incremental["agreement"]["unitized"]["state"] == "current"
    assert incremental["agreement"]["unitized"]["study"]["documents"] == 4
    with app.app_context(), session_scope() as session:  # forget every cached part
        session.execute(delete(DocumentFigures))
        session.execute(update(FigureJob).values(result=None, result_key=None, report_change=None))
    assert run_jobs(app) == 1
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(FigureJob)).result["unitized"]["computed"] == 4
    assert figures_of(stored(app)) == figures_of(incremental)


@pytest.mark.slow
def test_a_job_out_of_time_leaves_the_rest_to_the_next_and_ends_the_same(app, client, study):
    app.config["FIGURES_GAMMA_SECONDS"] = 1e-9  # one document's part per job
    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        try:
            queue_changed(session, at_once=True)
            assert run_next(session, "test")
            job = session.scalar(select(FigureJob))
            assert job.status == "queued"  # partial: back at once for the rest
            assert job.result["unitized"]["computed"] == 1 and job.result["unitized"]["missing"]
        finally:
            session.close()
    assert stored(app)["agreement"]["unitized"]["state"] == "partial"
    assert run_jobs(app) >= 2
    partial_then_current = figures_of(stored(app))
    assert stored(app)["agreement"]["unitized"]["state"] == "current"
    app.config["FIGURES_GAMMA_SECONDS"] = 600
    with app.app_context(), session_scope() as session:
        session.execute(delete(DocumentFigures))
        session.execute(update(FigureJob).values(result=None, result_key=None, report_change=None))
    run_jobs(app)
    assert figures_of(stored(app)) == partial_then_current


def test_the_one_shot_worker_brings_a_changed_study_current(app, client, study):
    """``marginalia worker --once`` (its figure step) needs no page to have asked: the change
    log says the work changed, and the debounce does not hold the one-shot worker."""
    app.config["FIGURES_GAMMA_SECONDS"] = 0  # γ off: the path is what this checks
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(FigureJob)) is None
    assert (
        run_jobs(app, at_once=False) == 0
    )  # the long-running worker waits for the changes to settle
    assert run_jobs(app) == 1
    report = stored(app)
    assert report["agreement"]["unitized"]["state"] == "current"
    assert {w["worker_id"] for w in report["workers"] if w["reliability"]} == set(MARKS)
    assert run_jobs(app) == 0  # nothing changed since


def test_the_report_command_reads_what_is_current(app, client, study, monkeypatch):
    """Stored and current: printed as stored (no recomputation); after a change: the report
    now, the slow figures as last computed and said to be stale; ``--wait`` without a worker:
    a clear error after the time given."""
    from app.cli import main

    app.config["FIGURES_GAMMA_SECONDS"] = 0
    monkeypatch.setenv("DATABASE_URL", app.config["DATABASE_URL"])
    monkeypatch.setenv("SECRET_KEY", "test")
    run_jobs(app)
    runner = CliRunner()
    done = runner.invoke(main, ["report", "demo", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["served"]["mode"] == "stored" and report["served"]["state"] == "current"
    submit(client, "w4", "doc-3", MARKS["w1"])
    done = runner.invoke(main, ["report", "demo", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["served"]["mode"] == "inline"
    assert report["agreement"]["unitized"]["state"] == "stale"
    assert "γ and the worker models are stale" in done.stderr
    assert report["progress"]["assignments"]["submitted"] == 10  # the new submission counts
    waited = runner.invoke(main, ["report", "demo", "--json", "--wait", "0.5"])
    assert waited.exit_code == 1 and "is `marginalia worker` running?" in waited.output


def by_hand(
    documents: list[list[Unit]], annotators: list[str], lengths: list[int]
) -> tuple[float, int]:
    """The study's γ (docs/METRICS.md) of ``documents`` (each a list of units, laid end to
    end with ``lengths``) rebuilt from pygamma's own pieces: each document's fast alignment,
    and pygamma's statistical sampler set up by its own ``init_sampling`` on the documents
    laid end to end (its statistics to 3 significant digits, a sample's size bounded), each
    (small) sample aligned exactly, seeded as the figures are; (γ, samples)."""
    from pyannote.core import Segment
    from pygamma_agreement import CombinedCategoricalDissimilarity, Continuum
    from pygamma_agreement.continuum import _compute_fast_alignment_job
    from pygamma_agreement.sampler import StatisticalContinuumSampler

    def continuum(units, at=0):
        found = Continuum()
        for name in annotators:
            found.add_annotator(name)
        for u in sorted(units, key=lambda u: (u.annotator, u.start, u.end, u.category)):
            found.add(u.annotator, Segment(u.start + at, u.end + at), u.category)
        return found

    dissimilarity = CombinedCategoricalDissimilarity(alpha=1, beta=1)
    disorder_sum = units_total = 0
    for units in documents:
        if units:
            one = continuum(units)
            one.measure_best_window_size(dissimilarity)
            alignment = _compute_fast_alignment_job(dissimilarity, one)
            disorder_sum += alignment.disorder * one.avg_num_annotations_per_annotator
            units_total += one.num_units
    laid = continuum(
        [
            Unit(u.annotator, u.start + sum(lengths[:n]), u.end + sum(lengths[:n]), u.category)
            for n, units in enumerate(documents)
            for u in units
        ]
    )
    sampler = StatisticalContinuumSampler()
    sampler.init_sampling(laid)
    for name in ("nb_units_per_annotator", "gap", "unit_duration"):  # 3 significant digits
        for kind in ("avg", "std"):
            value = getattr(sampler, f"_{kind}_{name}")
            setattr(sampler, f"_{kind}_{name}", float(f"{value:.3g}"))
    shares = [float(f"{w:.3g}") for w in sampler._categories_weight]
    sampler._categories_weight = np.array([w / sum(shares) for w in shares])
    mean = sampler._avg_nb_units_per_annotator
    if mean > SAMPLE_UNITS:  # a sample's size bounded, the density kept (corpus_gamma)
        sampler._avg_nb_units_per_annotator = SAMPLE_UNITS
        sampler._std_nb_units_per_annotator *= SAMPLE_UNITS / mean
    np.random.seed(SEED)
    chance: list[float] = []
    wanted = SAMPLES
    while len(chance) < wanted:
        chance.append(sampler.sample_from_continuum.get_best_alignment(dissimilarity).disorder)
        if len(chance) == SAMPLES:
            variation = np.std(chance) / np.mean(chance)
            wanted = max(wanted, math.ceil((variation * 1.96 / PRECISION) ** 2))
    observed = disorder_sum / (units_total / len(annotators))
    return 1 - observed / np.mean(chance), len(chance)


def laid_end_to_end(
    documents: list[list[Unit]], annotators: list[str], lengths: list[int], seed: int = SEED
) -> tuple[float, float, float]:
    """pygamma's γ of the documents laid end to end as one continuum: (γ, low, high)."""
    from pyannote.core import Segment
    from pygamma_agreement import CombinedCategoricalDissimilarity, Continuum

    laid, at = Continuum(), 0
    for name in annotators:
        laid.add_annotator(name)
    for units, length in zip(documents, lengths, strict=True):
        for u in units:
            laid.add(u.annotator, Segment(u.start + at, u.end + at), u.category)
        at += length
    np.random.seed(seed)
    found = laid.compute_gamma(
        CombinedCategoricalDissimilarity(alpha=1, beta=1),
        n_samples=SAMPLES,
        precision_level=PRECISION,
        fast=True,
    )
    low, high = found.approx_gamma_range
    return float(found.gamma), float(low), float(high)


@pytest.mark.parametrize("count", [3, 6])
def test_the_study_gamma_is_pygammas_parts_put_together(count):
    """The study's γ of ``count`` documents equals :func:`by_hand`'s, and lies within the
    stated precision of pygamma's γ of the same documents laid end to end (3 documents: 9
    units per annotator, samples as big as the study; 6: 18, samples bounded)."""
    from app.quality import corpus_gamma

    rng = np.random.default_rng(7)
    slots = ["slot 1", "slot 2", "slot 3"]
    documents = []
    for _ in range(count):
        units = []
        for slot in slots:
            for n in range(3):
                start = int(rng.integers(0, 40)) + 60 * n
                category = str(rng.choice(["A", "B"]))
                units.append(Unit(slot, start, start + int(rng.integers(3, 15)), category))
        documents.append(units)
    observed = [0.0, 0]
    for units in documents:
        part = corpus_gamma.alignment_part(units, slots)
        observed = [observed[0] + part[0], observed[1] + part[1]]
    laid = corpus_gamma.laid_parameters([(units, 400) for units in documents], slots)
    ours = corpus_gamma.gamma(observed, 3, corpus_gamma.expected(laid))
    same, samples = by_hand(documents, slots, [400] * count)
    assert ours["gamma"] == pytest.approx(same, abs=1e-6)  # pygamma's disorders are float32
    assert ours["samples"] == samples
    direct, low, high = laid_end_to_end(documents, slots, [400] * count)
    assert abs(ours["gamma"] - direct) <= (ours["high"] - ours["low"]) + (high - low)


@pytest.mark.parametrize("seed", range(12))
def test_a_pairs_alignment_is_pygammas_best_alignment(seed):
    """Two annotators' best alignment as a minimum-cost assignment (corpus_gamma.two_alignment)
    has the disorder of pygamma's own exact alignment (an integer program), on random units:
    overlapping, nested, apart, of one category or several, an annotator without any."""
    from pyannote.core import Segment
    from pygamma_agreement import CombinedCategoricalDissimilarity, Continuum

    from app.quality.corpus_gamma import two_alignment

    rng = np.random.default_rng(seed)
    units = {}
    for name in ("a", "b"):
        found = set()
        for _ in range(int(rng.integers(0 if seed % 5 == 0 and name == "b" else 1, 9))):
            start = int(rng.integers(0, 120))
            found.add((start, start + int(rng.integers(1, 25)), str(rng.choice(["A", "B", "C"]))))
        units[name] = sorted(found)
    continuum = Continuum()
    for name, found in units.items():
        continuum.add_annotator(name)
        for start, end, category in found:
            continuum.add(name, Segment(start, end), category)
    if not continuum.num_units:
        return
    best = continuum.get_best_alignment(CombinedCategoricalDissimilarity(alpha=1, beta=1))
    theirs = best.disorder * continuum.avg_num_annotations_per_annotator
    assert two_alignment(units["a"], units["b"]) == pytest.approx(theirs, rel=1e-5, abs=1e-5)


@pytest.mark.slow
def test_a_study_figure_keeps_its_stored_chance_while_its_statistics_stay(app, client, study):
    """The chance disorder a study figure drew is stored with the statistics it was drawn
    from (docs/METRICS.md, "Kept, or drawn again"): a change that leaves them as they were
    (doc-3's first worker: a document of one worker enters no figure) keeps it, here
    replaced by 2.0 to see it used; doc-3 entering the figures (6 units per annotator become
    8) draws it again."""
    assert run_jobs(app) == 1
    with app.app_context(), session_scope() as session:
        job = session.scalar(select(FigureJob))
        first = job.result["unitized"]["gamma"]["all"]["gamma"]
        drawn = json.loads(json.dumps(job.result["drawn"]))
        chance = drawn["all"]["chance"]["disorder"]
        drawn["all"]["chance"] = {"disorder": 2.0, "samples": SAMPLES}
        job.result = {**job.result, "drawn": drawn}
    observed = (1 - first) * chance  # γ = 1 − observed / chance
    submit(client, "w4", "doc-3", MARKS["w1"])
    assert run_jobs(app) == 1
    kept = stored(app)["agreement"]["gamma"]["all"]["gamma"]
    assert first < 1 and kept != pytest.approx(first)  # in disorder: the chance matters
    assert kept == pytest.approx(1 - observed / 2.0)
    submit(client, "w5", "doc-3", MARKS["w2"])
    submit(client, "w6", "doc-3", MARKS["w3"])
    assert run_jobs(app) == 1
    with app.app_context(), session_scope() as session:
        redrawn = session.scalar(select(FigureJob)).result["drawn"]["all"]["chance"]
    assert redrawn["disorder"] != 2.0 and redrawn["disorder"] > 0
