"""Issue 16, fifth attempt: CharE variants judged out of fold on SNaC train (cached).

Step 1 (slow, once): the shipped v4 candidate rows of train (``minilm.vectors``) and the
import's entity clusters of every train document (``app.entities.find_entities``) are
computed and pickled under ``--cache``. Step 2 (seconds per variant): each variant's CharE
heads (names, roles) are fitted out of fold (4 folds by document, seeds 0-3) and the CharE
sentence F1 at the best out-of-fold threshold is printed. Dev is never read here.

    OMP_NUM_THREADS=1 .venv/bin/python bench/detector_chare5.py --cache bench/out/chare5-cache
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


def cached(path: Path, make):
    if path.exists():
        return pickle.loads(path.read_bytes())
    started = time.perf_counter()
    value = make()
    path.write_bytes(pickle.dumps(value))
    print(f"{path.name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return value


def train_rows(split: str, cache: Path):
    from model_server.evaluate import example_inputs
    from model_server.features import analyse, parse_inputs
    from model_server.minilm import vectors
    from model_server.snac_data import load_documents, sentence_examples, snac_path

    def make():
        examples = sentence_examples(load_documents(snac_path(split)))
        inputs = example_inputs(examples)
        analysed = analyse(zip(parse_inputs(inputs), inputs, strict=True))
        return examples, vectors(inputs, analysed)

    return cached(cache / f"{split}_rows.pkl", make)


def train_clusters(split: str, cache: Path):
    """(segment texts, clusters) per document, as ``marginalia detector train`` gets them
    (``app.detection.clusters.find_clusters``: the import's ``app.entities``)."""
    from app.detection.clusters import find_clusters
    from model_server.snac_data import load_documents, snac_path

    def make():
        docs = load_documents(snac_path(split))
        texts = {doc_id: [s.get("text", "") for s in segs] for doc_id, segs in docs.items()}
        found = find_clusters(list(texts.values()))
        return texts, dict(zip(texts, found, strict=True))

    return cached(cache / f"{split}_clusters.pkl", make)


def folds_of(examples, seed: int, folds: int = 4) -> dict[str, int]:
    docs = sorted({ex.doc_id for ex in examples})
    random.Random(seed).shuffle(docs)
    return {d: i % folds for i, d in enumerate(docs)}


SPAN = ("character", "role")


def chare_data(examples, rows):
    """Per CharE head: row indices, matrix, candidate targets (any vote) and max votes."""
    from model_server.minilm import CATEGORY_OF

    out = {}
    for label in SPAN:
        idx = [i for i, r in enumerate(rows) if r[2] == label]
        x = np.stack([rows[i][3] for i in idx])
        votes = []
        for i in idx:
            k, cand = rows[i][0], rows[i][1]
            v = [
                g.votes
                for g in examples[k].gold
                if g.category == CATEGORY_OF[label] and cand.start < g.end and g.start < cand.end
            ]
            votes.append(max(v) if v else 0)
        out[label] = (idx, x, np.asarray(votes))
    return out


def cluster_matrix(examples, rows, idx, texts, clusters):
    """The cluster features (``model_server.clusters``) of rows ``idx``."""
    from model_server.clusters import (
        CLUSTER_FEATURES,
        candidate_features,
        document_evidence,
        sentence_evidence,
    )

    evidence = {d: document_evidence(texts[d], c) for d, c in clusters.items()}
    out = []
    for i in idx:
        k, cand = rows[i][0], rows[i][1]
        ex = examples[k]
        mentions = sentence_evidence(evidence[ex.doc_id], ex.segment, ex.start, ex.end)
        feats = candidate_features(mentions, cand.start, cand.end)
        out.append([feats[n] for n in CLUSTER_FEATURES])
    return np.asarray(out, np.float32)


def fit_logistic(x, y, l2, sample_weight=None, epochs=300):
    """``minilm_train._fit_logistic`` with optional soft targets and sample weights."""
    mean, std = x.mean(0), x.std(0) + 1e-6
    xt = torch.tensor((x - mean) / std)
    yt = torch.tensor(y, dtype=torch.float32)
    w = torch.zeros(x.shape[1], requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    pos = max(1.0, float((y > 0).sum()))
    weight = torch.where(yt > 0, (len(y) - pos) / pos, 1.0).clamp(max=10.0) ** 0.5
    if sample_weight is not None:
        weight = weight * torch.tensor(sample_weight, dtype=torch.float32)
    opt = torch.optim.LBFGS([w, b], lr=0.5, max_iter=epochs, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            xt @ w + b, yt, weight=weight
        ) + l2 * (w @ w)
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy(), float(b.item()), mean, std


def fit_mlp(x, y, hidden: int, decay: float, epochs: int = 300, seed: int = 0):
    """A one-hidden-layer MLP (tanh) on standardised features, full-batch Adam, the same
    positive weighting as the logistic head; returns a scoring function."""
    torch.manual_seed(seed)
    mean, std = x.mean(0), x.std(0) + 1e-6
    xt = torch.tensor((x - mean) / std)
    yt = torch.tensor(y, dtype=torch.float32)
    pos = max(1.0, float((y > 0).sum()))
    weight = torch.where(yt > 0, (len(y) - pos) / pos, 1.0).clamp(max=10.0) ** 0.5
    net = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
    )
    opt = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=decay)
    for _ in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            net(xt).squeeze(-1), yt, weight=weight
        )
        loss.backward()
        opt.step()

    def score(z):
        with torch.no_grad():
            return torch.sigmoid(net(torch.tensor((z - mean) / std)).squeeze(-1)).numpy()

    return score


def oof_probs(
    x,
    y,
    fold,
    cut,
    components,
    l2=1e-2,
    sample_weight=None,
    folds=4,
    bag=0,
    groups=None,
    mlp=None,
):
    from model_server.minilm_train import fit_reduction, project

    oof = np.zeros(len(y), np.float32)
    if mlp:
        for f in range(folds):
            tr, he = fold != f, fold == f
            reduce = fit_reduction(x[tr], cut, components) if components else None
            xtr = project(x[tr], reduce) if reduce else x[tr, :cut]
            xhe = project(x[he], reduce) if reduce else x[he, :cut]
            inits = mlp[4] if len(mlp) > 4 else 1
            for init in range(inits):
                params = (*mlp[:3], init) if inits > 1 else mlp[:4]
                oof[he] += fit_mlp(xtr, y[tr], *params)(xhe) / inits
        return oof
    if bag:
        rng = np.random.default_rng(0)
        for f in range(folds):
            he = fold == f
            docs = np.unique(groups[fold != f])
            for _ in range(bag):
                pick = rng.choice(docs, size=len(docs), replace=True)
                take = np.concatenate([np.flatnonzero(groups == d) for d in pick])
                take = take[fold[take] != f]
                reduce = fit_reduction(x[take], cut, components) if components else None
                xtr = project(x[take], reduce) if reduce else x[take, :cut]
                xhe = project(x[he], reduce) if reduce else x[he, :cut]
                w, b, mean, std = fit_logistic(xtr, y[take], l2)
                oof[he] += 1 / (1 + np.exp(-(((xhe - mean) / std) @ w + b))) / bag
        return oof
    for f in range(folds):
        tr, he = fold != f, fold == f
        reduce = fit_reduction(x[tr], cut, components) if components else None
        xtr = project(x[tr], reduce) if reduce else x[tr, :cut]
        xhe = project(x[he], reduce) if reduce else x[he, :cut]
        sw = sample_weight[tr] if sample_weight is not None else None
        w, b, mean, std = fit_logistic(xtr, y[tr], l2, sw)
        oof[he] = 1 / (1 + np.exp(-(((xhe - mean) / std) @ w + b)))
    return oof


def chare_f1(examples, rows, data, seed, variant) -> dict:
    """Out-of-fold CharE sentence figures of ``variant`` (a dict of options) on one shuffle."""
    from model_server.operating_points import choose

    fold_of = folds_of(examples, seed)
    scores = [0.0] * len(examples)
    for label in SPAN:
        idx, x, votes = data[label]
        extra = variant.get("extra", {}).get(label)
        cut = x.shape[1] - 384
        if extra is not None:
            x = np.hstack([x[:, :cut], extra, x[:, cut:]])
            cut += extra.shape[1]
        y = (votes >= 1).astype(np.float32)
        if variant.get("soft"):
            y = np.minimum(votes, 3) / 3.0
            y = y.astype(np.float32)
        sw = None
        if variant.get("vote_weight"):
            sw = np.where(votes > 0, np.minimum(votes, 3) ** variant["vote_weight"], 1.0)
        fold = np.asarray([fold_of[examples[rows[i][0]].doc_id] for i in idx])
        comps = variant.get("components", {"character": 32, "role": 8})[label]
        l2 = variant.get("l2", {}).get(label, 1e-2)
        groups = np.asarray([examples[rows[i][0]].doc_id for i in idx])
        probs = oof_probs(
            x,
            y,
            fold,
            cut,
            comps,
            l2,
            sw,
            bag=variant.get("bag", 0),
            groups=groups,
            mlp=variant.get("mlp"),
        )
        for i, p in zip(idx, probs, strict=True):
            k = rows[i][0]
            scores[k] = max(scores[k], float(p))
    gold = [any(g.category == "CharE" for g in ex.gold) for ex in examples]
    best = choose(scores, gold)["best_f1"]
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--cache", type=Path, default=Path(__file__).resolve().parent / "out" / "chare5-cache"
    )
    parser.add_argument("--split", default="train")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--variants", nargs="*")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    texts, found = train_clusters(args.split, args.cache)
    examples, rows = train_rows(args.split, args.cache)
    data = chare_data(examples, rows)
    clusters = {
        label: cluster_matrix(examples, rows, data[label][0], texts, found) for label in SPAN
    }
    variants = {
        "v4": {},
        "clusters names": {"extra": {"character": clusters["character"]}},
        "clusters names+roles": {"extra": clusters},
        "soft targets (votes/3)": {"soft": True},
        "vote weights (votes^0.5)": {"vote_weight": 0.5},
        "vote weights (votes^1)": {"vote_weight": 1.0},
        "bagging 10 (bootstrap documents)": {"bag": 10},
        "names PCA 48, L2 0.03": {
            "components": {"character": 48, "role": 8},
            "l2": {"character": 0.03},
        },
        "names PCA 64, L2 0.1": {
            "components": {"character": 64, "role": 8},
            "l2": {"character": 0.1},
        },
    }
    from model_server.clusters import CLUSTER_FEATURES

    for j, feature in enumerate(CLUSTER_FEATURES):
        keep = [n for n in range(len(CLUSTER_FEATURES)) if n != j]
        variants[f"clusters names+roles without {feature}"] = {
            "extra": {label: m[:, keep] for label, m in clusters.items()}
        }
        variants[f"clusters names+roles, {feature} only"] = {
            "extra": {label: m[:, [j]] for label, m in clusters.items()}
        }
    for hidden, decay in ((16, 1e-3), (16, 1e-2), (32, 1e-2)):
        variants[f"clusters names+roles, MLP {hidden} hidden, weight decay {decay:g}"] = {
            "extra": clusters,
            "mlp": (hidden, decay),
        }
    for init in (1, 2):
        variants[f"clusters names+roles, MLP 32 hidden, weight decay 0.01, init seed {init}"] = {
            "extra": clusters,
            "mlp": (32, 1e-2, 300, init),
        }
    variants["clusters names+roles, MLP 32 hidden, weight decay 0.01, 5 inits averaged"] = {
        "extra": clusters,
        "mlp": (32, 1e-2, 300, 0, 5),
    }
    variants["clusters names+roles, vote weights (votes^1)"] = {
        "extra": clusters,
        "vote_weight": 1.0,
    }
    for name in [v.replace("@", " ") for v in args.variants] or variants:
        figures = [chare_f1(examples, rows, data, seed, variants[name]) for seed in args.seeds]
        f1s = " / ".join(f"{f['f1']:.4f}" for f in figures)
        print(
            f"{name:40s} {f1s}  (seed {args.seeds[0]}: P {figures[0]['precision']:.3f} "
            f"R {figures[0]['recall']:.3f} t {figures[0]['threshold']:.2f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
