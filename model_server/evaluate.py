"""SNaC sentence-level evaluation: per-category precision, recall, F1 and span overlap.

A sentence is positive for a category when a gold error of that category (with at least
``min_votes`` votes) starts in it; a detector predicts the category for the sentence when
it returns a suggestion with that label. ``ov.`` is the share of correctly flagged
sentences where a predicted span overlaps a gold span of the category.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from model_server.grammar import SNAC_CATEGORY
from model_server.interface import DetectionInput, Detector, RawSuggestion
from model_server.snac_data import (
    SentenceExample,
    attach_people,
    load_documents,
    sentence_examples,
)

REPORTED = ("CharE", "SceneE", "RefE", "InconE")


def example_inputs(examples: Sequence[SentenceExample]) -> list[DetectionInput]:
    return [DetectionInput(ex.context, ex.sentence, ex.index == 0, ex.people) for ex in examples]


def score(
    examples: Sequence[SentenceExample],
    predictions: Sequence[list[RawSuggestion]],
    min_votes: int = 1,
) -> dict[str, dict[str, float]]:
    """Per-category tp/fp/fn, P, R, F1 and ov. (span overlap on true positives)."""
    table: dict[str, dict[str, float]] = {}
    for cat in REPORTED:
        tp = fp = fn = overlap = 0
        for ex, preds in zip(examples, predictions, strict=True):
            gold = [g for g in ex.gold if g.category == cat and g.votes >= min_votes]
            mine = [p for p in preds if SNAC_CATEGORY.get(p.label) == cat]
            if gold and mine:
                tp += 1
                if any(p.start < g.end and g.start < p.end for p in mine for g in gold):
                    overlap += 1
            elif mine:
                fp += 1
            elif gold:
                fn += 1
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        table[cat] = {
            "p": p,
            "r": r,
            "f1": f1,
            "ov": overlap / tp if tp else 0.0,
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "support": tp + fn,
        }
    return table


def evaluate_detector(
    detector: Detector, examples: Sequence[SentenceExample], min_votes: int = 1
) -> dict[str, dict[str, float]]:
    return score(examples, detector.detect(example_inputs(examples)), min_votes)


def evaluate_file(
    detector: Detector, path: str | Path, min_votes: int = 1, limit_docs: int | None = None
) -> dict[str, dict[str, float]]:
    docs = load_documents(path)
    if limit_docs:
        docs = dict(list(docs.items())[:limit_docs])
    examples = sentence_examples(docs)
    attach_people(examples, docs)
    return evaluate_detector(detector, examples, min_votes)


def format_table(
    rows: dict[str, dict[str, dict[str, float]]],
    categories: Sequence[str] = ("CharE", "SceneE", "RefE"),
) -> str:
    """Markdown table: one row per detector, P/R/F1/ov. per category."""
    head = "| detector | " + " | ".join(f"{c} P | {c} R | {c} F1 | {c} ov." for c in categories)
    sep = "|---" * (1 + 4 * len(categories)) + "|"
    lines = [head + " |", sep]
    for name, table in rows.items():
        cells = []
        for c in categories:
            t = table[c]
            cells += [f"{t['p']:.2f}", f"{t['r']:.2f}", f"{t['f1']:.2f}", f"{t['ov']:.2f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def all_positive(
    examples: Sequence[SentenceExample], min_votes: int = 1
) -> dict[str, dict[str, float]]:
    """The trivial baseline: every sentence predicted positive for every category
    (P = share of gold sentences, R = 1, F1 = 2P / (1 + P); ov. not defined, given as 0)."""
    table = {}
    for cat in REPORTED:
        gold = sum(
            any(g.category == cat and g.votes >= min_votes for g in ex.gold) for ex in examples
        )
        p = gold / len(examples) if examples else 0.0
        r = 1.0 if gold else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        table[cat] = {"p": p, "r": r, "f1": f1, "ov": 0.0, "tp": gold, "fp": len(examples) - gold}
        table[cat].update(fn=0, support=gold)
    return table


def evaluate_points(
    detector: Detector, examples: Sequence[SentenceExample], min_votes: int = 1
) -> dict[str, dict[str, dict[str, float]]]:
    """Scores at each stored operating point ({point: table}); one scoring pass, then
    thresholds. Empty for a detector without operating points or candidate probabilities."""
    from model_server.interface import operating_points
    from model_server.operating_points import POINTS, threshold_for

    inputs = example_inputs(examples)
    # MiniLM: the heads (and points) of inputs without the import's clusters when none has any
    detector = getattr(detector, "for_inputs", lambda _: detector)(inputs)
    points = operating_points(detector)
    probabilities = getattr(detector, "probabilities", None)
    if not points or probabilities is None:
        return {}
    scored = probabilities(inputs)
    suggested_as = getattr(detector, "suggested_as", {})
    tables = {}
    for name in POINTS:
        predictions: list[list[RawSuggestion]] = [[] for _ in examples]
        for k, cand, head, prob in scored:
            label = suggested_as.get(head, head)  # MiniLM's `role` head suggests `character`
            category = SNAC_CATEGORY.get(label, "")
            threshold = threshold_for(points.get(category), name)
            if threshold is not None and prob >= threshold:
                predictions[k].append(
                    RawSuggestion(label, cand.start, cand.end, prob, detector.name, name)
                )
        table = score(examples, predictions, min_votes)
        for category in table:  # a category without this point predicts nothing
            if threshold_for(points.get(category), name) is None:
                table[category]["missing"] = 1.0
        tables[name] = table
    return tables
