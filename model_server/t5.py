"""T5 backend: a SNaC-style ``T5ForConditionalGeneration`` checkpoint, loaded once.

Fast path: inputs sorted by length and batched with dynamic padding, ``torch.inference_mode``,
bf16/fp16 with larger batches on CUDA. Works with the SNaC release's checkpoints (context
kept to 921 words, 1024 tokens) and with checkpoints written by :mod:`model_server.train`,
whose ``marginalia_detector.json`` records their own input limits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import torch

from model_server.grammar import (
    LABELS,
    SNAC_CONTEXT_WORDS,
    SNAC_MAX_LENGTH,
    SPANLESS,
    build_input,
    find_span,
    parse_output,
)
from model_server.interface import DetectionInput, RawSuggestion, as_inputs

NAME = "t5"
SETTINGS_FILE = "marginalia_detector.json"


def pick_device(device: str | None = None) -> torch.device:
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _fingerprint(path: Path) -> str:
    """Short hash of the config and the first MiB of the weights (cheap for big models)."""
    sha = hashlib.sha256((path / "config.json").read_bytes())
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (path / name).exists():
            with open(path / name, "rb") as fh:
                sha.update(fh.read(1 << 20))
            break
    return sha.hexdigest()[:8]


class T5Detector:
    """Batched SNaC-grammar T5 predictor."""

    name = NAME

    def __init__(
        self,
        model,
        tokenizer,
        *,
        version: str = "0",
        max_context_words: int = SNAC_CONTEXT_WORDS,
        max_input_tokens: int = SNAC_MAX_LENGTH,
        max_new_tokens: int = 79,
        batch_size: int | None = None,
        device: str | None = None,
    ):
        self.device = pick_device(device)
        self.tokenizer = tokenizer
        # over-long inputs lose the oldest context, never the sentence being judged
        self.tokenizer.truncation_side = "left"
        self.dtype = torch.float32
        if self.device.type == "cuda":
            self.dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        self.model = model.to(self.device, dtype=self.dtype).eval()
        self.version = version
        self.max_context_words = max_context_words
        self.max_input_tokens = max_input_tokens
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size or (64 if self.device.type == "cuda" else 16)

    @classmethod
    def load(cls, path: str | Path, **overrides) -> T5Detector:
        """Load model, tokenizer and settings from a checkpoint folder."""
        from transformers import AutoTokenizer, T5ForConditionalGeneration

        path = Path(path)
        settings = {}
        if (path / SETTINGS_FILE).exists():
            settings = json.loads((path / SETTINGS_FILE).read_text(encoding="utf-8"))
        digest = _fingerprint(path)
        version = f"{settings.get('version', path.name)}+{digest}"
        kwargs = {
            "version": version,
            "max_context_words": int(settings.get("max_context_words", SNAC_CONTEXT_WORDS)),
            "max_input_tokens": int(settings.get("max_input_tokens", SNAC_MAX_LENGTH)),
        }
        kwargs.update(overrides)
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        model = T5ForConditionalGeneration.from_pretrained(str(path))
        return cls(model, tokenizer, **kwargs)

    def texts(self, inputs: Sequence[DetectionInput | tuple]) -> list[str]:
        """Model input texts (SNaC format, context cut to this model's word limit)."""
        return [
            build_input(i.context, i.sentence, self.max_context_words) for i in as_inputs(inputs)
        ]

    @torch.inference_mode()
    def generate(self, texts: Sequence[str]) -> list[tuple[str, float]]:
        """(decoded output, confidence) per text, in input order."""
        encoded = self.tokenizer(list(texts), truncation=True, max_length=self.max_input_tokens)
        ids = encoded["input_ids"]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
        results: list[tuple[str, float]] = [("", 0.0)] * len(ids)
        pad = self.tokenizer.pad_token_id
        for b in range(0, len(order), self.batch_size):
            chunk = order[b : b + self.batch_size]
            width = max(len(ids[i]) for i in chunk)
            input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, i in enumerate(chunk):
                input_ids[row, : len(ids[i])] = torch.tensor(ids[i])
                mask[row, : len(ids[i])] = 1
            out = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=mask.to(self.device),
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                num_beams=1,
                output_scores=True,
                return_dict_in_generate=True,
            )
            seqs = out.sequences
            scores = self.model.compute_transition_scores(seqs, out.scores, normalize_logits=True)
            gen = seqs[:, 1:]
            live = (gen != pad).float()
            mean_logp = (scores.float().nan_to_num(0.0) * live).sum(1) / live.sum(1).clamp(min=1)
            decoded = self.tokenizer.batch_decode(gen, skip_special_tokens=True)
            for row, i in enumerate(chunk):
                results[i] = (decoded[row], float(torch.exp(mean_logp[row])))
        return results

    def to_suggestions(self, output: str, confidence: float, sentence: str) -> list[RawSuggestion]:
        """Parse one output and place its spans in the sentence (absent spans skipped)."""
        found = []
        for err in parse_output(output).known_errors:
            if err.label not in LABELS:
                continue
            if err.label in SPANLESS:
                where = (0, len(sentence))
            else:
                where = find_span(err.span, sentence)
                if where is None:
                    continue
            found.append(
                RawSuggestion(
                    err.label, where[0], where[1], round(confidence, 4), self.name, self.version
                )
            )
        return found

    def detect(self, batch: Sequence[DetectionInput | tuple]) -> list[list[RawSuggestion]]:
        inputs = as_inputs(batch)
        outputs = self.generate(self.texts(inputs))
        return [
            self.to_suggestions(text, conf, inp.sentence)
            for (text, conf), inp in zip(outputs, inputs, strict=True)
        ]
