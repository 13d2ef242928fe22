"""``marginalia detector import-snac DIR``: turn one of SNaC's released T5 checkpoints into a
detector folder this project loads, and check it answers in SNaC's grammar.

SNaC's checkpoints are ``T5ForConditionalGeneration.save_pretrained`` folders
(``config.json`` + ``pytorch_model.bin``) without a tokenizer: ``snac_evaluate.py`` loads
``t5-large``'s. So the tokenizer comes from the checkpoint when it has one, else from
``--tokenizer DIR``. The output folder holds safetensors weights, the tokenizer and
``marginalia_detector.json`` with SNaC's input limits (921 context words, 1024 tokens).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from model_server.grammar import SENTINEL, SNAC_CONTEXT_WORDS, SNAC_MAX_LENGTH, parse_output
from model_server.t5 import SETTINGS_FILE, T5Detector

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TOKENIZER_FILES = ("spiece.model", "tokenizer.json")
CHECK_INPUTS = [
    ("", "Anna lives in a small village with her aunt."),
    ("Anna lives in a small village with her aunt.", "Zebulon Quark buys a loaf at the fair."),
    ("Anna sells bread.", "Meanwhile, the ship reaches the harbour."),
]


class ImportProblem(ValueError):
    """The folder is not a usable SNaC checkpoint (the message says why)."""


def _check_source(src: Path, tokenizer: Path | None) -> tuple[dict, Path]:
    """The checkpoint's config and the folder to read the tokenizer from."""
    config_path = src / "config.json"
    if not config_path.is_file():
        raise ImportProblem(f"{src}: no config.json (not a Hugging Face checkpoint folder)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ImportProblem(f"{config_path}: not JSON ({exc})") from None
    if config.get("model_type") != "t5":
        raise ImportProblem(f"{config_path}: model_type is {config.get('model_type')!r}, not t5")
    if not any((src / name).is_file() for name in WEIGHT_FILES):
        raise ImportProblem(f"{src}: no weights ({' or '.join(WEIGHT_FILES)})")
    source = tokenizer or src
    if not any((source / name).is_file() for name in TOKENIZER_FILES):
        where = "--tokenizer folder" if tokenizer else "checkpoint"
        raise ImportProblem(
            f"{source}: the {where} has no T5 tokenizer ({' or '.join(TOKENIZER_FILES)}); "
            "SNaC's checkpoints use t5-large's: pass --tokenizer DIR"
        )
    return config, source


def import_snac(
    src: str | Path, out: str | Path, tokenizer: str | Path | None = None, device: str | None = None
) -> dict:
    """Convert and check; returns a summary (parameters, vocabulary, check outputs).
    Raises :class:`ImportProblem` with a one-line reason when the folder does not fit."""
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    src, out = Path(src), Path(out)
    config, tokenizer_dir = _check_source(src, Path(tokenizer) if tokenizer else None)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    sentinel = tok.convert_tokens_to_ids(SENTINEL)
    if sentinel is None or sentinel == tok.unk_token_id:
        raise ImportProblem(f"{tokenizer_dir}: the tokenizer has no {SENTINEL} sentinel")
    if len(tok) > int(config.get("vocab_size", 0)):
        raise ImportProblem(
            f"tokenizer has {len(tok)} tokens but the model's vocabulary is "
            f"{config.get('vocab_size')}: not the tokenizer this checkpoint was trained with"
        )
    try:
        model = T5ForConditionalGeneration.from_pretrained(str(src))
    except Exception as exc:  # noqa: BLE001 - any loader failure is the folder's fault
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ImportProblem(f"{src}: the weights could not be loaded ({first_line})") from None
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    settings = {
        "version": f"snac-{src.resolve().name}",
        "format": "snac",
        "source": str(src.resolve()),
        "max_context_words": SNAC_CONTEXT_WORDS,
        "max_input_tokens": SNAC_MAX_LENGTH,
    }
    (out / SETTINGS_FILE).write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return {**settings, **check(out, device), "out": str(out)}


def check(folder: str | Path, device: str | None = None) -> dict:
    """Reload the converted folder as a detector and run SNaC-format inputs through it: every
    output must parse (a verdict, known or unknown labels) without error."""
    detector = T5Detector.load(folder, device=device)
    outputs = detector.generate(detector.texts(CHECK_INPUTS))
    parsed = [parse_output(text) for text, _ in outputs]
    verdicts = Counter({True: "true", False: "false", None: "none"}[p.coherent] for p in parsed)
    return {
        "detector_version": detector.version,
        "parameters": sum(p.numel() for p in detector.model.parameters()),
        "vocabulary": len(detector.tokenizer),
        "check_outputs": [text for text, _ in outputs],
        "check_verdicts": dict(verdicts),
    }
