"""The estimated precision, recall and F1 (report ``quality``), on SQLite and Postgres: they
put honest work above gamed work, beside the one ranking figure (expected F1,
tests/test_worker_ranking.py), never as a ranking of their own.

Two SNaC dev summaries (book_6b50, tripod2: 610 words, 45 errors) and six replayed workers:
**exact** marks every gold error where the shared locate rule places it; **every-word** marks
every word in each of the seven categories; **every-sentence** every sentence in each category;
**whole-segment** every segment in each category; **random-half** a seeded half of exact's
marks; **nothing** submits without a mark (through the API).

* As gold documents: the estimate (strict gold P/R/F1) and the qualification's figure (each
  submission's strict F1, ``score_gold``) put exact first and every-word below random-half;
  every-word is flagged for over-marking.
* As ordinary documents with two more honest workers and the detector's confident CharE
  suggestions (the gold CharE errors, score 0.95 ≥ the stored 0.84): "recall on confident
  suggestions" gives every-word 1.000 like exact, but the estimate pairs it with the other
  workers' consensus precision and puts every-word below random-half.
"""

from __future__ import annotations

import json
import random

import pytest

from app.db import session_scope
from app.documents.records import ImportedSpan
from app.documents.segmenting import sentence_spans
from app.documents.studies import create_study, get_study, import_documents
from app.formats import parse_documents
from app.quality.reporting import study_report
from app.quality.sentences import WORD_PATTERN
from tests.conftest import BACKENDS, REPO, make_database_url, shared_file
from tests.test_snac_roundtrip import plan_marks

DOCS = ("book_6b50", "tripod2")
CATEGORIES = ("CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE")
GAMERS = ("exact", "every-word", "every-sentence", "whole-segment", "random-half", "nothing")


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def span(worker, segment, text, start, end, category, paired=None):
    return ImportedSpan(worker, segment, start, end, text[start:end], category, paired)


def replayed(documents, honest=("exact",)):
    """The documents with the workers' spans (all but nothing's) as imported work."""
    raw = json.loads(shared_file("snac", "dev.json").read_text(encoding="utf-8"))
    marks, *_ = plan_marks({doc: raw[doc] for doc in DOCS})
    rng = random.Random(29)
    for document in documents:
        texts = document.segments
        exact = []
        for b in marks[document.external_id][0]:  # worker 0 marks every error once
            p = b["paired"]
            paired = (p["segment"], p["start"], p["end"], p["text"]) if p else None
            exact.append((b["segment"], b["start"], b["end"], b["category"], paired))
        for worker in honest:
            for seg, start, end, cat, paired in exact:
                document.work.append(span(worker, seg, texts[seg], start, end, cat, paired))
        for seg, start, end, cat, paired in rng.sample(exact, len(exact) // 2):
            document.work.append(span("random-half", seg, texts[seg], start, end, cat, paired))
        for seg, text in enumerate(texts):
            for cat in CATEGORIES:
                for m in WORD_PATTERN.finditer(text):
                    document.work.append(span("every-word", seg, text, *m.span(), cat))
                for s, e in sentence_spans(text):
                    document.work.append(span("every-sentence", seg, text, s, e, cat))
                document.work.append(span("whole-segment", seg, text, 0, len(text), cat))
    return documents


def make(app, client, slug: str, *, gold: bool, honest=("exact",)) -> None:
    documents = [
        d
        for d in parse_documents(shared_file("snac", "dev.json"), "snac", gold=True)
        if d.external_id in DOCS
    ]
    if not gold:
        for d in documents:
            d.gold = []
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session, slug, REPO / "taxonomies" / "snac.yaml", annotators_per_doc=10
        )
        import_documents(session, study, replayed(documents, honest), gold=gold)
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    for doc in DOCS:
        opened = client.post(
            "/api/assignments", json={"study": slug, "document": doc, "worker_id": "nothing"}
        )
        token = opened.get_json()["token"]
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def report(app, slug):
    with app.app_context(), session_scope() as session:
        rows = study_report(session, get_study(session, slug))["workers"]
    return {row["worker_id"]: row for row in rows}


@pytest.mark.slow
def test_gold_documents_rank_exact_first_and_every_word_below_random_half(app, client):
    from sqlalchemy import select

    from app.annotation.qualification import score_gold
    from app.models import Assignment

    make(app, client, "gamed-gold", gold=True)
    rows = report(app, "gamed-gold")
    quality = {w: rows[w]["quality"] for w in GAMERS}
    assert quality["exact"]["f1"] == 1.0 and "rank" not in quality["exact"]
    assert quality["exact"]["precision_basis"] == "gold documents"
    assert quality["every-word"]["f1"] < quality["random-half"]["f1"]
    assert quality["nothing"]["f1"] == 0.0 and quality["nothing"]["precision"] is None
    assert quality["every-word"]["over_marking"] and not quality["exact"]["over_marking"]
    assert not quality["random-half"]["over_marking"]
    assert quality["every-word"]["marks_per_100_words"] == pytest.approx(700)  # 7 per word
    # the qualification's figure: each submission's strict F1 against its gold
    with app.app_context(), session_scope() as session:
        best: dict[str, float] = {}
        for a in session.scalars(select(Assignment).where(Assignment.status == "submitted")):
            f1 = score_gold(session, a)["overall"]["f1"]
            best[a.worker_id] = max(best.get(a.worker_id, 0.0), f1 or 0.0)
    assert max(best, key=best.get) == "exact" and best["exact"] == 1.0
    assert best["every-word"] < best["random-half"]
    order = sorted(GAMERS, key=lambda w: -quality[w]["f1"])
    assert order[0] == "exact" and order.index("every-word") > order.index("random-half")


@pytest.mark.slow
def test_without_gold_consensus_precision_unmasks_the_every_word_worker(app, client):
    from sqlalchemy import select

    from app.models import DetectorVersion, Document, Suggestion

    make(app, client, "gamed", gold=False, honest=("exact", "exact-2", "exact-3"))
    with app.app_context(), session_scope() as session:
        study = get_study(session, "gamed")
        calibration = {
            "version": "1",
            "categories": {
                "CharE": {"label": "character", "threshold": 0.84, "dev_precision": 0.9}
            },
        }
        session.add(DetectorVersion(detector="minilm", version="1", calibration=calibration))
        documents = session.scalars(select(Document).where(Document.study_id == study.id))
        for document in documents:
            for annotation in _exact_chare(session, document):
                session.add(
                    Suggestion(
                        document_id=document.id,
                        segment=annotation.segment,
                        start=annotation.start,
                        end=annotation.end,
                        text=annotation.text,
                        category="CharE",
                        score=0.95,
                        detector="minilm",
                        detector_version="1",
                    )
                )
    rows = report(app, "gamed")
    # the gameable figure: every-word catches every confident suggestion, like exact
    assert rows["every-word"]["confident_recall"]["recall"] == 1.0
    assert rows["exact"]["confident_recall"]["recall"] == 1.0
    quality = {w: rows[w]["quality"] for w in rows}
    assert quality["every-word"]["recall_basis"] == "confident suggestions"
    assert quality["every-word"]["precision_basis"] == "other workers"
    assert quality["exact"]["precision"] == 1.0 and quality["exact"]["f1"] == 1.0
    assert quality["every-word"]["precision"] < 0.02
    assert quality["every-word"]["f1"] < quality["random-half"]["f1"]
    assert {quality[w]["f1"] for w in ("exact", "exact-2", "exact-3")} == {1.0}
    assert quality["every-word"]["over_marking"] and not quality["exact"]["over_marking"]


def _exact_chare(session, document):
    from sqlalchemy import select

    from app.models import Annotation, Assignment

    return session.scalars(
        select(Annotation)
        .join(Assignment, Assignment.id == Annotation.assignment_id)
        .where(
            Assignment.document_id == document.id,
            Assignment.worker_id == "exact",
            Annotation.category == "CharE",
        )
    ).all()


def test_consensus_figures_by_hand():
    """docs/METRICS.md's example: "Anna met Bob at the old mill." (7 words); w1 marks CharE
    Anna and Bob, w2 Anna, w3 Anna and mill. Candidates: Anna (w1, w2, w3), Bob (w1), mill
    (w3). w1: 1 of 2 marks confirmed, 1 of 1 candidate two others marked → P 0.5, R 1, F1
    2/3; w2: P 1, R 1; w3 as w1. Marks per 100 words 200/7, 100/7, 200/7: nobody over 3 × the
    others' median. Not a ranking: no rank is set."""
    from app.quality.worker_quality import consensus, marks_rate, set_quality
    from app.rules.scoring import Span

    text = "Anna met Bob at the old mill."
    marks = {"w1": ["Anna", "Bob"], "w2": ["Anna"], "w3": ["Anna", "mill"]}
    spans, ref = {}, iter(range(1, 100))
    for worker, words in marks.items():
        spans[worker] = [
            Span("d", 0, text.index(w), text.index(w) + len(w), "CharE", worker, w, next(ref))
            for w in words
        ]
    rows = [{"worker_id": w, "gold": None, "confident_recall": {"recall": None}} for w in marks]
    rates = {worker: marks_rate(len(words), 7) for worker, words in marks.items()}  # 7 words
    counts = {worker: len(words) for worker, words in marks.items()}
    agreed = consensus(spans, {"d": ["w1", "w2", "w3"]}, {("d", 0): text}, {})
    set_quality(rows, agreed, rates, counts)
    q = {row["worker_id"]: row["quality"] for row in rows}
    assert (q["w1"]["precision"], q["w1"]["recall"]) == (0.5, 1.0)
    assert q["w1"]["f1"] == pytest.approx(2 / 3) and q["w3"]["f1"] == pytest.approx(2 / 3)
    assert q["w1"]["consensus"] == {
        "confirmed": 1,
        "marks": 2,
        "precision": 0.5,
        "caught": 1,
        "agreed": 1,
        "recall": 1.0,
    }
    assert (q["w2"]["precision"], q["w2"]["recall"], q["w2"]["f1"]) == (1.0, 1.0, 1.0)
    assert q["w1"]["precision_basis"] == "other workers" == q["w1"]["recall_basis"]
    assert q["w1"]["marks_per_100_words"] == pytest.approx(200 / 7)
    assert not any(q[w]["over_marking"] for w in q)
    assert not any("rank" in q[w] for w in q)  # an estimate, not a ranking


def test_an_estimated_f1_without_evidence_is_unknown_not_zero():
    """F1 from estimates (docs/METRICS.md, "Estimated precision, recall and F1"), by hand:
    2PR / (P + R) when both are defined; a worker with no mark scores 0 once R is defined;
    otherwise an undefined P or R leaves F1 undefined. The dashboard read "– · 0.67 · 0.00"
    for a worker whose marks no other worker's documents could confirm (P undefined) and who
    caught 2 of 3 confident suggestions: their F1 is unknown, not 0."""
    from app.quality.worker_quality import estimated_f1, set_quality

    assert estimated_f1(0.5, 1.0, marks=2) == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert estimated_f1(0.0, 0.0, marks=3) == 0.0
    assert estimated_f1(None, 2 / 3, marks=4) is None  # marks, none another could confirm
    assert estimated_f1(0.8, None, marks=4) is None  # no evidence of recall
    assert estimated_f1(None, 0.0, marks=0) == 0.0  # no mark at all: found nothing
    assert estimated_f1(None, None, marks=0) is None
    confident = {"recall": 2 / 3}
    rows = [
        {"worker_id": "alone", "annotations": 4, "gold": None, "confident_recall": confident},
        {"worker_id": "silent", "annotations": 0, "gold": None, "confident_recall": {"recall": 0}},
    ]
    set_quality(rows, {}, {"alone": 10.0, "silent": 0.0})
    alone, silent = (row["quality"] for row in rows)
    assert (alone["precision"], alone["recall"], alone["f1"]) == (None, 2 / 3, None)
    assert (silent["precision"], silent["recall"], silent["f1"]) == (None, 0, 0.0)
