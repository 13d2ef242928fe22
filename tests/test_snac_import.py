"""``marginalia detector import-snac DIR`` on a tiny T5 saved in SNaC's release layout
(``config.json`` + ``pytorch_model.bin``, no tokenizer; t5-large's tokenizer given apart)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from model_server.cli import detector
from model_server.detector import load_detector
from model_server.train import small_model, train_tokenizer
from tests.helpers import tiny_config

TEXTS = [
    "Anna lives in a small village with her aunt. She bakes bread every morning.",
    "Zebulon Quark buys a loaf at the fair. Meanwhile, the ship reaches the harbour.",
    "true false character event scene inconsistent",
] * 20


@pytest.fixture(scope="module")
def snac_release(tmp_path_factory) -> tuple[Path, Path]:
    """(checkpoint folder as SNaC ships it, a tokenizer folder apart)."""
    root = tmp_path_factory.mktemp("snac")
    tokenizer = train_tokenizer(TEXTS, vocab_size=120)
    torch.manual_seed(0)
    model = small_model(tokenizer, tiny_config())
    src = root / "snac_t5_large_char"
    src.mkdir()
    model.config.to_json_file(str(src / "config.json"))
    torch.save(model.state_dict(), src / "pytorch_model.bin")  # the release's weights file
    tok_dir = root / "t5-tokenizer"
    tokenizer.save_pretrained(str(tok_dir))
    return src, tok_dir


def run(*args: str):
    return CliRunner().invoke(detector, ["import-snac", *args])


def test_import_converts_checks_and_loads(snac_release, tmp_path):
    src, tok_dir = snac_release
    out = tmp_path / "imported"
    result = run(str(src), "--out", str(out), "--tokenizer", str(tok_dir))
    assert result.exit_code == 0, result.output
    text = result.output
    summary = json.loads(text[text.index("{\n") : text.rindex("}") + 1])
    assert (summary["max_context_words"], summary["max_input_tokens"]) == (921, 1024)
    assert summary["version"] == "snac-snac_t5_large_char"
    assert len(summary["check_outputs"]) == 3 and sum(summary["check_verdicts"].values()) == 3
    for name in ("model.safetensors", "config.json", "marginalia_detector.json"):
        assert (out / name).is_file(), name
    loaded = load_detector(str(out))
    assert loaded.name == "t5" and loaded.version.startswith("snac-snac_t5_large_char+")
    assert loaded.max_context_words == 921
    original = torch.load(src / "pytorch_model.bin")
    converted = loaded.model.state_dict()
    key = "encoder.block.0.layer.0.SelfAttention.q.weight"
    assert torch.equal(original[key], converted[key].float())  # the same weights, not new ones
    [suggestions] = loaded.detect([("Anna bakes bread.", "Zebulon Quark buys a loaf.")])
    assert isinstance(suggestions, list)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no-tokenizer", "pass --tokenizer DIR"),
        ("no-weights", "no weights"),
        ("not-t5", "not t5"),
        ("no-config", "no config.json"),
        ("small-vocab", "not the tokenizer this checkpoint was trained with"),
        ("garbage-weights", "the weights could not be loaded"),
    ],
)
def test_a_folder_that_does_not_fit_is_a_one_line_error(snac_release, tmp_path, change, message):
    src, tok_dir = snac_release
    broken = tmp_path / "broken"
    broken.mkdir()
    config = json.loads((src / "config.json").read_text())
    if change == "not-t5":
        config["model_type"] = "bert"
    if change == "small-vocab":
        config["vocab_size"] = 10
    if change != "no-config":
        (broken / "config.json").write_text(json.dumps(config))
    if change == "garbage-weights":
        (broken / "pytorch_model.bin").write_bytes(b"not a pickle at all")
    elif change != "no-weights":
        (broken / "pytorch_model.bin").write_bytes((src / "pytorch_model.bin").read_bytes())
    args = [str(broken), "--out", str(tmp_path / "out")]
    if change != "no-tokenizer":
        args += ["--tokenizer", str(tok_dir)]
    result = run(*args)
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert not (tmp_path / "out").exists()  # nothing written
