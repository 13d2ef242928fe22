"""A detector learned from a study's own curated work (issue 30): what it reads of a document
and how a trained model folder suggests.

The unit is the **sentence** of the detector's splitter (:mod:`model_server.study_data`).
Each sentence is read as :data:`HAND` features (its similarity to the sentence before, its
place in the document and segment, its length), the frozen shipped all-MiniLM-L6-v2
embedding of the sentence (:func:`model_server.minilm.embed`, batched) and, with
``context``, the embedding of the sentence before it (zeros for a document's first). One
logistic head per category (weights in ``head.json``, written by
:mod:`model_server.learned_train`) scores it; a sentence whose score reaches its category's
threshold at the study's hint level is suggested as a whole sentence under that category.
Several categories may suggest the same sentence (multi-label taxonomies). A paired or
relation category is suggested at sentence level only, on the later span's sentence,
without its earlier span. A category whose out-of-fold F1 is under
:data:`~model_server.operating_points.MIN_HINT_F1`, or not above the all-positive
baseline, is scored but never suggested.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from model_server.interface import DetectionStats
from model_server.operating_points import (
    DEFAULT_HINTS,
    confident_calibration,
    hintable,
    threshold_for,
)
from model_server.pipeline import SuggestionRow
from model_server.study_data import Sentence, document_sentences

NAME = "learned"
HEAD_FILE = "head.json"
CARD_FILE = "MODEL_CARD.md"
FORMAT = "marginalia-learned-detector/1"
HAND = ("sim_previous", "position", "opens_segment", "opens_document", "log_chars")
Embed = Callable[[Sequence[str]], np.ndarray]


def default_embed(texts: Sequence[str]) -> np.ndarray:
    """The frozen shipped encoder's L2-normalised sentence embeddings (offline)."""
    from model_server.minilm import embed

    return embed(list(texts))


def sentence_texts(documents: Sequence[Sequence[str]]) -> tuple[list[list[Sentence]], list[str]]:
    """(every document's sentences, all their texts in reading order)."""
    sentences = document_sentences(documents)
    texts = [
        documents[d][s.segment][s.start : s.end] for d, sents in enumerate(sentences) for s in sents
    ]
    return sentences, texts


def features(
    sentences: Sequence[Sequence[Sentence]], embeddings: np.ndarray, context: bool = True
) -> list[np.ndarray]:
    """Per document, one row per sentence: :data:`HAND`, its embedding and (``context``)
    the previous sentence's; ``embeddings`` holds every sentence's row in reading order."""
    out, at = [], 0
    width = embeddings.shape[1] if len(embeddings) else 384
    for sents in sentences:
        n = len(sents)
        emb = embeddings[at : at + n]
        at += n
        prev = np.zeros((n, width), np.float32)
        if n > 1:
            prev[1:] = emb[:-1]
        hand = np.zeros((n, len(HAND)), np.float32)
        for k, s in enumerate(sents):
            hand[k] = (
                float(emb[k] @ prev[k]),
                k / max(n - 1, 1),
                float(s.opens_segment),
                float(k == 0),
                math.log1p(s.end - s.start) / 5,
            )
        parts = [hand, emb, prev] if context else [hand, emb]
        out.append(np.concatenate(parts, axis=1) if n else np.zeros((0, 0), np.float32))
    return out


def head_scores(head: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """The head's probabilities for the rows of ``x`` (standardised with its mean and std)."""
    z = ((x - head["mean"]) / head["std"]) @ head["w"] + head["b"]
    return 1.0 / (1.0 + np.exp(-z))


def suggested(points: dict[str, Any] | None, baseline_f1: float) -> bool:
    """Whether a category's head is good enough to suggest: hintable and its best
    out-of-fold F1 above the all-positive baseline's."""
    best = (points or {}).get("best_f1")
    return hintable(points) and best is not None and float(best["f1"]) > baseline_f1


class LearnedDetector:
    """A model folder's heads, used at one hint level."""

    name = NAME

    def __init__(self, data: dict[str, Any], version: str, level: str = DEFAULT_HINTS):
        if data.get("format") != FORMAT:
            raise ValueError(f"not a learned detector (format {data.get('format')!r})")
        self.data = data
        self.context = bool(data.get("context", True))
        self.level = level
        self.operating_points: dict[str, dict] = data.get("operating_points") or {}
        self.baselines: dict[str, float] = data.get("baselines") or {}
        self.heads = {
            category: {
                "w": np.asarray(h["w"], np.float32),
                "b": float(h["b"]),
                "mean": np.asarray(h["mean"], np.float32),
                "std": np.asarray(h["std"], np.float32),
                "threshold": self._threshold(category, float(h["threshold"])),
            }
            for category, h in data["heads"].items()
        }
        self._base_version = version
        self.version = version if level == DEFAULT_HINTS else f"{version}@{level}"
        self._levels: dict[str, LearnedDetector] = {}

    def _threshold(self, category: str, default: float) -> float:
        points = self.operating_points.get(category)
        if not suggested(points, self.baselines.get(category, 0.0)):
            return math.inf
        return float(threshold_for(points, self.level, default) or default)

    @classmethod
    def from_bytes(cls, raw: bytes) -> LearnedDetector:
        """The detector of a ``head.json``'s bytes; its version ends with their digest."""
        data = json.loads(raw)
        digest = hashlib.sha256(raw).hexdigest()[:8]
        return cls(data, f"{data.get('model', 'study')}+{digest}")

    @classmethod
    def load(cls, path: str | Path) -> LearnedDetector:
        return cls.from_bytes((Path(path) / HEAD_FILE).read_bytes())

    @property
    def categories(self) -> list[str]:
        return list(self.heads)

    def at_level(self, level: str) -> LearnedDetector:
        """The same heads at hint level ``level`` (precise / balanced / thorough)."""
        if level == self.level:
            return self
        if level not in self._levels:
            self._levels[level] = LearnedDetector(self.data, self._base_version, level)
        return self._levels[level]

    @property
    def calibration(self) -> dict:
        """Per category the confident threshold (``precision_90``, out of fold), stored with
        the version (``detector_versions``) for the recall estimates."""
        return confident_calibration(
            self.operating_points, {c: c for c in self.heads}, self._base_version
        )

    def detect(self, batch):  # pragma: no cover - the Detector protocol's entry
        raise TypeError("the learned detector reads whole documents: use detect_segments")

    def scores(
        self, segments: Sequence[str], embed: Embed = default_embed
    ) -> tuple[list[Sentence], dict[str, np.ndarray]]:
        """The document's sentences and each head's score per sentence."""
        sentences, texts = sentence_texts([list(segments)])
        if not texts:
            return [], {c: np.zeros(0) for c in self.heads}
        x = features(sentences, embed(texts), self.context)[0]
        return sentences[0], {c: head_scores(h, x) for c, h in self.heads.items()}

    def detect_segments(
        self, segments: list[str], taxonomy: dict[str, Any]
    ) -> tuple[list[SuggestionRow], DetectionStats]:
        """Suggestion rows (whole sentences) of the categories the study's taxonomy has."""
        started = time.perf_counter()
        known = {str(c.get("id")) for c in taxonomy.get("categories", [])}
        stats = DetectionStats()
        sentences, scored = self.scores(segments)
        rows: list[SuggestionRow] = []
        for category, values in scored.items():
            threshold = self.heads[category]["threshold"]
            hits = [k for k, v in enumerate(values) if v >= threshold]
            if category not in known:
                stats.unknown_category += len(hits)
                continue
            for k in hits:
                s = sentences[k]
                rows.append(
                    SuggestionRow(
                        s.segment,
                        s.start,
                        s.end,
                        segments[s.segment][s.start : s.end],
                        category,
                        round(float(values[k]), 4),
                        NAME,
                        self.version,
                    )
                )
        rows.sort(key=lambda r: (r.segment, r.start, r.category))
        stats.suggestions = len(rows)
        stats.seconds = time.perf_counter() - started
        return rows, stats
