"""Operating points: thresholds chosen per category, checked against figures worked out by
hand, stored with the MiniLM version and used at a study's hint level."""

from __future__ import annotations

import pytest

from model_server.interface import at_hint_level, operating_points
from model_server.minilm import MiniLMDetector
from model_server.operating_points import (
    MIN_HINT_F1,
    POINTS,
    choose,
    hintable,
    point,
    precision_threshold,
)
from model_server.rules import RulesDetector

# ten sentences, best score first; seven are gold-positive
SCORES = [0.95, 0.9, 0.85, 0.8, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2]
GOLD = [True, True, True, True, True, False, True, False, True, False]


def test_points_match_the_hand_computed_figures():
    chosen = choose(SCORES, GOLD, min_true_positives=5)
    # t in (0.2, 0.3]: tp 7, fp 2, fn 0 -> P 7/9, R 1, F1 14/16 = 0.875 (the best F1; also
    # the best F2 = 35/37); the lowest grid threshold there is 0.21
    assert chosen["best_f1"] == {"threshold": 0.21, "precision": 0.7778, "recall": 1.0, "f1": 0.875}
    assert chosen["balanced"] == chosen["best_f1"]
    assert chosen["thorough"]["threshold"] == 0.21
    # t in (0.6, 0.75]: tp 5, fp 0, fn 2 -> P 1 (the first >= 0.9 going down with 5 true
    # positives), R 5/7, F1 10/12; F0.5 = 6.25/6.75 = 0.926 is also the best F0.5
    p90 = {"threshold": 0.61, "precision": 1.0, "recall": 0.7143, "f1": 0.8333}
    assert chosen["precision_90"] == p90
    assert chosen["precise"] == p90


def test_precision_90_is_none_when_never_reached():
    scores = [0.9 - k * 0.05 for k in range(12)]
    gold = [k % 2 == 0 for k in range(12)]  # every other sentence: precision <= 0.5 + noise
    assert precision_threshold(scores, gold) is None
    assert choose(scores, gold)["precision_90"] is None


def test_precision_90_needs_enough_true_positives():
    # four sure hits, then a miss: precision 1.0 on four is not enough evidence
    scores = [0.9, 0.9, 0.9, 0.9, 0.5, 0.4]
    gold = [True, True, True, True, False, True]
    assert precision_threshold(scores, gold, min_true_positives=5) is None
    # 19 sure hits above 0.8 then a miss: the default asks for 20 true positives (19/19 has a
    # Wilson lower bound of 0.83): only thresholds <= 0.5 (20 of 21 = 0.952) qualify
    scores = [0.9] * 19 + [0.7, 0.5]
    gold = [True] * 19 + [False, True]
    assert precision_threshold(scores, gold) == 0.05  # lowest grid t: 20 of 21 still >= 0.9
    assert precision_threshold(scores[:20], gold[:20]) is None  # 19 hits at most


def test_point_counts_scores_at_the_threshold_as_predicted():
    assert point([0.5, 0.49], [True, True], 0.5) == {
        "threshold": 0.5,
        "precision": 1.0,
        "recall": 0.5,
        "f1": pytest.approx(0.6667),
    }


def test_minilm_stores_operating_points_per_category_and_uses_them_per_level():
    detector = MiniLMDetector.load("model_server/models/minilm")
    points = operating_points(detector)
    assert {"CharE", "SceneE", "RefE"} <= set(points)
    for category, chosen in points.items():
        assert set(chosen) == set(POINTS), category
        best = chosen["best_f1"]
        label = {"CharE": "character", "SceneE": "scene", "RefE": "event"}.get(category)
        if label:
            assert detector.heads[label]["threshold"] == best["threshold"]
        assert chosen["precise"]["threshold"] >= chosen["thorough"]["threshold"]
    precise = at_hint_level(detector, "precise")
    assert precise is at_hint_level(detector, "precise")  # built once per level
    assert precise.version.endswith("@precise")
    assert precise.heads["character"]["threshold"] == points["CharE"]["precise"]["threshold"]
    assert at_hint_level(detector, "balanced") is detector
    assert at_hint_level(detector, None) is detector


def test_a_category_too_weak_to_hint_is_scored_but_never_suggested():
    detector = MiniLMDetector.load("model_server/models/minilm")
    incon = operating_points(detector)["InconE"]["best_f1"]
    assert 0 < incon["f1"] < MIN_HINT_F1  # InconE: held-out F1 above 0, too low for hints
    assert detector.heads["inconsistent"]["threshold"] == float("inf")
    assert detector.heads["character"]["threshold"] < 1
    assert hintable(None) and not hintable({"best_f1": {"f1": 0.1, "threshold": 0.5}})


def test_a_backend_without_scores_has_no_operating_points():
    rules = RulesDetector()
    assert operating_points(rules) == {}
    assert at_hint_level(rules, "precise") is rules


@pytest.fixture(scope="module")
def minilm():
    return MiniLMDetector.load("model_server/models/minilm")


def test_the_worker_detects_at_the_study_hint_level(app, minilm):
    from sqlalchemy import select

    from app.crowd.platforms import configure_study
    from app.db import session_scope
    from app.detection.worker import work
    from app.documents.taxonomy import load_taxonomy
    from app.models import Study, Suggestion
    from model_server.pipeline import detect_document
    from model_server.snac_data import load_documents
    from tests.conftest import REPO, make_study, shared_file

    dev = shared_file("snac", "dev.json")  # skips without ../shared (fails in CI)
    segments = [s["text"] for s in next(iter(load_documents(dev).values()))][:4]
    taxonomy = load_taxonomy(REPO / "taxonomies" / "snac.yaml")
    by_level = {
        level: {
            (r.segment, r.start, r.category)
            for r in detect_document(segments, at_hint_level(minilm, level), taxonomy)
        }
        for level in ("precise", "balanced", "thorough")
    }
    assert by_level["precise"] <= by_level["balanced"] <= by_level["thorough"]
    assert len(by_level["precise"]) < len(by_level["thorough"])

    make_study(app, documents=[("d1", segments)])
    with app.app_context(), session_scope() as session:
        configure_study(session.scalar(select(Study)), hints="precise")
    stats = work(app.extensions["db_sessionmaker"], minilm, once=True)
    assert stats["done"] == 1
    with app.app_context(), session_scope() as session:
        stored = session.scalars(select(Suggestion)).all()
    assert {(s.segment, s.start, s.category) for s in stored} == by_level["precise"]
    assert {s.detector_version for s in stored} == {minilm.version + "@precise"}
