"""The one ranking (docs/METRICS.md, "Ranking workers"; :mod:`app.quality.ranking`): workers
of known quality replayed on several data sets and seeds (tests/replayed_workers.py) are
ordered by the ranking figure, the expected F1, as their true F1 orders them; the report,
the dashboard, the Workers page and the text report rank by it and by nothing else.

Five shapes of worker (exact, random-half, every-word, spammer, nothing) on SNaC dev and
train (three summaries drawn by each seed; skipped without ../shared/data) and on generated
studies that need no shared data, drawn by hypothesis (seed, error rate, size).
"""

from __future__ import annotations

import json
import re
from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.quality.ranking import ranks
from tests.conftest import BACKENDS, REPO, make_database_url
from tests.replayed_workers import WORKERS, Replayed, figures, generated, snac

GAP = 0.02  # true F1 closer than this: a tie, either order holds
CLOSE = 0.05  # the expected F1 is within this of the true F1


def check_order(study: Replayed) -> dict[str, dict[str, float]]:
    """The ranking figure orders the five workers as their true F1 does (pairs closer than
    GAP aside) and lies within CLOSE of it; returns each figure by worker."""
    found = figures(study)
    models, truth = found["models"], found["true_f1"]
    assert models["reason"] is None, models["reason"]
    expected = {w: models["workers"][w]["expected_f1"] for w in WORKERS}
    for worker in WORKERS:
        assert expected[worker] == pytest.approx(truth[worker], abs=CLOSE), (study.name, worker)
    rank = ranks(models["workers"])
    for a, b in combinations(WORKERS, 2):
        if abs(truth[a] - truth[b]) > GAP:
            better, worse = (a, b) if truth[a] > truth[b] else (b, a)
            assert rank[better] < rank[worse], (study.name, truth, expected)
    return {
        "true": truth,
        "expected": expected,
        "competence": {w: models["workers"][w]["competence"] for w in WORKERS},
        "consensus": {w: models["workers"][w]["consensus_f1"] for w in WORKERS},
    }


@pytest.mark.slow
@pytest.mark.parametrize("split", ["dev", "train"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_ranking_figure_orders_replayed_workers_on_snac(split, seed):
    check_order(snac(split, documents=3, seed=seed))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_ranking_figure_orders_replayed_workers_on_three_generated_studies(seed):
    """Three generated studies that need no shared data (a fresh clone runs them)."""
    check_order(generated(seed))


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    error_rate=st.floats(0.02, 0.15),
    documents=st.integers(2, 4),
)
def test_the_ranking_figure_orders_replayed_workers_on_generated_studies(
    seed, error_rate, documents
):
    study = generated(seed, documents=documents, error_rate=error_rate)
    if len(study.gold) < 4:  # too few errors for a random half to differ from nothing
        return
    check_order(study)


def test_mace_competence_would_misrank_them():
    """Why MACE's competence is shown as agreement with the majority and never ranks: on a
    generated study it puts *nothing* (who says 0 to every unit, right wherever there is no
    error) above every-word and the spammer, whose true F1 is higher."""
    seen = check_order(generated(0))
    truth, competence = seen["true"], seen["competence"]
    assert truth["nothing"] < truth["spammer"] and truth["nothing"] < truth["every-word"]
    assert competence["nothing"] > max(competence["spammer"], competence["every-word"])


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def stored_study(app, study: Replayed, slug: str = "ranked") -> None:
    """The replayed study as imported work: each worker one submitted assignment per
    document (nothing's empty)."""
    from app.db import session_scope
    from app.documents.records import DocumentInput, ImportedSpan
    from app.documents.studies import create_study, import_documents

    inputs = []
    for doc in study.documents:
        count = 1 + max(seg for d, seg in study.texts if d == doc)
        segments = [study.texts[(doc, i)] for i in range(count)]
        work = [
            ImportedSpan(s.source, s.segment, s.start, s.end, s.text, s.category)
            for s in study.all_spans
            if s.document == doc
        ]
        inputs.append(DocumentInput(doc, segments, work=work, empty_workers=["nothing"]))
    with app.app_context(), session_scope() as session:
        created, _ = create_study(
            session, slug, REPO / "taxonomies" / "snac.yaml", annotators_per_doc=5
        )
        import_documents(session, created, inputs)


@pytest.mark.slow
def test_every_page_ranks_by_the_one_figure_and_no_other(app, client):
    """The report, report.json, the text report, the dashboard and the Workers page rank the
    replayed workers by expected F1 (their true order) and show no other rank; MACE's
    competence is labelled agreement with the majority."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality.reporting import format_report, study_report
    from tests.test_worker_management import ADMIN, create_researcher, logged_in

    replayed = generated(7, documents=3)
    stored_study(app, replayed)
    app.config["FIGURES_GAMMA_SECONDS"] = 0  # γ's time budget: none (this test is the models')
    with app.app_context(), session_scope() as session:
        report = study_report(session, get_study(session, "ranked"), compute_figures=True)
    truth = replayed.true_f1()
    by_truth = sorted(WORKERS, key=lambda w: -truth[w])
    rows = report["workers"]
    assert [row["worker_id"] for row in rows] == by_truth, truth
    assert [row["rank"] for row in rows] == [1, 2, 3, 4, 5]

    def rank_keys(value, path=""):
        if isinstance(value, dict):
            for key, inner in value.items():
                yield from ([f"{path}{key}"] if "rank" in key else [])
                yield from rank_keys(inner, f"{path}{key}.")

    for row in rows:  # one rank per worker, and it is the expected F1's
        assert list(rank_keys(row)) == ["rank"], list(rank_keys(row))
    text = format_report(report, width=200)
    ranked_table = text[text.index("Workers, ranked by expected F1") :]
    assert [ranked_table.index(f" {w} ") for w in by_truth] == sorted(
        ranked_table.index(f" {w} ") for w in by_truth
    )
    assert "not a ranking" in text

    create_researcher(app, ADMIN, admin=True)
    ada = logged_in(app, ADMIN)
    served = json.loads(ada.get("/admin/studies/ranked/report.json").get_data(as_text=True))
    assert [(r["worker_id"], r["rank"]) for r in served["workers"]] == [
        (w, n) for n, w in enumerate(by_truth, start=1)
    ]
    for url in ("/admin/studies/ranked", "/admin/studies/ranked/workers"):
        page = ada.get(url).get_data(as_text=True)
        order = re.findall(r'<tr data-worker="([^"]+)"[^>]*data-rank="(\d+)"', page)
        assert order == [(w, str(n)) for n, w in enumerate(by_truth, start=1)], url
        assert re.findall(r'class="rank">#(\d+)<', page) == ["1", "2", "3", "4", "5"], url
        # no other figure says it ranks: "#n" only beside the expected F1
        assert len(re.findall(r">#\d+(?=[<\s·])", page)) == 5, url
        assert "ranked by this" not in page, url
    workers = ada.get("/admin/studies/ranked/workers").get_data(as_text=True)
    assert "agreement with the majority, not a ranking" in workers  # MACE, labelled
    by_id = ada.get("/admin/studies/ranked/workers?sort=id").get_data(as_text=True)
    assert re.findall(r'<tr data-worker="([^"]+)"', by_id) == sorted(WORKERS)
