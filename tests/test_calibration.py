"""Confident thresholds (dev precision >= 0.9, stored with the detector version), hand-computed;
the stored MiniLM calibration; detector version rows; the migration matches the models."""

from __future__ import annotations

import json
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, select

from app.migrate import upgrade
from app.models import Base, DetectorVersion
from model_server.calibrate import choose_threshold, load_calibration

ROOT = Path(__file__).resolve().parents[1]
MINILM = ROOT / "model_server" / "models" / "minilm"


def test_lowest_threshold_with_precision_at_least_target():
    # best score per sentence, correct?   flagged at t: precision
    scores = [(0.95, True), (0.9, True), (0.85, False), (0.8, True), (0.7, False), (0.6, False)]
    # t=.95: 1/1; .9: 2/2; .85: 2/3; .8: 3/4 = .75; .7: 3/5; .6: 3/6
    got = choose_threshold(scores, 0.5, target=0.75, min_flagged=2)
    assert got == {"threshold": 0.8, "dev_precision": 0.75, "dev_flagged": 4, "dev_recall": 1.0}
    # at least 3 flagged and precision 0.9: none qualifies (best with 3+ is 0.75)
    none = choose_threshold(scores, 0.5, target=0.9, min_flagged=3)
    assert none["threshold"] is None and none["best_precision"] == 0.75
    assert "never reaches 0.90" in none["reason"]
    # the head's own threshold is a floor: below it nothing is ever suggested
    floor = choose_threshold(scores, 0.88, target=0.75, min_flagged=2)
    assert floor["threshold"] == 0.9 and floor["dev_flagged"] == 2


def test_ties_are_flagged_together():
    scores = [(0.9, True), (0.9, False), (0.8, True)]
    # t=.9 flags both .9 sentences (1/2), never just the correct one
    assert choose_threshold(scores, 0.0, target=0.6, min_flagged=1)["threshold"] == 0.8


def test_too_few_flagged_sentences_give_no_threshold():
    got = choose_threshold([(0.99, True)] * 3, 0.0, min_flagged=10)
    assert got["threshold"] is None and "fewer than 10" in got["reason"]


def test_the_shipped_minilm_calibration_belongs_to_the_shipped_head():
    from model_server.minilm import MiniLMDetector

    data = json.loads((MINILM / "calibration.json").read_text(encoding="utf-8"))
    detector = MiniLMDetector.load(MINILM)
    assert data["version"] == detector.version and detector.calibration == data
    cats = data["categories"]
    # measured on SNaC dev (model_server/models/minilm/README.md): RefE never gets there
    assert cats["RefE"]["threshold"] is None and "never reaches 0.90" in cats["RefE"]["reason"]
    for cat in ("CharE", "SceneE"):
        assert cats[cat]["dev_precision"] >= 0.9 and cats[cat]["dev_flagged"] >= 10
    assert load_calibration(MINILM, "some-other-version") is None


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
