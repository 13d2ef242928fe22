"""Span matching and scores: overlap ("ov."), per-category P/R/F1, recall against suggestions.

Definitions (all offsets are code-point offsets into one segment's text, end exclusive):

* Two spans **overlap** when they are in the same document and segment, both have offsets,
  and their half-open ranges intersect: ``a.start < b.end and b.start < a.end``. Touching
  spans (``a.end == b.start``) do not overlap; a span nested inside another does; an empty
  span (``start == end``) overlaps nothing. This is the lenient "any overlap" criterion
  (our reading of SNaC's "ov." column: a predicted span counts when it overlaps a reference
  span of the same error type).
* For a category whose taxonomy ``scope`` is ``"sentence"`` (SNaC's SceneE), two spans
  match when they touch at least one common sentence of the same segment (sentences from
  :func:`sentence_bounds`), whatever their exact boundaries.
* A span **matches** another when both have the same category and they overlap in that
  sense. Matching is many-to-many: one long worker span can match several gold spans.
* Precision of category c = worker spans of c that match at least one gold span of c,
  divided by the worker's spans of c; recall = gold spans of c matched by at least one
  worker span, divided by the gold spans of c; F1 = 2PR/(P+R). The overall figures pool
  the counts of every category (micro average).
* A **suggestion is caught** when the worker has a span that matches it (same category,
  overlapping; same sentence for sentence-scope categories). Recall = caught / suggestions.

Tokens and sentences are found by regular expressions only (deterministic, no model):

* tokens: ``\\w+(?:['’]\\w+)*`` (a word, with inner apostrophes: "don't", "Leonato's") or
  any single other non-space character (punctuation), see :data:`TOKEN_PATTERN`;
* sentences: a sentence ends after ``.``, ``!``, ``?`` or ``…`` (plus closing quotes or
  brackets) when whitespace and then a capital letter, digit or opening quote follow, or
  at a line break; a ``.`` after a common abbreviation ("Mr.", "Dr.", "e.g.") or a single
  letter (an initial: "J.") does not end one. Sentences are stripped of surrounding space.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any

from app.documents.segmenting import sentence_spans

TOKEN_PATTERN = re.compile(r"\w+(?:['\u2019]\w+)*|[^\w\s]")
TextKey = tuple[str, int]
"""A segment's key: (document id, segment index)."""


@dataclass(frozen=True)
class Span:
    """One marked stretch of a segment.

    ``source`` says whose span it is: a worker id for workers' annotations, ``"gold"`` for
    reference errors, a detector name for suggestions. ``start``/``end`` may be ``None``
    for gold spans known by their text only (see :func:`locate_spans`). ``ref`` optionally
    carries a database id (annotation, gold error or suggestion) back to the caller.
    """

    document: str
    segment: int
    start: int | None
    end: int | None
    category: str
    source: str = ""
    text: str = ""
    ref: int | None = None

    @property
    def key(self) -> TextKey:
        return (self.document, self.segment)

    @property
    def located(self) -> bool:
        """Has offsets and covers at least one character."""
        return self.start is not None and self.end is not None and self.start < self.end


def span_to_dict(span: Span) -> dict[str, Any]:
    """A JSON-ready dict of a span (keys: the dataclass fields)."""
    return asdict(span)


# --- text units ------------------------------------------------------------------------


@lru_cache(maxsize=8192)
def token_bounds(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each token of ``text`` (see :data:`TOKEN_PATTERN`)."""
    return tuple(m.span() for m in TOKEN_PATTERN.finditer(text))


def sentence_bounds(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each sentence of ``text`` (the splitter of :mod:`app.documents.segmenting`)."""
    return sentence_spans(text)


def sentence_ids(text: str, start: int, end: int) -> frozenset[int]:
    """Indices of the sentences of ``text`` that the range [start, end) overlaps."""
    return frozenset(i for i, (s, e) in enumerate(sentence_bounds(text)) if start < e and s < end)


def widen_to_sentences(text: str, start: int, end: int) -> tuple[int, int]:
    """The smallest range of whole sentences covering [start, end) (unchanged if none)."""
    touched = [(s, e) for s, e in sentence_bounds(text) if start < e and s < end]
    if not touched:
        return start, end
    return min(start, touched[0][0]), max(end, touched[-1][1])


# --- locating text-only spans ----------------------------------------------------------


def locate(text: str, needle: str, start: int = 0) -> tuple[int, int] | None:
    """Offsets of the first occurrence of ``needle`` in ``text`` at or after ``start``.

    Tries an exact match first, then a case-insensitive one in which any run of whitespace
    in ``needle`` matches any run of whitespace in ``text``. ``None`` if absent.
    """
    needle = needle.strip()
    if not needle:
        return None
    found = text.find(needle, start)
    if found >= 0:
        return found, found + len(needle)
    pattern = r"\s+".join(re.escape(part) for part in needle.split())
    match = re.compile(pattern, re.IGNORECASE).search(text, start)
    if match:
        return match.span()
    return None


def locate_spans(spans: Iterable[Span], texts: Mapping[TextKey, str]) -> list[Span]:
    """Fill in missing offsets from each span's text (first occurrence in its segment).

    Spans that already have offsets, or whose text cannot be found, are returned as they
    are (an unlocated span matches nothing, so it still counts against recall).
    """
    out = []
    for span in spans:
        if (span.start is None or span.end is None) and span.key in texts:
            found = locate(texts[span.key], span.text)
            if found:
                span = replace(span, start=found[0], end=found[1])
        out.append(span)
    return out


# --- matching --------------------------------------------------------------------------


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
) -> bool:
    """Same category and overlapping; for sentence-scope categories, a shared sentence.

    The sentence rule needs the segment's text in ``texts``; without it, plain overlap.
    """
    if a.category != b.category or a.key != b.key or not (a.located and b.located):
        return False
    scope = (scopes or {}).get(a.category, "span")
    if scope == "sentence" and texts is not None and a.key in texts:
        text = texts[a.key]
        return bool(sentence_ids(text, a.start, a.end) & sentence_ids(text, b.start, b.end))  # type: ignore[arg-type]
    return overlaps(a, b)


def _matched_flags(
    left: Sequence[Span],
    right: Sequence[Span],
    texts: Mapping[TextKey, str] | None,
    scopes: Mapping[str, str] | None,
) -> list[bool]:
    """For each span of ``left``, whether some span of ``right`` matches it."""
    by_place: dict[tuple[str, int, str], list[Span]] = defaultdict(list)
    for span in right:
        by_place[(span.document, span.segment, span.category)].append(span)
    return [
        any(
            matches(span, other, texts=texts, scopes=scopes)
            for other in by_place.get((span.document, span.segment, span.category), ())
        )
        for span in left
    ]


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
    located in ``texts`` first. Returns ``{"per_category": {cat: entry}, "overall": entry}``
    where an entry has ``predicted``, ``gold``, ``matched_predicted``, ``matched_gold``
    (counts), ``precision`` (None without predictions), ``recall`` (None without gold) and
    ``f1`` (undefined P or R count as 0; None when both counts are 0). ``categories`` lists
    the categories to report (default: every category seen, sorted).
    """
    predicted = list(predicted)
    gold = locate_spans(gold, texts) if texts is not None else list(gold)
    pred_flags = _matched_flags(predicted, gold, texts, scopes)
    gold_flags = _matched_flags(gold, predicted, texts, scopes)
    if categories is None:
        categories = sorted({s.category for s in predicted} | {s.category for s in gold})
    per_category: dict[str, dict[str, Any]] = {}
    for cat in categories:
        mp = sum(f for s, f in zip(predicted, pred_flags, strict=True) if s.category == cat)
        np_ = sum(1 for s in predicted if s.category == cat)
        mg = sum(f for s, f in zip(gold, gold_flags, strict=True) if s.category == cat)
        ng = sum(1 for s in gold if s.category == cat)
        per_category[cat] = _prf_entry(mp, np_, mg, ng)
    overall = _prf_entry(sum(pred_flags), len(predicted), sum(gold_flags), len(gold))
    return {"per_category": per_category, "overall": overall}


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

    A suggestion is caught when a worker span matches it (:func:`matches`). Pass the
    suggestions of the documents the worker did; suggestions at the same place (document,
    segment, start, end, category), e.g. from repeated detector runs, count once (the
    first one given is kept). Returns a JSON-ready dict::

        {"recall": float | None, "caught": int, "total": int,
         "per_category": {cat: {"recall", "caught", "total"}},
         "missed": [span_to_dict(suggestion), ...]}   # in the order given

    ``recall`` is None when there were no suggestions.
    """
    suggestions = _distinct(suggestions)
    flags = _matched_flags(suggestions, list(worker_spans), texts, scopes)
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
