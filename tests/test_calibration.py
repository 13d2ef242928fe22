"""Confident thresholds (the precision_90 operating point, out-of-fold on train, stored with the
detector version), hand-computed; the shipped MiniLM's; detector version rows; the migration
matches the models."""

from __future__ import annotations

import json
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, select

from app.migrate import upgrade
from app.models import Base, DetectorVersion
from model_server.operating_points import choose, confident_calibration

ROOT = Path(__file__).resolve().parents[1]
MINILM = ROOT / "model_server" / "models" / "minilm"


def test_confident_threshold_is_the_stored_precision_90_point():
    # out-of-fold train scores of 10 sentences (score, gold?)          at t: tp fp -> precision
    scores = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5, 0.3, 0.1]
    gold = [True, True, True, True, True, False, True, False, True, False]
    # the lowest grid threshold (step .01) with precision >= .9 and >= 5 true positives:
    # t in (.70, .75]: 5/5 = 1.0; t in (.6, .7]: 5/6 = .83; t in (.5, .6]: 6/7 = .86; lower: less
    points = {
        "CharE": choose(scores, gold, min_true_positives=5),
        "RefE": choose([0.9] * 6, [True] + [False] * 5),
    }
    assert points["CharE"]["precision_90"] == {
        "threshold": 0.71,
        "precision": 1.0,
        "recall": round(5 / 7, 4),
        "f1": round(2 * 5 / (2 * 5 + 0 + 2), 4),
    }
    assert points["RefE"]["precision_90"] is None  # 1/6 at every threshold
    points["RefE"]["best_f1"]["f1"] = 0.31  # good enough to hint, never precise enough
    dev = {"CharE": {"precision_90": {"precision": 0.875, "recall": 0.4, "f1": 0.55}}}
    labels = {"CharE": "character", "RefE": "event", "InconE": "inconsistent"}
    points["InconE"] = {"best_f1": {"threshold": 0.5, "f1": 0.1}, "precision_90": None}
    got = confident_calibration(points, labels, "3+abc", dev)
    assert got["version"] == "3+abc" and got["point"] == "precision_90"
    assert got["categories"]["CharE"] == {
        "label": "character",
        "threshold": 0.71,
        "train_precision": 1.0,
        "train_recall": 0.7143,
        "dev_precision": 0.875,  # reported on dev, never chosen there
        "dev_recall": 0.4,
    }
    assert got["categories"]["RefE"]["threshold"] is None
    assert "never reaches 0.90" in got["categories"]["RefE"]["reason"]
    assert "at least 20 correct sentences" in got["categories"]["RefE"]["reason"]
    assert got["categories"]["InconE"]["threshold"] is None
    assert "never suggested" in got["categories"]["InconE"]["reason"]


def test_the_shipped_minilm_calibration_is_its_precision_90_points():
    from model_server.minilm import MiniLMDetector

    head = json.loads((MINILM / "head.json").read_text(encoding="utf-8"))
    detector = MiniLMDetector.load(MINILM)
    cats = detector.calibration["categories"]
    assert detector.calibration["version"] == detector.version
    assert not (MINILM / "calibration.json").exists()  # one mechanism: the operating points
    for category, entry in cats.items():
        stored = head["operating_points"][category]["precision_90"]
        if entry["threshold"] is None:
            assert entry["reason"]
            continue
        assert entry["threshold"] == stored["threshold"] and stored["precision"] >= 0.9
        on_dev = head["dev_points"][category]["precision_90"]
        assert entry["dev_precision"] == on_dev["precision"]
    assert cats["CharE"]["threshold"] is not None


def test_detector_version_row_is_made_once_with_its_calibration(app):
    from app.db import session_scope
    from app.detection.worker import record_detector_version
    from model_server.minilm import MiniLMDetector
    from model_server.rules import RulesDetector

    minilm, rules = MiniLMDetector.load(MINILM), RulesDetector()
    with app.app_context():
        with session_scope() as session:
            first = record_detector_version(session, minilm).id
            record_detector_version(session, rules)
        with session_scope() as session:
            assert record_detector_version(session, minilm).id == first
            rows = session.scalars(select(DetectorVersion).order_by(DetectorVersion.id)).all()
            assert [(r.detector, r.version, r.calibration) for r in rows] == [
                ("minilm", minilm.version, minilm.calibration),
                ("rules", rules.version, {}),  # no thresholds: confident recall is n/a
            ]


def test_migrations_match_the_models(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    finally:
        engine.dispose()
    assert diff == []
