"""The detector learned from a study's own work, evaluated as a researcher would.

BooookScore: ``summary-gpt4-4096-hier.json`` imported into a SQLite study (the BooookScore
format, taxonomies/booookscore.yaml), read back through the app's reader of the counted work
(layer ``workers``: one annotator per summary), then :func:`train_study`'s document-level
k-fold cross-validation: sentence-level F1 per type and for "any error", each against the
all-positive baseline. Variants: with and without the previous sentence, a few C values.
Reports training time and the encoder's sentences/s. Sentence embeddings are cached under
/tmp (the machine is shared).

SNaC (``--snac``): a model trained on SNaC train (its documents as a study, gold spans as
curated work) scored on dev at sentence level, next to the shipped detector's dev figures
(read from its model card, not recomputed: its weights and code are left alone).

    .venv/bin/python bench/learned_detector.py [--snac] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from model_server.learned_train import train_study  # noqa: E402
from model_server.minilm import embed  # noqa: E402

DATA = ROOT / ".." / "shared" / "data"
CACHE = Path(tempfile.gettempdir()) / "marginalia-learned-embeddings"
SPEED: dict[str, float] = {}


def cached_embed(texts):
    """The shipped encoder's embeddings, cached by the texts' digest under /tmp."""
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:20]
    path = CACHE / f"{key}.npy"
    if path.exists():
        return np.load(path)
    started = time.perf_counter()
    out = embed(list(texts))
    SPEED["sentences"] = SPEED.get("sentences", 0) + len(texts)
    SPEED["seconds"] = SPEED.get("seconds", 0) + time.perf_counter() - started
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def booookscore_study():
    """The BooookScore file as a study's curated work, through the app."""
    from app import create_app
    from app.db import session_scope
    from app.detection.study_data import read_study
    from app.documents.studies import create_study, import_documents
    from app.formats import parse_documents
    from app.migrate import upgrade

    db = Path(tempfile.mkdtemp()) / "bbs.sqlite"
    upgrade(f"sqlite:///{db}")
    app = create_app({"DATABASE_URL": f"sqlite:///{db}", "TESTING": True, "SECRET_KEY": "bench"})
    path = DATA / "booookscore" / "summary-gpt4-4096-hier.json"
    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "bbs", ROOT / "taxonomies" / "booookscore.yaml")
        import_documents(session, study, parse_documents(path, "booookscore"))
    with app.app_context(), session_scope() as session:
        from app.documents.studies import get_study

        return read_study(session, get_study(session, "bbs"), "workers", 1)


def snac_studies():
    """SNaC train and dev imported as gold documents (the SNaC format), read back as the
    gold layer: (train data, dev data)."""
    from app import create_app
    from app.db import session_scope
    from app.detection.study_data import read_study
    from app.documents.studies import create_study, get_study, import_documents
    from app.formats import parse_documents
    from app.migrate import upgrade

    db = Path(tempfile.mkdtemp()) / "snac.sqlite"
    upgrade(f"sqlite:///{db}")
    app = create_app({"DATABASE_URL": f"sqlite:///{db}", "TESTING": True, "SECRET_KEY": "bench"})
    out = []
    for split in ("train", "dev"):
        with app.app_context(), session_scope() as session:
            study, _ = create_study(session, f"snac-{split}", ROOT / "taxonomies" / "snac.yaml")
            docs = parse_documents(DATA / "snac" / f"{split}.json", "snac", gold=True)
            import_documents(session, study, docs, gold=True)
        with app.app_context(), session_scope() as session:
            out.append(read_study(session, get_study(session, f"snac-{split}"), "gold", 1))
    return out


def snac_comparison() -> dict:
    """A model learned from SNaC train (gold layer) scored on dev, sentence level, at each
    category's balanced point chosen out of fold on train."""
    from model_server.learned import LearnedDetector, features, head_scores, sentence_texts
    from model_server.operating_points import point
    from model_server.study_data import sentence_targets

    train, dev = snac_studies()
    folder = Path(tempfile.mkdtemp())
    summary = train_study(train, folder, embed=cached_embed)
    model = LearnedDetector.load(folder)
    docs = [list(d.segments) for d in dev.documents]
    sentences, texts, novelty = sentence_texts(docs)
    x = np.concatenate(features(sentences, cached_embed(texts), novelty, model.context))
    gold = [
        t for d, doc in enumerate(dev.documents) for t in sentence_targets(sentences[d], doc.spans)
    ]
    figures = {}
    for category, head in model.heads.items():
        y = [category in t for t in gold]
        threshold = model.operating_points[category]["balanced"]["threshold"]
        scores = head_scores(head, x).tolist()
        figures[category] = point(scores, y, threshold) | {"dev_sentences": sum(y)}
    return {"train": summary, "dev": figures}


def inference_speed(data, documents: int = 20) -> dict:
    """Sentences/s of the encoder alone (uncached, batched) and of a trained model's
    ``detect_segments`` end to end (spaCy, features, heads) on ``documents`` summaries."""
    from model_server.learned import LearnedDetector, sentence_texts

    folder = Path(tempfile.mkdtemp())
    train_study(data, folder, embed=cached_embed)
    model = LearnedDetector.load(folder)
    docs = [list(d.segments) for d in data.documents[:documents]]
    taxonomy = {"categories": [{"id": c.id} for c in data.categories]}
    _, texts, _ = sentence_texts(docs)
    started = time.perf_counter()
    embed(texts)
    encoder_s = time.perf_counter() - started
    started = time.perf_counter()
    rows = sum(len(model.detect_segments(d, taxonomy)[0]) for d in docs)
    detect_s = time.perf_counter() - started
    return {
        "sentences": len(texts),
        "encoder_sentences_per_s": round(len(texts) / encoder_s, 1),
        "detect_sentences_per_s": round(len(texts) / detect_s, 1),
        "suggestions": rows,
    }


def table(summary: dict) -> list[str]:
    out = []
    for cat, f in summary["categories"].items():
        b = f["best_f1"]
        out.append(
            f"  {cat:18} n={f['sentences']:4d} base {f['baseline_f1']:.3f}  best F1 {b['f1']:.3f} "
            f"(P {b['precision']:.2f} R {b['recall']:.2f})  +{b['f1'] - f['baseline_f1']:.3f} "
            f"{f['features']}"
        )
    for cat, k in summary["skipped"].items():
        out.append(f"  {cat:18} skipped ({k['sentences']} sentences)")
    a = summary["any_error"]
    h = a["head"]
    out.append(
        f"  {'any (suggested)':18} n={a['sentences']:4d} base {a['baseline_f1']:.3f}  F1 {a['f1']:.3f} "
        f"(P {a['precision']:.2f} R {a['recall']:.2f})  +{a['f1'] - a['baseline_f1']:.3f}"
    )
    out.append(
        f"  {'any (own head)':18} n={a['sentences']:4d} base {a['baseline_f1']:.3f}  F1 {h['f1']:.3f} "
        f"(P {h['precision']:.2f} R {h['recall']:.2f})  +{h['f1'] - a['baseline_f1']:.3f} "
        f"{h['features']}"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--snac", action="store_true", help="also SNaC train -> dev")
    parser.add_argument("--snac-only", action="store_true", help="only SNaC train -> dev")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--c", type=float, nargs="*", default=[0.01, 0.05])
    parser.add_argument("--quick", action="store_true", help="only with the previous sentence")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(2)
    results: dict = {"load_before": os.getloadavg()}
    if args.snac_only:
        snac = snac_comparison()
        print("\n".join(table(snac["train"])))
        print("SNaC dev at the balanced points:", json.dumps(snac["dev"]))
        print("load average before/after:", results["load_before"], os.getloadavg())
        return
    data = booookscore_study()
    for context in (True, False)[: 1 if args.quick else 2]:
        for c in args.c:
            started = time.perf_counter()
            summary = train_study(data, None, context=context, c=c, embed=cached_embed)
            key = f"booookscore context={context} C={c}"
            results[key] = summary | {"wall_s": round(time.perf_counter() - started, 1)}
            if not args.json:
                print(
                    f"{key}: {summary['documents']} docs, {summary['sentences']} sentences, "
                    f"training {summary['seconds']} (embeddings cached after the first run), "
                    f"wall {results[key]['wall_s']} s"
                )
                print("\n".join(table(summary)))
    results["inference"] = inference_speed(data)
    if args.snac:
        results["snac"] = snac = snac_comparison()
        if not args.json:
            print("SNaC train (out of fold):")
            print("\n".join(table(snac["train"])))
            print("SNaC dev at the balanced points:", json.dumps(snac["dev"]))
    results["load_after"] = os.getloadavg()
    if not args.json:
        print("inference:", results["inference"])
        print("load average before/after:", results["load_before"], results["load_after"])
    else:
        print(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
