"""Scores of a worker's spans: P/R/F1 against gold (strict, lenient, sentence level) and
recall against detector suggestions.

* Matching is one-to-one (:mod:`app.rules.matching`): **strict** (same category, token
  IoU ≥ 0.5; sentence IoU ≥ 0.5 for sentence-scope categories) is the rule of the
  top-level figures and of qualification; **lenient** (same category, any overlap; a
  shared sentence for sentence-scope categories) is reported beside it.
* Precision of category c = matched worker spans of c / worker spans of c; recall =
  matched gold spans of c / gold spans of c (with a one-to-one matching both numerators
  are the number of matched pairs); F1 = 2PR/(P+R). Overall figures pool the counts of
  every category (micro average).
* **Sentence level** (our sentence projection, :func:`app.rules.matching.sentence_labels`):
  the same P/R/F1 over (sentence, category) labels instead of spans.
* A **suggestion is caught** when the lenient matching pairs it with a worker span (one
  worker span catches at most one suggestion). Recall over suggestions = caught / suggestions.

Offsets are code points into one segment's text, end exclusive; gold spans without
offsets are placed by :func:`app.documents.locating.locate` first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from app.documents.locating import locate
from app.rules.matching import eligible, match, sentence_labels
from app.rules.spans import (
    TOKEN_PATTERN,
    Span,
    TextKey,
    sentence_bounds,
    sentence_ids,
    span_to_dict,
    token_bounds,
    widen_to_sentences,
)

__all__ = [
    "TOKEN_PATTERN",
    "Span",
    "TextKey",
    "locate_spans",
    "matches",
    "overlaps",
    "precision_recall_f1",
    "scopes_from_taxonomy",
    "sentence_bounds",
    "sentence_ids",
    "span_to_dict",
    "suggestion_recall",
    "token_bounds",
    "widen_to_sentences",
]


def locate_spans(spans: Iterable[Span], texts: Mapping[TextKey, str]) -> list[Span]:
    """Fill in missing offsets from each span's text (:func:`app.documents.locating.locate`;
    repeats of a text and category in a segment go to successive occurrences).

    Spans that already have offsets, or whose text cannot be found, are returned as they
    are (an unlocated span matches nothing, so it still counts against recall).
    """
    out = []
    taken: dict[tuple[TextKey, str, str], set[tuple[int, int]]] = defaultdict(set)
    for span in spans:
        if (span.start is None or span.end is None) and span.key in texts:
            used = taken[(span.key, span.text.strip(), span.category)]
            found = locate(texts[span.key], span.text, taken=used)
            if found.start is not None and found.end is not None:
                used.add((found.start, found.end))
                span = replace(span, start=found.start, end=found.end)
        out.append(span)
    return out


def scopes_from_taxonomy(snapshot: Mapping[str, Any]) -> dict[str, str]:
    """Category id -> scope ("span" or "sentence") from a taxonomy snapshot."""
    return {cat["id"]: cat.get("scope", "span") for cat in snapshot.get("categories", [])}


def overlaps(a: Span, b: Span) -> bool:
    """Same document and segment, both non-empty, half-open ranges intersect (no category)."""
    return (
        a.key == b.key
        and a.located
        and b.located
        and a.start < b.end  # type: ignore[operator]
        and b.start < a.end  # type: ignore[operator]
    )


def matches(
    a: Span,
    b: Span,
    *,
    texts: Mapping[TextKey, str] | None = None,
    scopes: Mapping[str, str] | None = None,
    rule: str = "lenient",
) -> bool:
    """Whether the pair is eligible under ``rule`` (:func:`app.rules.matching.eligible`)."""
    return eligible(a, b, rule, texts=texts, scopes=scopes)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _f1(matched_pred: int, n_pred: int, matched_gold: int, n_gold: int) -> float | None:
    """F1 from counts; an undefined P or R counts as 0; None when there is nothing at all."""
    if n_pred == 0 and n_gold == 0:
        return None
    precision = _ratio(matched_pred, n_pred) or 0.0
    recall = _ratio(matched_gold, n_gold) or 0.0
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _prf_entry(matched_pred: int, n_pred: int, matched_gold: int, n_gold: int) -> dict[str, Any]:
    return {
        "predicted": n_pred,
        "gold": n_gold,
        "matched_predicted": matched_pred,
        "matched_gold": matched_gold,
        "precision": _ratio(matched_pred, n_pred),
        "recall": _ratio(matched_gold, n_gold),
        "f1": _f1(matched_pred, n_pred, matched_gold, n_gold),
    }


def _table(
    predicted: Sequence[Any],
    gold: Sequence[Any],
    matched_pred: Sequence[bool],
    matched_gold: Sequence[bool],
    category_of: Any,
    categories: Sequence[str],
) -> dict[str, Any]:
    per_category = {}
    for cat in categories:
        per_category[cat] = _prf_entry(
            sum(f for p, f in zip(predicted, matched_pred, strict=True) if category_of(p) == cat),
            sum(1 for p in predicted if category_of(p) == cat),
            sum(f for g, f in zip(gold, matched_gold, strict=True) if category_of(g) == cat),
            sum(1 for g in gold if category_of(g) == cat),
        )
    overall = _prf_entry(sum(matched_pred), len(predicted), sum(matched_gold), len(gold))
    return {"per_category": per_category, "overall": overall}


def _span_table(
    predicted: Sequence[Span],
    gold: Sequence[Span],
    rule: str,
    texts: Mapping[TextKey, str] | None,
    scopes: Mapping[str, str] | None,
    categories: Sequence[str],
) -> dict[str, Any]:
    pairs = match(predicted, gold, rule, texts=texts, scopes=scopes)
    left, right = {i for i, _ in pairs}, {j for _, j in pairs}
    return _table(
        predicted,
        gold,
        [i in left for i in range(len(predicted))],
        [j in right for j in range(len(gold))],
        lambda span: span.category,
        categories,
    )


def _sentence_table(
    predicted: Sequence[Span],
    gold: Sequence[Span],
    texts: Mapping[TextKey, str],
    categories: Sequence[str],
) -> dict[str, Any]:
    flagged = sorted(sentence_labels(predicted, texts))
    positive = sorted(sentence_labels(gold, texts))
    flagged_set, positive_set = set(flagged), set(positive)
    return _table(
        flagged,
        positive,
        [label in positive_set for label in flagged],
        [label in flagged_set for label in positive],
        lambda label: label[3],
        categories,
    )


def precision_recall_f1(
    predicted: Iterable[Span],
    gold: Iterable[Span],
    *,
    texts: Mapping[TextKey, str] | None = None,
    scopes: Mapping[str, str] | None = None,
    categories: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Per-category and pooled precision, recall and F1 of ``predicted`` against ``gold``.

    Pass only the spans of the documents being scored (a worker's spans on the gold
    documents they did, and those documents' gold spans). Gold spans without offsets are
    located in ``texts`` first. Returns::

        {"rule": "strict", "per_category": {cat: entry}, "overall": entry,   # strict rule
         "lenient": {"per_category", "overall"},                            # any overlap
         "sentence": {"per_category", "overall"} or None}                   # SNaC sentences

    An entry has ``predicted``, ``gold``, ``matched_predicted``, ``matched_gold``
    (counts; spans, or (sentence, category) labels at sentence level), ``precision``
    (None without predictions), ``recall`` (None without gold) and ``f1`` (undefined P
    or R count as 0; None when both counts are 0). ``categories`` lists the categories to
    report (default: every category seen, sorted). ``sentence`` is None without ``texts``.
    """
    predicted = list(predicted)
    gold = locate_spans(gold, texts) if texts is not None else list(gold)
    if categories is None:
        categories = sorted({s.category for s in predicted} | {s.category for s in gold})
    strict = _span_table(predicted, gold, "strict", texts, scopes, categories)
    return {
        "rule": "strict",
        **strict,
        "lenient": _span_table(predicted, gold, "lenient", texts, scopes, categories),
        "sentence": _sentence_table(predicted, gold, texts, categories)
        if texts is not None
        else None,
    }


def _distinct(spans: Iterable[Span]) -> list[Span]:
    """The spans with repeats of the same place and category dropped (first kept)."""
    seen: set[tuple[str, int, int | None, int | None, str]] = set()
    out = []
    for span in spans:
        place = (span.document, span.segment, span.start, span.end, span.category)
        if place not in seen:
            seen.add(place)
            out.append(span)
    return out


def suggestion_recall(
    worker_spans: Iterable[Span],
    suggestions: Iterable[Span],
    *,
    texts: Mapping[TextKey, str] | None = None,
    scopes: Mapping[str, str] | None = None,
    categories: Sequence[str] | None = None,
) -> dict[str, Any]:
    """How many detector suggestions the worker caught, overall and per category.

    A suggestion is caught when the lenient one-to-one matching pairs it with a worker
    span (:func:`app.rules.matching.match`). Pass the
    suggestions of the documents the worker did; suggestions at the same place (document,
    segment, start, end, category), e.g. from repeated detector runs, count once (the
    first one given is kept). Returns a JSON-ready dict::

        {"recall": float | None, "caught": int, "total": int,
         "per_category": {cat: {"recall", "caught", "total"}},
         "missed": [span_to_dict(suggestion), ...]}   # in the order given

    ``recall`` is None when there were no suggestions.
    """
    suggestions = _distinct(suggestions)
    caught_indices = {
        j for _, j in match(list(worker_spans), suggestions, "lenient", texts=texts, scopes=scopes)
    }
    flags = [j in caught_indices for j in range(len(suggestions))]
    if categories is None:
        categories = sorted({s.category for s in suggestions})
    per_category = {}
    for cat in categories:
        total = sum(1 for s in suggestions if s.category == cat)
        caught = sum(f for s, f in zip(suggestions, flags, strict=True) if s.category == cat)
        per_category[cat] = {"recall": _ratio(caught, total), "caught": caught, "total": total}
    caught = sum(flags)
    return {
        "recall": _ratio(caught, len(suggestions)),
        "caught": caught,
        "total": len(suggestions),
        "per_category": per_category,
        "missed": [span_to_dict(s) for s, f in zip(suggestions, flags, strict=True) if not f],
    }


def merge_suggestion_recall(
    parts: Iterable[Mapping[str, Any]], categories: Sequence[str]
) -> dict[str, Any]:
    """:func:`suggestion_recall` over several documents from its result on each (each given
    ``categories``; ``missed`` in the order of ``parts``): the matching never pairs spans of
    two documents, so this is one call over them all (tests/test_report_stream.py)."""
    per_category = {cat: [0, 0] for cat in categories}
    caught = total = 0
    missed: list[dict[str, Any]] = []
    for part in parts:
        caught, total = caught + part["caught"], total + part["total"]
        for cat, entry in part["per_category"].items():
            found = per_category.setdefault(cat, [0, 0])
            found[0] += entry["caught"]
            found[1] += entry["total"]
        missed.extend(part["missed"])
    return {
        "recall": _ratio(caught, total),
        "caught": caught,
        "total": total,
        "per_category": {
            cat: {"recall": _ratio(hit, of), "caught": hit, "total": of}
            for cat, (hit, of) in per_category.items()
        },
        "missed": missed,
    }
