"""A detector learned from a study's own curated work: what it reads of a document
and how a trained model folder suggests.

The unit is the **sentence** of the detector's splitter (:mod:`model_server.study_data`).
Each sentence is read as :data:`HAND` features (place, length, similarity to the text around
it, what it introduces that the text before never mentioned), the frozen shipped
all-MiniLM-L6-v2 embedding of the sentence (:func:`model_server.minilm.embed`, batched)
and, with ``context``, the embedding of the sentence before it (zeros for a document's
first). A head reads the hand features only, or all of them (chosen per category out of
fold by :mod:`model_server.learned_train`). One logistic head per category (weights in ``head.json``, written by
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
import re
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
from model_server.study_data import Sentence
from model_server.text import nlp, sentence_spans_from_doc

NAME = "learned"
HEAD_FILE = "head.json"
CARD_FILE = "MODEL_CARD.md"
FORMAT = "marginalia-learned-detector/1"
SIMILARITY = ("sim_previous", "sim_context", "max_sim_earlier", "max_sim_later", "sim_document")
NOVELTY = (
    "new_proper_nouns",
    "new_noun_share",
    "new_definite",
    "starts_with_pronoun",
    "starts_with_connective",
    "entities",
)
HAND = ("position", "opens_segment", "opens_document", "log_chars", *SIMILARITY, *NOVELTY)
"""Features that hold for any taxonomy: place and length; cosine similarity to the sentence
before, to the three before, the best earlier and later ones, the rest of the document (a
jump, a repetition, an off-topic detail); what it introduces that the text before never
mentioned (names, nouns, definite noun phrases: omissions), how it opens, its entities."""
PRONOUNS = {"he", "she", "they", "it", "his", "her", "their", "its", "this", "these", "those"}
_WORD = re.compile(r"\w+")
Embed = Callable[[Sequence[str]], np.ndarray]


def default_embed(texts: Sequence[str]) -> np.ndarray:
    """The frozen shipped encoder's L2-normalised sentence embeddings (offline)."""
    from model_server.minilm import embed

    return embed(list(texts))


def _novelty(sent: Any, seen: set[str]) -> tuple[float, ...]:
    """:data:`NOVELTY` of one spaCy sentence span; ``seen`` (the words before) grows."""
    if sent is None:
        return (0.0,) * len(NOVELTY)
    propn = [t for t in sent if t.pos_ == "PROPN" and t.text.lower() not in seen]
    nouns = [t for t in sent if t.pos_ == "NOUN"]
    new_nouns = [t for t in nouns if t.lemma_.lower() not in seen and t.text.lower() not in seen]
    determiners = ("the", "his", "her", "their", "its")
    definite = [
        t
        for t in nouns
        if any(c.lower_ in determiners for c in t.children) and t.lemma_.lower() not in seen
    ]
    first = next((t for t in sent if not t.is_punct and not t.is_space), None)
    row = (
        math.log1p(len(propn)),
        len(new_nouns) / len(nouns) if nouns else 0.0,
        math.log1p(len(definite)),
        float(first is not None and first.lower_ in PRONOUNS),
        float(first is not None and first.pos_ in ("ADV", "SCONJ", "CCONJ")),
        math.log1p(len(sent.ents)),
    )
    seen.update(w.lower() for w in _WORD.findall(sent.text))
    seen.update(t.lemma_.lower() for t in sent)
    return row


def sentence_texts(
    documents: Sequence[Sequence[str]],
) -> tuple[list[list[Sentence]], list[str], list[np.ndarray]]:
    """(every document's sentences, all their texts in reading order, per document the
    :data:`NOVELTY` rows): one spaCy pass, the detector's splitter
    (:func:`model_server.text.sentence_spans_from_doc`)."""
    flat = [(d, s, text) for d, segs in enumerate(documents) for s, text in enumerate(segs)]
    sentences: list[list[Sentence]] = [[] for _ in documents]
    novelty: list[list[tuple[float, ...]]] = [[] for _ in documents]
    seen: list[set[str]] = [set() for _ in documents]
    texts: list[str] = []
    parsed = nlp().pipe([text for _, _, text in flat], batch_size=64)
    for (d, seg, text), doc in zip(flat, parsed, strict=True):
        for k, (start, end) in enumerate(sentence_spans_from_doc(doc)):
            sentences[d].append(Sentence(seg, start, end, len(sentences[d]), k == 0))
            texts.append(text[start:end])
            span = doc.char_span(start, end, alignment_mode="expand")
            novelty[d].append(_novelty(span, seen[d]))
    rows = [np.asarray(n, np.float32).reshape(len(n), len(NOVELTY)) for n in novelty]
    return sentences, texts, rows


def _similarities(emb: np.ndarray) -> np.ndarray:
    """:data:`SIMILARITY` of each sentence of one document (rows of ``emb``)."""
    n = len(emb)
    out = np.zeros((n, len(SIMILARITY)), np.float32)
    if n == 0:
        return out
    sims = emb @ emb.T
    total = emb.sum(0)
    for k in range(n):
        if k > 0:
            out[k, 0] = sims[k, k - 1]
            ctx = emb[max(0, k - 3) : k].mean(0)
            out[k, 1] = float(emb[k] @ ctx / (np.linalg.norm(ctx) + 1e-9))
            out[k, 2] = sims[k, :k].max()
        if k < n - 1:
            out[k, 3] = sims[k, k + 1 :].max()
        if n > 1:
            rest = total - emb[k]
            out[k, 4] = float(emb[k] @ rest / (np.linalg.norm(rest) + 1e-9))
    return out


def features(
    sentences: Sequence[Sequence[Sentence]],
    embeddings: np.ndarray,
    novelty: Sequence[np.ndarray],
    context: bool = True,
) -> list[np.ndarray]:
    """Per document, one row per sentence: :data:`HAND`, its embedding and (``context``)
    the previous sentence's; ``embeddings`` holds every sentence's row in reading order. A
    head reads the first ``n`` columns: :data:`HAND` only, or all of them."""
    out, at = [], 0
    width = embeddings.shape[1] if len(embeddings) else 384
    for d, sents in enumerate(sentences):
        n = len(sents)
        emb = embeddings[at : at + n]
        at += n
        prev = np.zeros((n, width), np.float32)
        if n > 1:
            prev[1:] = emb[:-1]
        place = np.zeros((n, 4), np.float32)
        for k, s in enumerate(sents):
            last = k / max(n - 1, 1)
            place[k] = (
                last,
                float(s.opens_segment),
                float(k == 0),
                math.log1p(s.end - s.start) / 5,
            )
        parts = [place, _similarities(emb), novelty[d], emb] + ([prev] if context else [])
        out.append(np.concatenate(parts, axis=1))
    return out


def head_scores(head: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """The head's probabilities for the rows of ``x`` (its first columns, as many as its
    weights; standardised with its mean and std)."""
    x = x[:, : len(head["w"])]
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
        widest = len(HAND) + 2 * 384
        for category, h in self.heads.items():
            sizes = {len(h["w"]), len(h["mean"]), len(h["std"])}
            if len(sizes) != 1 or not 0 < len(h["w"]) <= widest:
                raise ValueError(f"head {category!r}: weights, mean and std of unequal sizes")
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
        sentences, texts, novelty = sentence_texts([list(segments)])
        if not texts:
            return [], {c: np.zeros(0) for c in self.heads}
        x = features(sentences, embed(texts), novelty, self.context)[0]
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
