"""Issue 30, last try (bench only): fine-tune the MiniLM encoder as an "any error" sentence
classifier on BooookScore, with context, under the same five document-level folds as
``bench/learned_detector.py`` (:func:`model_server.learned_train.fold_of`).

Input: the previous ``--context`` sentences of the summary (cut from the left) paired with
the target sentence, at most ``--max-tokens`` word pieces; the score is a linear head over
the mean of the top layer's vectors of the target's word pieces. The bottom ``--frozen``
encoder layers stay frozen, so their output is computed once for every sentence and cached
(the same for every fold); the layers above are fine-tuned whole (small LR) or, with
``--lora``, through rank-8 adapters on query/value (bench/lora_span_model.py's
``LoRALinear``). Positives are weighted neg/pos in the loss.

Thresholds are never chosen on the test fold: inside each outer fold one training fold is
held out for validation (the encoder is tuned on the other three), and the threshold (and,
for the combined head, a logistic head over [tuned score, the 15 hand features]) is chosen
on it with :func:`model_server.operating_points.best_threshold`; the encoder is then used
as is on the test fold. Also reported, for comparison with docs/DETECTOR.md's table (whose
thresholds are chosen on the pooled out-of-fold scores themselves): the best F1 of the
pooled out-of-fold scores (:func:`model_server.operating_points.choose`).

    .venv/bin/python bench/learned_detector_tuned.py [--frozen 4] [--epochs 3] [--lora]

Runs on one thread (the machine is shared); the prepared sentences and the frozen layers'
output are cached under /tmp.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import pickle
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "marginalia-tuned"


def prepared() -> dict:
    """Sentences, hand features, "any error" targets and folds, as ``train_study`` makes
    them (the same helpers), cached under /tmp."""
    path = CACHE / "prepared.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    from learned_detector import booookscore_study, cached_embed

    from model_server.learned import HAND, features, sentence_texts
    from model_server.learned_train import fold_of
    from model_server.study_data import sentence_targets

    data = booookscore_study()
    documents = [d for d in data.documents if any(t.strip() for t in d.segments)]
    sentences, texts, novelty = sentence_texts([list(d.segments) for d in documents])
    x = np.concatenate(features(sentences, cached_embed(texts), novelty, True))
    fold = fold_of(len(documents), 5)
    targets = [
        t for d, doc in enumerate(documents) for t in sentence_targets(sentences[d], doc.spans)
    ]
    out = {
        "texts": texts,
        "doc": np.concatenate([np.full(len(s), d) for d, s in enumerate(sentences)]),
        "fold": np.concatenate([np.full(len(s), fold[d]) for d, s in enumerate(sentences)]),
        "hand": x[:, : len(HAND)].astype(np.float32),
        "y": np.array([bool(t) for t in targets]),
        "types": [sorted(t) for t in targets],
    }
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(out))
    return out


def encode_inputs(texts, doc, tok, context: int, max_tokens: int):
    """Per sentence (input ids, token types, where the target's pieces start): the previous
    ``context`` sentences of its document, cut from the left, then the target."""
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    cls, sep = tok.cls_token_id, tok.sep_token_id
    rows = []
    for i, target in enumerate(ids):
        target = target[: max_tokens - 3]
        before: list[int] = []
        for j in range(max(0, i - context), i):
            if doc[j] == doc[i]:
                before += ids[j]
        room = max_tokens - len(target) - 3
        before = before[len(before) - room :] if room > 0 else []
        seq = [cls, *before, sep, *target, sep]
        types = [0] * (len(before) + 2) + [1] * (len(target) + 1)
        rows.append((seq, types, len(before) + 2, len(before) + 2 + len(target)))
    return rows


@torch.inference_mode()
def frozen_states(base, rows, frozen: int, batch: int = 64) -> list[torch.Tensor]:
    """Every sentence's hidden states after the bottom ``frozen`` layers (cached)."""
    out: list[torch.Tensor] = [None] * len(rows)  # type: ignore[list-item]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    for b in range(0, len(order), batch):
        idx = order[b : b + batch]
        ids, types, mask = _pad([rows[i] for i in idx])
        h = base(
            input_ids=ids, token_type_ids=types, attention_mask=mask, output_hidden_states=True
        ).hidden_states[frozen]
        for k, i in enumerate(idx):
            out[i] = h[k, : len(rows[i][0])].clone()
    return out


def _pad(rows):
    n = max(len(r[0]) for r in rows)
    ids = torch.zeros(len(rows), n, dtype=torch.long)
    types = torch.zeros(len(rows), n, dtype=torch.long)
    mask = torch.zeros(len(rows), n, dtype=torch.long)
    for k, (seq, ty, _, _) in enumerate(rows):
        ids[k, : len(seq)] = torch.tensor(seq)
        types[k, : len(seq)] = torch.tensor(ty)
        mask[k, : len(seq)] = 1
    return ids, types, mask


class Tuned(torch.nn.Module):
    """The encoder's layers above ``frozen`` (trainable) and a linear head over the mean
    of the target's pieces."""

    def __init__(self, base, frozen: int, lora: bool):
        super().__init__()
        self.base = copy.deepcopy(base)
        self.layers = self.base.encoder.layer[frozen:]
        for p in self.base.parameters():
            p.requires_grad_(False)
        if lora:
            from lora_span_model import LoRALinear

            for layer in self.layers:
                att = layer.attention.self
                for name in ("query", "value"):
                    setattr(att, name, LoRALinear(getattr(att, name), 8, 16.0))
        else:
            for p in self.layers.parameters():
                p.requires_grad_(True)
        self.head = torch.nn.Linear(base.config.hidden_size, 1)

    def forward(self, states: list[torch.Tensor], spans) -> torch.Tensor:
        n = max(len(s) for s in states)
        h = torch.zeros(len(states), n, states[0].shape[1])
        mask = torch.zeros(len(states), n, dtype=torch.long)
        for k, s in enumerate(states):
            h[k, : len(s)] = s
            mask[k, : len(s)] = 1
        ext = self.base._create_attention_masks(
            attention_mask=mask,
            encoder_attention_mask=None,
            embedding_output=h,
            encoder_hidden_states=None,
            cache=None,
        )[0]
        for layer in self.layers:
            out = layer(h, attention_mask=ext)
            h = out[0] if isinstance(out, tuple) else out
        pooled = torch.stack([h[k, a:b].mean(0) for k, (a, b) in enumerate(spans)])
        return self.head(pooled).squeeze(-1)


def train(base, states, spans, y, args, seed: int = 0) -> Tuned:
    torch.manual_seed(seed)
    model = Tuned(base, args.frozen, args.lora)
    pos = max(1.0, float(y.sum()))
    pos_weight = (len(y) - pos) / pos
    encoder_params = [p for p in model.layers.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(
        [
            {"params": encoder_params, "lr": args.lr, "weight_decay": 0.01},
            {"params": model.head.parameters(), "lr": 1e-3, "weight_decay": 0.01},
        ]
    )
    order = list(range(len(y)))
    steps = args.epochs * ((len(order) + args.batch - 1) // args.batch)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / (steps - warm + 1)))
    )
    rng = random.Random(seed)
    model.train()
    for _ in range(args.epochs):
        rng.shuffle(order)
        for b in range(0, len(order), args.batch):
            idx = order[b : b + args.batch]
            logits = model([states[i] for i in idx], [spans[i] for i in idx])
            target = torch.tensor(y[idx], dtype=torch.float32)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, target, pos_weight=torch.tensor(pos_weight)
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.eval()
    return model


@torch.inference_mode()
def scores(model: Tuned, states, spans, batch: int = 64) -> np.ndarray:
    order = sorted(range(len(states)), key=lambda i: len(states[i]))
    out = np.zeros(len(states))
    for b in range(0, len(order), batch):
        idx = order[b : b + batch]
        out[idx] = torch.sigmoid(model([states[i] for i in idx], [spans[i] for i in idx])).numpy()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frozen", type=int, default=4, help="bottom layers left frozen")
    parser.add_argument("--lora", action="store_true", help="adapters instead of full tuning")
    parser.add_argument("--context", type=int, default=2, help="previous sentences given")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--folds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from sklearn.metrics import roc_auc_score

    from model_server.learned import head_scores
    from model_server.learned_train import baseline_f1, fit_head
    from model_server.minilm import encoder
    from model_server.operating_points import best_threshold, choose, point

    load = [os.getloadavg()]
    started = time.perf_counter()
    data = prepared()
    tok, base = encoder()
    rows = encode_inputs(data["texts"], data["doc"], tok, args.context, args.max_tokens)
    key = f"states-{args.context}-{args.max_tokens}-{args.frozen}.pt"
    if (CACHE / key).exists():
        states = torch.load(CACHE / key)
    else:
        states = frozen_states(base, rows, args.frozen)
        torch.save(states, CACHE / key)
    spans = [(r[2], r[3]) for r in rows]
    y, fold, hand = data["y"], data["fold"], data["hand"]
    print(
        f"{len(y)} sentences, {int(y.sum())} with an error; mean length "
        f"{np.mean([len(r[0]) for r in rows]):.1f} pieces; prepared in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )
    tuned = np.zeros(len(y))
    combined = np.zeros(len(y))
    pred_tuned = np.zeros(len(y), bool)
    pred_comb = np.zeros(len(y), bool)
    pred_hand = np.zeros(len(y), bool)
    hand_oof = np.zeros(len(y))
    per_fold = {}
    for k in args.folds:
        t0 = time.perf_counter()
        test = np.flatnonzero(fold == k)
        val_fold = (k + 1) % 5
        val = np.flatnonzero(fold == val_fold)
        fit = np.flatnonzero((fold != k) & (fold != val_fold))
        model = train(base, [states[i] for i in fit], [spans[i] for i in fit], y[fit], args)
        s_val = scores(model, [states[i] for i in val], [spans[i] for i in val])
        s_test = scores(model, [states[i] for i in test], [spans[i] for i in test])
        t_tuned = best_threshold(s_val.tolist(), y[val].tolist())
        # combined: a logistic head over [tuned score, hand] fit on the validation fold
        xv = np.column_stack([s_val, hand[val]])
        xt = np.column_stack([s_test, hand[test]])
        head = fit_head(xv, y[val])
        c_val = head_scores(head, xv)
        t_comb = best_threshold(c_val.tolist(), y[val].tolist())
        c_test = head_scores(head, xt)
        hand_head = fit_head(hand[fit], y[fit])
        h_val, h_test = head_scores(hand_head, hand[val]), head_scores(hand_head, hand[test])
        t_hand = best_threshold(h_val.tolist(), y[val].tolist())
        pred_hand[test] = h_test >= t_hand
        hand_oof[test] = h_test
        tuned[test], combined[test] = s_test, c_test
        pred_tuned[test] = s_test >= t_tuned
        pred_comb[test] = c_test >= t_comb
        per_fold[k] = {
            "sentences": len(test),
            "errors": int(y[test].sum()),
            "baseline_f1": baseline_f1(y[test]),
            "tuned": point(s_test.tolist(), y[test].tolist(), t_tuned),
            "combined": point(c_test.tolist(), y[test].tolist(), t_comb),
            "hand": point(h_test.tolist(), y[test].tolist(), t_hand),
            "val_f1_tuned": point(s_val.tolist(), y[val].tolist(), t_tuned)["f1"],
            "seconds": round(time.perf_counter() - t0, 1),
            "load": os.getloadavg(),
        }
        print(f"fold {k}: {json.dumps(per_fold[k])}", flush=True)
        load.append(os.getloadavg())
    done = np.isin(fold, args.folds)
    yd = y[done].tolist()
    result = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "baseline_f1": baseline_f1(y[done]),
        "honest": {
            "tuned": point(pred_tuned[done].astype(float).tolist(), yd, 0.5),
            "combined": point(pred_comb[done].astype(float).tolist(), yd, 0.5),
            "hand": point(pred_hand[done].astype(float).tolist(), yd, 0.5),
        },
        "pooled_best": {
            "tuned": choose(tuned[done].tolist(), yd)["best_f1"],
            "combined": choose(combined[done].tolist(), yd)["best_f1"],
        },
        "roc_auc": {
            name: round(float(roc_auc_score(yd, v[done])), 4)
            for name, v in (("tuned", tuned), ("combined", combined), ("hand", hand_oof))
        },
        "per_fold": per_fold,
        "mean_fold_f1": {
            name: round(float(np.mean([f[name]["f1"] for f in per_fold.values()])), 4)
            for name in ("tuned", "combined", "hand")
        },
        "wall_s": round(time.perf_counter() - started, 1),
        "load": load,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "per_fold"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
