"""One-to-one span matching under the strict and lenient rules, and the sentence projection.

Spans are :class:`app.rules.scoring.Span`; offsets are code points into one segment, end
exclusive. Definitions (``docs/METRICS.md`` has the same words and worked examples):

* **tokens** of a segment are the matches of :data:`app.rules.spans.TOKEN_PATTERN` (a word
  with inner apostrophes, or one punctuation character); a span *covers* a token when their
  ranges intersect. **Token IoU** of two spans = |tokens covered by both| / |tokens covered
  by either|.
* **sentences** come from :mod:`app.documents.segmenting`; **sentence IoU** is the same
  ratio over the sentences two spans touch.
* a pair is **eligible** when both spans are located, in the same document and segment,
  with the same category, and
  - under the **strict** rule: token IoU ≥ 0.5 (sentence IoU ≥ 0.5 for a category whose
    taxonomy scope is ``sentence``, SNaC's SceneE);
  - under the **lenient** rule: the ranges intersect (a shared sentence for
    sentence-scope categories).
* the **matching** is a maximum one-to-one matching of eligible pairs (augmenting paths,
  Kuhn's algorithm, per document, segment and category): a worker span matches at most one
  gold span and a gold span at most one worker span, and no other one-to-one choice matches
  more pairs. So one whole-segment span can match at most one gold error.
* **sentence level** (set beside SNaC's sentence-level Tables 6/11): for category c, a
  sentence is *gold-positive* when a gold span of c starts in it, *predicted* when a worker
  span of c starts in it; P = predicted ∧ gold-positive / predicted, R = that /
  gold-positive. That a span belongs to the sentence where it starts is our rule, not the
  paper's (docs/METRICS.md, "Units").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from app.rules.spans import Span, TextKey, sentence_bounds, token_bounds

RULES = ("strict", "lenient")
MIN_IOU = 0.5


def _covered(bounds: Sequence[tuple[int, int]], start: int, end: int) -> frozenset[int]:
    return frozenset(i for i, (s, e) in enumerate(bounds) if start < e and s < end)


def iou(a: frozenset[int], b: frozenset[int]) -> float:
    """|a ∩ b| / |a ∪ b| (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@lru_cache(maxsize=65536)
def _covered_units(text: str, start: int, end: int, sentences: bool) -> frozenset[int]:
    """The tokens (or sentences) of ``text`` that [start, end) covers, remembered: candidate
    building and matching ask for the same span many times."""
    bounds = sentence_bounds(text) if sentences else token_bounds(text)
    return _covered(bounds, start, end)


def token_iou(text: str, a: Span, b: Span) -> float:
    """Token IoU of two located spans of the segment ``text``."""
    return iou(
        _covered_units(text, a.start, a.end, False),  # type: ignore[arg-type]
        _covered_units(text, b.start, b.end, False),  # type: ignore[arg-type]
    )


def sentence_iou(text: str, a: Span, b: Span) -> float:
    """Sentence IoU of two located spans of the segment ``text``."""
    return iou(
        _covered_units(text, a.start, a.end, True),  # type: ignore[arg-type]
        _covered_units(text, b.start, b.end, True),  # type: ignore[arg-type]
    )


def eligible(
    a: Span,
    b: Span,
    rule: str,
    *,
    texts: Mapping[TextKey, str] | None,
    scopes: Mapping[str, str] | None,
) -> bool:
    """Whether ``a`` and ``b`` may be matched under ``rule`` ("strict" or "lenient")."""
    if a.category != b.category or a.key != b.key or not (a.located and b.located):
        return False
    text = texts.get(a.key) if texts is not None else None
    sentence_scope = (scopes or {}).get(a.category) == "sentence" and text is not None
    if rule == "lenient":
        if sentence_scope:
            return sentence_iou(text, a, b) > 0  # type: ignore[arg-type]
        return a.start < b.end and b.start < a.end  # type: ignore[operator]
    if text is None:  # no text to tokenise: character IoU
        inter = min(a.end, b.end) - max(a.start, b.start)  # type: ignore[type-var,operator]
        return inter / (max(a.end, b.end) - min(a.start, b.start)) >= MIN_IOU  # type: ignore[type-var,operator]
    measure = sentence_iou if sentence_scope else token_iou
    return measure(text, a, b) >= MIN_IOU  # type: ignore[arg-type]


def _kuhn(edges: list[list[int]], n_right: int) -> dict[int, int]:
    """Maximum bipartite matching: left index -> right index (augmenting paths)."""
    owner: list[int | None] = [None] * n_right

    def augment(left: int, seen: set[int]) -> bool:
        for right in edges[left]:
            if right in seen:
                continue
            seen.add(right)
            current = owner[right]
            if current is None or augment(current, seen):
                owner[right] = left
                return True
        return False

    for left in range(len(edges)):
        augment(left, set())
    return {left: right for right, left in enumerate(owner) if left is not None}


def maximum_matching(edges: list[list[int]], n_right: int) -> dict[int, int]:
    """A maximum one-to-one matching of a bipartite graph given as each left node's
    eligible right nodes: left index -> right index (Kuhn's augmenting paths)."""
    return _kuhn(edges, n_right)


def match(
    predicted: Sequence[Span],
    gold: Sequence[Span],
    rule: str,
    *,
    texts: Mapping[TextKey, str] | None = None,
    scopes: Mapping[str, str] | None = None,
) -> list[tuple[int, int]]:
    """A maximum one-to-one matching: (index in ``predicted``, index in ``gold``) pairs."""
    if rule not in RULES:
        raise ValueError(f"unknown matching rule {rule!r}")
    by_place: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    for j, span in enumerate(gold):
        by_place[(span.document, span.segment, span.category)].append(j)
    groups: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    for i, span in enumerate(predicted):
        groups[(span.document, span.segment, span.category)].append(i)
    pairs = []
    for place, lefts in groups.items():
        rights = by_place.get(place, [])
        if not rights:
            continue
        edges = [
            [
                k
                for k, j in enumerate(rights)
                if eligible(predicted[i], gold[j], rule, texts=texts, scopes=scopes)
            ]
            for i in lefts
        ]
        for left, right in _kuhn(edges, len(rights)).items():
            pairs.append((lefts[left], rights[right]))
    return sorted(pairs)


def sentence_labels(
    spans: Iterable[Span], texts: Mapping[TextKey, str]
) -> set[tuple[str, int, int, str]]:
    """(document, segment, sentence index, category) of the sentence each span starts in."""
    labels = set()
    for span in spans:
        if not span.located or span.key not in texts:
            continue
        for index, (start, end) in enumerate(sentence_bounds(texts[span.key])):
            if start <= span.start < end:  # type: ignore[operator]
                labels.add((span.document, span.segment, index, span.category))
                break
        else:  # starts in the space between sentences: the next sentence
            for index, (start, _) in enumerate(sentence_bounds(texts[span.key])):
                if span.start < start:  # type: ignore[operator]
                    labels.add((span.document, span.segment, index, span.category))
                    break
    return labels
