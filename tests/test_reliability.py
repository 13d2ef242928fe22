"""Worker models from the annotations alone (docs/METRICS.md, "Worker reliability"), on
SQLite and Postgres.

Two SNaC dev summaries (book_6b50, tripod2) as ordinary (non-gold) documents and five
replayed workers of known quality: **exact** marks every gold error where the shared locate
rule places it (so exact's marks stand for the gold), **random-half** a seeded half of them,
**every-word** every word in each of the seven categories, **spammer** a seeded tenth of the
words, each under a random category, and **nothing** submits without a mark (through the
API). Their true F1 is the strict F1 against the gold errors, which the study does not know.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from dataclasses import replace

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.documents.studies import create_study, get_study, import_documents
from app.formats import parse_documents
from app.models import Annotation, Assignment, Document, Segment
from app.quality.reporting import study_report
from app.quality.sentences import WORD_PATTERN
from app.rules.scoring import Span, precision_recall_f1, scopes_from_taxonomy
from tests.conftest import BACKENDS, REPO, make_database_url, shared_file
from tests.helpers import export_text
from tests.test_snac_roundtrip import plan_marks
from tests.test_worker_management import create_researcher, logged_in
from tests.test_worker_quality import CATEGORIES, DOCS, span

WORKERS = ("exact", "random-half", "every-word", "spammer", "nothing")


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def make(app, client, slug: str) -> None:
    raw = json.loads(shared_file("snac", "dev.json").read_text(encoding="utf-8"))
    marks, *_ = plan_marks({doc: raw[doc] for doc in DOCS})
    documents = [
        d
        for d in parse_documents(shared_file("snac", "dev.json"), "snac", gold=False)
        if d.external_id in DOCS
    ]
    rng = random.Random(32)
    for d in documents:
        texts = d.segments
        exact = [
            (b["segment"], b["start"], b["end"], b["category"]) for b in marks[d.external_id][0]
        ]
        for seg, start, end, cat in exact:
            d.work.append(span("exact", seg, texts[seg], start, end, cat))
        for seg, start, end, cat in rng.sample(exact, len(exact) // 2):
            d.work.append(span("random-half", seg, texts[seg], start, end, cat))
        for seg, text in enumerate(texts):
            for m in WORD_PATTERN.finditer(text):
                for cat in CATEGORIES:
                    d.work.append(span("every-word", seg, text, *m.span(), cat))
                if rng.random() < 0.1:
                    d.work.append(span("spammer", seg, text, *m.span(), rng.choice(CATEGORIES)))
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session, slug, REPO / "taxonomies" / "snac.yaml", annotators_per_doc=10
        )
        import_documents(session, study, documents, gold=False)
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    for doc in DOCS:
        opened = client.post(
            "/api/assignments", json={"study": slug, "document": doc, "worker_id": "nothing"}
        )
        token = opened.get_json()["token"]
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200


@pytest.mark.slow
def test_expected_f1_orders_workers_as_their_true_f1_where_mace_does_not(app, client):
    make(app, client, "replayed")
    app.config["FIGURES_GAMMA_SECONDS"] = 0  # γ's time budget: none (this test is MACE's)
    with app.app_context(), session_scope() as session:
        study = get_study(session, "replayed")
        report = study_report(session, study, compute_figures=True)
        scopes = scopes_from_taxonomy(study.taxonomy)
    models = report["agreement"]["worker_models"]
    assert (models["unit"], models["reason"]) == ("sentence", None)
    rows = {row["worker_id"]: row for row in report["workers"]}
    competence = {w: rows[w]["reliability"]["competence"] for w in rows}
    assert set(competence) == set(WORKERS)
    # the gold: exact's marks are every gold error where the locate rule places it
    gold = [replace(s, source="gold") for s in _marks(app, "exact")]
    with app.app_context(), session_scope() as session:
        texts = {
            (doc, index): text
            for doc, index, text in session.execute(
                select(Document.external_id, Segment.index, Segment.text).join(
                    Document, Document.id == Segment.document_id
                )
            )
        }
    # true F1 at the models' unit (a sentence under a category: the report's gold
    # ``sentence`` figure) against the gold errors the study was not given
    true_f1 = {
        w: precision_recall_f1(_marks(app, w), gold, texts=texts, scopes=scopes)["sentence"][
            "overall"
        ]["f1"]
        or 0.0
        for w in WORKERS
    }
    by_f1 = sorted(WORKERS, key=lambda w: -true_f1[w])
    assert by_f1 == ["exact", "random-half", "every-word", "spammer", "nothing"], true_f1
    # the figure workers are ranked by (docs/METRICS.md): the F1 Dawid-Skene's confusion matrix
    # gives at its error prior orders all five strictly as their true F1 does (a tie would
    # not pass: WORKERS is already in that order)
    expected = {w: rows[w]["reliability"]["expected_f1"] for w in WORKERS}
    assert all(expected[a] > expected[b] for a, b in zip(by_f1, by_f1[1:], strict=False)), expected
    for w in WORKERS:
        assert expected[w] == pytest.approx(true_f1[w], abs=0.05), (w, expected, true_f1)
    # every-word's true precision is the share of units that are errors: F1 = 2π / (1 + π)
    base_rate = true_f1["every-word"] / (2 - true_f1["every-word"])  # 1/7 here
    assert models["error_prior"] == pytest.approx(base_rate, abs=0.01)  # measured 0.136
    # the F1 against MACE's posterior orders all five as their true F1 does, and equals it
    consensus = {w: rows[w]["reliability"]["consensus_f1"] for w in WORKERS}
    assert all(consensus[a] > consensus[b] for a, b in zip(by_f1, by_f1[1:], strict=False)), (
        consensus
    )
    for w in WORKERS:
        assert consensus[w] == pytest.approx(true_f1[w], abs=1e-3), w
    # MACE's competence orders the informative workers as F1 does and puts the three who
    # carry no information (every-word, spammer, nothing: all but constant or random) below
    # them all; among those three its order is not F1's (measured here: nothing 0.38,
    # every-word 0.14, spammer 0.05), since their F1 differ by the errors' base rate alone
    assert competence["exact"] > 0.99 > competence["random-half"] > 0.5
    assert max(competence[w] for w in ("every-word", "spammer", "nothing")) < 0.5
    # Dawid-Skene tells the ways of not informing apart: every-word says 1 to everything
    # (sensitivity 1, specificity 0), nothing says 0 (sensitivity 0, specificity 1)
    reliability = {w: rows[w]["reliability"] for w in rows}
    assert reliability["every-word"]["sensitivity"] > 0.99
    assert reliability["every-word"]["specificity"] < 0.01
    assert reliability["nothing"]["sensitivity"] < 0.01
    assert reliability["nothing"]["specificity"] > 0.99
    # the Workers page and the assignment export show the stored figures, beside gold F1
    exported = [
        json.loads(line) for line in export_text(app, "replayed", "assignments-jsonl").splitlines()
    ]
    assert {
        (r["worker_id"], r["mace_competence"], r["consensus_f1"], r["expected_f1"])
        for r in exported
    } == {(w, competence[w], consensus[w], expected[w]) for w in WORKERS}
    create_researcher(app, "owner@example.org", admin=True)
    researcher = logged_in(app, "owner@example.org")
    page = researcher.get("/admin/studies/replayed/workers").get_data(as_text=True)
    for w in WORKERS:
        row = re.search(rf'<tr data-worker="{w}".*?</tr>', page, re.S).group(0)
        cell = re.search(r'<td class="num competence">(.*?)</td>', row, re.S).group(1)
        assert f"{competence[w]:.2f}" in cell and f"{consensus[w]:.2f}" in cell, (w, cell)
        assert f'class="expected-f1">{expected[w]:.2f}<' in row, (w, row)
    assert "as computed at" in page
    one = researcher.get("/admin/studies/replayed/worker", query_string={"id": "random-half"})
    assert f'id="mace-competence">{competence["random-half"]:.2f}<' in one.get_data(as_text=True)
    assert f'id="expected-f1">{expected["random-half"]:.2f}<' in one.get_data(as_text=True)
    check_consensus_layer(app, researcher, gold, texts, scopes, units=models["units"])
    check_auto_accept_by_posterior(app, researcher)


def check_consensus_layer(app, researcher, gold, texts, scopes, *, units: int) -> None:
    """The consensus export layer: MACE's posterior at least 0.9 finds the gold errors (at
    the sentence unit: F1 1 within 1e-3, as exact's consensus F1); at 0 it is every unit a
    worker marked (every-word marked them all); each row's text is its sentence."""
    from app.formats import Work

    def layer(minimum: float) -> list[dict[str, str]]:
        work = Work(layer="consensus", min_posterior=minimum)
        return list(csv.DictReader(io.StringIO(export_text(app, "replayed", "csv", work))))

    rows = layer(0.9)
    assert rows and {r["worker_id"] for r in rows} == {"consensus"}
    found = [
        Span(
            r["document"],
            int(r["segment"]),
            int(r["span_start"]),
            int(r["span_end"]),
            r["category"],
            "consensus",
        )
        for r in rows
    ]
    f1 = precision_recall_f1(found, gold, texts=texts, scopes=scopes)["sentence"]["overall"]
    assert f1["f1"] == pytest.approx(1.0, abs=1e-3), f1
    every = layer(0.0)
    assert len(every) == units
    for r in every:
        text = texts[(r["document"], int(r["segment"]))]
        assert r["span_text"] == text[int(r["span_start"]) : int(r["span_end"])]
    assert len(layer(0.5)) < len(every)
    # every annotation format has the layer: as many consensus marks as CSV rows
    from app.formats import ASSIGNMENT_FORMATS, EXPORT_FORMATS, iter_export_files
    from app.formats.annotated import annotated_documents

    with app.app_context(), session_scope() as session:
        study = get_study(session, "replayed")
        work = Work(layer="consensus")
        documents = list(annotated_documents(session, study, work))
        assert sum(len(d.marks) for d in documents) == len(rows)
        assert {w for d in documents for w in d.workers} == {"consensus"}
        for fmt in EXPORT_FORMATS:
            if fmt not in ASSIGNMENT_FORMATS:
                files = list(iter_export_files(session, study, fmt, work))
                assert files and any(content for _, content in files), fmt
    snac = json.loads(export_text(app, "replayed", "snac", Work(layer="consensus")))
    assert sum(len(errors) for d in snac.values() for errors in d.values()) >= 1
    # over HTTP: the same rows; a bad posterior, or one on another layer, is a 400
    answer = researcher.get("/admin/studies/replayed/export.csv?layer=consensus")
    assert list(csv.DictReader(io.StringIO(answer.get_data(as_text=True)))) == rows
    for query in (
        "layer=consensus&min_posterior=high",
        "layer=consensus&min_posterior=1.5",
        "min_posterior=0.5",
    ):
        refused = researcher.get(f"/admin/studies/replayed/export.csv?{query}")
        assert refused.status_code == 400, query


def _marks(app, worker: str) -> list[Span]:
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(Document.external_id, Annotation)
            .join(Assignment, Assignment.id == Annotation.assignment_id)
            .join(Document, Document.id == Assignment.document_id)
            .where(Assignment.worker_id == worker)
        ).all()
        return [Span(doc, a.segment, a.start, a.end, a.category, worker) for doc, a in rows]


def test_units_labels_and_consensus_f1_by_hand():
    """Three sentences, one category, three workers on one document: a span labels every
    sentence it overlaps (b's crosses the first break: two labels); each worker's consensus
    F1 is 2 Σ p·l / (Σ p + Σ l) over MACE's posteriors p of the units (all three marked, so
    all three returned) and the worker's labels l."""
    from app.quality.agreement import CategoryScheme, WorkBatch
    from app.quality.reliability import unit_labels, worker_models

    text = "Anna sings. Bob dances. Cleo sleeps."  # sentences [0,11) [12,23) [24,36)
    texts = {("d", 0): text}

    def mark(worker, start, end):
        return Span("d", 0, start, end, "CharE", worker, text[start:end])

    spans = [mark("a", 0, 4), mark("b", 5, 15), mark("c", 24, 28), mark("a", 12, 15)]
    annotated = {w: {"d"} for w in ("a", "b", "c")}
    units, labels = unit_labels(spans, texts, annotated, ["CharE"])
    assert [u[2:4] for u in units] == [(0, 11), (12, 23), (24, 36)]
    assert {w: [labels[(i, w)] for i in range(3)] for w in "abc"} == {
        "a": [1, 1, 0],
        "b": [1, 1, 0],
        "c": [0, 0, 1],
    }
    models = worker_models(WorkBatch(spans, texts, annotated), CategoryScheme(["CharE"]))
    assert (models["units"], models["labels"], models["reason"]) == (3, 9, None)
    p = {(q["start"], q["category"]): q["posterior"] for q in models["posteriors"]}
    posterior = [p[(0, "CharE")], p[(12, "CharE")], p[(24, "CharE")]]
    assert posterior[0] > 0.5 and posterior[2] < 0.5  # two against one
    for worker, said in (("a", [1, 1, 0]), ("c", [0, 0, 1])):
        hit = sum(q * s for q, s in zip(posterior, said, strict=True))
        expected = 2 * hit / (sum(posterior) + sum(said))
        assert models["workers"][worker]["consensus_f1"] == pytest.approx(expected)
        assert models["workers"][worker]["units"] == 3
    # one worker alone, or nobody marking: not fitted, and the reason says why
    alone = worker_models(WorkBatch(spans[:1], texts, {"a": {"d"}}), CategoryScheme(["CharE"]))
    assert alone["workers"] == {} and "two workers" in alone["reason"]
    silent = worker_models(WorkBatch([], texts, annotated), CategoryScheme(["CharE"]))
    assert silent["workers"] == {} and "same" in silent["reason"]


def test_expected_f1_ranks_where_mace_competence_rewards_silence():
    """Five sentences, one category: a, b and c mark the first two, *every* marks all five,
    *none* submits nothing. Dawid-Skene takes a, b, c's labels as the truth (sensitivity =
    specificity = 1), its error prior π = 2/5; *every* says 1 to all (s = 1, t = 0), *none*
    says 0 to all (s = 0, t = 1). Expected F1 = 2sπ / (2sπ + (1 − t)(1 − π) + (1 − s)π):
    a = 2·0.4 / 0.8 = 1, every = 0.8 / (0.8 + 0.6) = 4/7 (its true F1: 2 found, 3 wrong,
    2·2 / (2·2 + 3)), none = 0. MACE's competence puts *none* above *every* (0.60 > 0.40):
    most units are not errors, and *none* agrees with all of those."""
    from app.quality.agreement import CategoryScheme, WorkBatch
    from app.quality.reliability import expected_f1, worker_models

    text = "Anna sings. Bob dances. Cleo sleeps. Dan eats. Eve reads."
    sentences = [(0, 11), (12, 23), (24, 36), (37, 46), (47, 57)]
    texts = {("d", 0): text}
    spans = [
        Span("d", 0, start, end, "CharE", worker, text[start:end])
        for worker, marked in (("a", 2), ("b", 2), ("c", 2), ("every", 5))
        for start, end in sentences[:marked]
    ]
    annotated = {w: {"d"} for w in ("a", "b", "c", "every", "none")}
    models = worker_models(WorkBatch(spans, texts, annotated), CategoryScheme(["CharE"]))
    assert models["error_prior"] == pytest.approx(2 / 5)
    workers = models["workers"]
    assert workers["a"]["expected_f1"] == pytest.approx(1.0)
    assert workers["every"]["expected_f1"] == pytest.approx(4 / 7)
    assert workers["none"]["expected_f1"] == 0.0
    assert workers["none"]["competence"] > workers["every"]["competence"]  # MACE's order
    # the formula itself, by hand: s = 0.5, t = 0.9, π = 0.2: TP 0.1, FP 0.08, FN 0.1
    assert expected_f1(0.5, 0.9, 0.2) == pytest.approx(2 * 0.1 / (2 * 0.1 + 0.08 + 0.1))
    assert expected_f1(0.0, 1.0, 0.0) is None  # no errors, never says 1: 0 / 0


def check_auto_accept_by_posterior(app, researcher) -> None:
    """Auto-accept by posterior: counted first (nothing written), then, confirmed, it accepts
    exactly the undecided candidates whose proposal overlaps a consensus row (posterior at
    least 0.9) of its category, recounted here from the consensus export layer."""
    from app.formats import Work
    from app.models import AdjudicatedError
    from app.quality.review_state import candidates_of
    from tests.test_worker_management import csrf

    layer = csv.DictReader(
        io.StringIO(export_text(app, "replayed", "csv", Work(layer="consensus")))
    )
    held = [
        (r["document"], int(r["segment"]), int(r["span_start"]), int(r["span_end"]), r["category"])
        for r in layer
    ]
    expected = {}
    with app.app_context(), session_scope() as session:
        for document in get_study(session, "replayed").documents:
            expected[document.external_id] = {
                c.key
                for c in candidates_of(session, document)
                if any(
                    (doc, seg, cat) == (document.external_id, c.segment, c.category)
                    and start < c.proposal.end
                    and c.proposal.start < end
                    for doc, seg, start, end, cat in held
                )
            }
            assert 0 < len(expected[document.external_id]) < len(candidates_of(session, document))
    total = sum(len(keys) for keys in expected.values())
    url = "/admin/studies/replayed/review/auto-accept"
    form = {"csrf_token": csrf(researcher), "min_workers": "1", "min_posterior": "0.9"}
    asked = researcher.post(url, data=form).get_data(as_text=True)
    assert f'name="expected" value="{total}"' in asked and "MACE posterior" in asked
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(AdjudicatedError.id)) is None  # counted, not written
    bad = researcher.post(url, data={**form, "min_posterior": "2"}, follow_redirects=True)
    assert "from 0 to 1" in bad.get_data(as_text=True)
    done = researcher.post(url, data={**form, "confirm": "yes", "expected": str(total)})
    assert done.status_code == 302
    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(
                Document.external_id, AdjudicatedError.candidate, AdjudicatedError.decision
            ).join(Document, Document.id == AdjudicatedError.document_id)
        ).all()
    assert {(doc, key) for doc, key, _ in rows} == {
        (doc, key) for doc, keys in expected.items() for key in keys
    }
    assert {decision for *_, decision in rows} == {"accepted"}


def test_the_worker_computes_queued_figures(app, client):
    """The dashboard's button queues a figure job; the worker loop's step runs it once and
    the figures become current (worker models for both workers); nothing is left to run;
    a new mark makes them stale on the dashboard until the next job."""
    from app.models import FigureJob
    from app.quality.figure_jobs import run_next
    from tests.conftest import make_study
    from tests.helpers import DOCUMENTS, annotation_body, api_add, open_token
    from tests.test_worker_management import csrf

    make_study(app, documents=DOCUMENTS)
    app.config["FIGURES_GAMMA_SECONDS"] = 0  # γ's budget: none (this test is the job's path)
    tokens = {}
    for worker in ("w1", "w2"):
        tokens[worker] = open_token(client, worker=worker)
        body = annotation_body(0, "only child", "CharE")
        assert api_add(client, tokens[worker], body).status_code == 201
        assert client.post(f"/api/assignments/{tokens[worker]}/submit").status_code == 200
    create_researcher(app, "owner@example.org", admin=True)
    researcher = logged_in(app, "owner@example.org")
    page = researcher.get("/admin/studies/demo").get_data(as_text=True)
    assert 'data-state="none"' in page
    queued = researcher.post("/admin/studies/demo/figures", data={"csrf_token": csrf(researcher)})
    assert queued.status_code == 302
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(FigureJob.status)) == "queued"
        assert run_next(session, "test-worker") is True
        assert run_next(session, "test-worker") is False
        assert session.scalar(select(FigureJob.status)) == "done"
        report = study_report(session, get_study(session, "demo"))
    assert report["agreement"]["unitized"]["state"] == "current"
    assert {row["worker_id"] for row in report["workers"] if row["reliability"]} == {"w1", "w2"}
    assert 'data-state="current"' in researcher.get("/admin/studies/demo").get_data(as_text=True)
    third = open_token(client, worker="w3")
    assert api_add(client, third, annotation_body(0, "Paris", "CharE")).status_code == 201
    assert client.post(f"/api/assignments/{third}/submit").status_code == 200
    assert 'data-state="stale"' in researcher.get("/admin/studies/demo").get_data(as_text=True)
