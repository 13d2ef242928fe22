"""A tiny T5 trained in the test on a handful of SNaC train sentences, saved, reloaded and
used through the detector interface, the pipeline and the SNaC TSV predictor."""

import io
import json
from pathlib import Path

import pytest

from app.documents.taxonomy import load_taxonomy
from model_server.detector import load_detector
from model_server.pipeline import detect_document
from model_server.predict import predict_tsv
from model_server.t5 import T5Detector
from tests.conftest import shared_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="module")
def snac() -> dict[str, Path]:
    """SNaC train and the sample TSV: skip without ../shared, or fail under
    MARGINALIA_REQUIRE_DATA (CI)."""
    return {"train": shared_file("snac", "train.json"), "sample": shared_file("snac", "sample.tsv")}


def test_training_writes_hf_checkpoint_and_model_card(tiny_t5):
    out, summary = tiny_t5
    assert summary["steps"] > 0 and summary["train_sentences"] > 5
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "README.md",
        "marginalia_detector.json",
    ):
        assert (out / name).exists(), name
    card = (out / "README.md").read_text()
    assert "## Data" in card and "tiny-test" in card
    assert json.loads((out / "marginalia_detector.json").read_text())["max_context_words"] == 24


def test_reloaded_model_predicts_through_pipeline(tiny_t5, snac):
    out, _ = tiny_t5
    detector = load_detector(str(out))
    assert isinstance(detector, T5Detector) and detector.version.startswith("tiny-test+")
    texts = detector.texts([("Don Pedro arrives.", "Claudio meets Hero."), ("", "A start.")])
    assert texts[0] == "Don Pedro arrives. <extra_id_0> Claudio meets Hero."
    outputs = detector.generate(texts)
    assert len(outputs) == 2 and all(isinstance(t, str) and 0 <= c <= 1 for t, c in outputs)
    taxonomy = load_taxonomy(ROOT / "taxonomies" / "snac.yaml")
    first = next(iter(json.loads(snac["train"].read_text(encoding="utf-8")).values()))
    segments = [first[str(i)]["text"] for i in range(len(first))]  # the summary it learnt
    rows = detect_document(segments, detector, taxonomy)
    assert rows, "the pipeline produced no suggestion at all"
    for row in rows:
        assert segments[row.segment][row.start : row.end] == row.text
        assert row.detector == "t5"


def test_output_parsing_places_spans(tiny_t5):
    detector = T5Detector.load(tiny_t5[0])
    sentence = "At the ball, Hero dances with Claudio."
    found = detector.to_suggestions("false character claudio event the ring scene", 0.8, sentence)
    assert [(s.label, sentence[s.start : s.end]) for s in found] == [
        ("character", "Claudio"),
        ("scene", sentence),
    ]


def test_predict_tsv_writes_snac_lines(tiny_t5, snac):
    detector = T5Detector.load(tiny_t5[0])
    buf = io.StringIO()
    n = predict_tsv(detector, snac["sample"], buf)
    lines = buf.getvalue().splitlines()
    assert n > 0 and len(lines) == 2 * n
    assert all(line.startswith("Predicted: ") for line in lines[1::2])
    assert all("<extra_id_0>" in line for line in lines[0::2])
