"""Issue 16, sixth attempt: the encoder fine-tuned for CharE (LoRA), judged out of fold.

v5's CharE heads read a frozen all-MiniLM-L6-v2: the layer-3 vectors of the name's word
pieces, reduced by PCA. Here low-rank adapters (LoRA) on the query and value projections of
the layers below the one read are trained on the CharE candidates of each training fold,
jointly with a small head over the same hand and cluster features; then v5's recipe (PCA 32
/ 8, 32-unit MLPs averaged over 5 initialisations) is fitted on the adapted span embeddings
of that fold and scores the held-out documents. The sentence's CharE score is its best
candidate (names and roles), the threshold the best out-of-fold F1, exactly as
``bench/detector_chare5.py`` reports v5. Dev is never read here.

Reuses the fifth attempt's cache (``bench/detector_chare5.py --cache ...`` builds it).

    .venv/bin/python bench/detector_chare6.py --cache bench/out/chare5-cache --seeds 0
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import torch  # noqa: E402


@functools.cache
def _chare5():
    spec = importlib.util.spec_from_file_location("chare5", ROOT / "bench" / "detector_chare5.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Candidate(NamedTuple):
    """One CharE candidate (a name or a role) of the cached train rows."""

    label: str
    sentence: int
    start: int
    end: int
    side: np.ndarray
    """Hand and cluster features."""
    gold: float
    embedding: np.ndarray
    """The frozen encoder's span vector (v5's)."""


def candidates(rows, data, clusters) -> list[Candidate]:
    out = []
    for label in ("character", "role"):
        idx, x, votes = data[label]
        cut = x.shape[1] - 384
        side = np.hstack([x[:, :cut], clusters[label]])
        for n, i in enumerate(idx):
            k, cand = rows[i][0], rows[i][1]
            out.append(
                Candidate(label, k, cand.start, cand.end, side[n], float(votes[n] >= 1), x[n, cut:])
            )
    return out


def inputs_of(examples, cands, context_chars: int):
    """The encoder's input text per candidate and the candidate's offsets in it: the
    sentence, after the last ``context_chars`` of the context (cut at a sentence start)."""
    texts, spans = [], []
    for c in cands:
        ex = examples[c.sentence]
        prefix = ""
        if context_chars and ex.context:
            tail = ex.context[-context_chars:]
            dot = tail.find(". ")
            if len(ex.context) > context_chars and 0 <= dot < len(tail) - 2:
                tail = tail[dot + 2 :]
            prefix = tail + " "
        texts.append(prefix + ex.sentence)
        spans.append((len(prefix) + c.start, len(prefix) + c.end))
    return texts, spans


def fold_ids(examples, cands, seed):
    fold_of = _chare5().folds_of(examples, seed)
    return np.asarray([fold_of[examples[c.sentence].doc_id] for c in cands])


def sentence_f1(examples, cands, probs):
    from model_server.operating_points import choose

    scores = [0.0] * len(examples)
    for c, p in zip(cands, probs, strict=True):
        scores[c.sentence] = max(scores[c.sentence], float(p))
    gold = [any(g.category == "CharE" for g in ex.gold) for ex in examples]
    return choose(scores, gold)["best_f1"]


def main() -> None:
    from lora_span_model import AdapterConfig, SpanModel, span_vectors, train_adapters

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / "out" / "chare5-cache")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--layer", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--frozen", action="store_true", help="no adapters: reproduce v5")
    parser.add_argument(
        "--context-chars", type=int, default=0, help="prepend this much of the context's tail"
    )
    parser.add_argument("--tag", default="run", help="name of the saved out-of-fold scores")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.cache.mkdir(parents=True, exist_ok=True)
    c5 = _chare5()
    texts, found = c5.train_clusters("train", args.cache)
    examples, rows = c5.train_rows("train", args.cache)
    data = c5.chare_data(examples, rows)
    clusters = {
        label: c5.cluster_matrix(examples, rows, data[label][0], texts, found)
        for label in ("character", "role")
    }
    cands = candidates(rows, data, clusters)
    side = np.stack([c.side for c in cands])
    gold = np.asarray([c.gold for c in cands], np.float32)
    labels = np.asarray([c.label for c in cands])
    frozen_emb = np.stack([c.embedding for c in cands])
    print(f"{len(cands)} CharE candidates, {gold.sum():.0f} gold", flush=True)
    cfg = AdapterConfig(rank=args.rank, layer=args.layer, epochs=args.epochs, lr=args.lr)
    texts_in, spans_in = inputs_of(examples, cands, args.context_chars)
    frozen = {}
    for seed in args.seeds:
        fold = fold_ids(examples, cands, seed)
        direct = np.zeros(len(cands), np.float32)
        stacked = np.zeros(len(cands), np.float32)
        for f in range(4):
            started = time.perf_counter()
            tr = np.flatnonzero(fold != f)
            he = np.flatnonzero(fold == f)
            if args.frozen:
                emb = frozen_emb
            else:
                model = SpanModel(cfg)
                train_adapters(
                    model,
                    [texts_in[i] for i in tr],
                    [spans_in[i] for i in tr],
                    side[tr],
                    gold[tr],
                    labels[tr] == "role",
                    seed=seed,
                )
                direct[he] = model.predict(
                    [texts_in[i] for i in he],
                    [spans_in[i] for i in he],
                    side[he],
                    labels[he] == "role",
                )
                emb = span_vectors(model, texts_in, spans_in)
            stacked[he] = v5_recipe(side, emb, gold, labels, tr, he)
            if not args.frozen:
                frozen.setdefault(seed, np.zeros(len(cands), np.float32))[he] = v5_recipe(
                    side, frozen_emb, gold, labels, tr, he
                )
            print(f"  seed {seed} fold {f}: {time.perf_counter() - started:.0f} s", flush=True)
        np.savez(args.cache / f"chare6-{args.tag}-seed{seed}.npz", direct=direct, stacked=stacked)
        v5 = frozen.get(seed, stacked)
        for name, probs in (
            ("direct head", direct),
            ("v5 recipe on adapted", stacked),
            ("mean(direct, v5)", (direct + v5) / 2),
            ("mean(adapted, v5)", (stacked + v5) / 2),
            ("mean(direct, adapted, v5)", (direct + stacked + v5) / 3),
        ):
            if args.frozen and name != "v5 recipe on adapted":
                continue
            best = sentence_f1(examples, cands, probs)
            print(
                f"seed {seed} {name:24s} F1 {best['f1']:.4f} "
                f"(P {best['precision']:.3f} R {best['recall']:.3f} t {best['threshold']:.2f})",
                flush=True,
            )


def v5_recipe(side, emb, gold, labels, tr, he) -> np.ndarray:
    """v5's CharE heads (PCA 32 names / 8 roles, 32-unit MLP, 5 inits) fitted on rows
    ``tr`` with span embeddings ``emb``; probabilities of rows ``he``."""
    c5 = _chare5()
    from model_server.minilm_train import fit_reduction, project

    out = np.zeros(len(he), np.float32)
    x = np.hstack([side, emb]).astype(np.float32)
    for label, comps in (("character", 32), ("role", 8)):
        trl = tr[labels[tr] == label]
        hel = np.flatnonzero(labels[he] == label)
        if not len(hel):
            continue
        reduce = fit_reduction(x[trl], side.shape[1], comps)
        xtr, xhe = project(x[trl], reduce), project(x[he[hel]], reduce)
        for init in range(5):
            out[hel] += c5.fit_mlp(xtr, gold[trl], 32, 1e-2, 300, init)(xhe) / 5
    return out


if __name__ == "__main__":
    main()
