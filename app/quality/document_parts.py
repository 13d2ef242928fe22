"""One document's part of the slow figures, from its units alone (no database): its state's
digest, its γ and unitizing α, and the observed disorder of its alignment for each study
figure and each pair of its workers (docs/METRICS.md, "Unitized agreement"). Cached per
document by :mod:`app.quality.document_figures`, which sums the parts into the study's
figures."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from app.quality import corpus_gamma
from app.quality.unitizing import MAX_ANNOTATORS, MAX_UNITS, Unit, gamma, unitizing_alpha
from app.rules.scoring import Span, TextKey


def document_digests(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
) -> dict[str, bytes]:
    """Each document's SHA-256 over what the figures read of it: its texts, its workers and
    their marks, sorted (the order of the rows does not change it)."""
    parts: dict[str, Any] = defaultdict(lambda: [[], [], []])
    for key in texts:
        parts[key[0]][0].append([*key, texts[key]])
    for worker, docs in annotated.items():
        for doc in set(docs):
            parts[doc][1].append(worker)
    for span in spans:
        parts[span.document][2].append(
            (span.document, span.segment, span.start or 0, span.end or 0)
            + (span.category, span.source)
        )
    return {
        doc: hashlib.sha256(
            json.dumps([doc, sorted(found), sorted(workers), sorted(marks)]).encode()
        ).digest()
        for doc, (found, workers, marks) in parts.items()
    }


def slots_of(workers_per_document: Iterable[int]) -> int:
    """``m``: the most common number of workers of the documents with two or more (ties: the
    larger); 0 without such a document."""
    counts: dict[int, int] = defaultdict(int)
    for n in workers_per_document:
        if n >= 2:
            counts[n] += 1
    return max(counts, key=lambda n: (counts[n], n)) if counts else 0


def wanted_figures(
    categories: Sequence[str], groups: Mapping[str, Sequence[str]]
) -> dict[str, set[str]]:
    """The study's figures by name (``all``, ``group:G``, ``category:C``): their categories."""
    wanted = {"all": set(categories)} | {f"group:{g}": set(c) for g, c in groups.items()}
    return wanted | {f"category:{c}": {c} for c in categories}


def _slotted(units: Sequence[Unit], workers: Sequence[str], m: int) -> list[Unit]:
    names = dict(zip(workers[:m], (f"slot {i + 1}" for i in range(m)), strict=False))
    return [
        Unit(names[u.annotator], u.start, u.end, u.category) for u in units if u.annotator in names
    ]


def document_parts(
    units: Sequence[Unit],
    workers: Sequence[str],
    length: int,
    m: int,
    figures: Mapping[str, set[str]],
    *,
    with_gamma: bool = True,
) -> dict[str, Any]:
    """One document's part (``workers`` sorted, at least two): ``gamma`` (its γ, None when
    undefined or left out for its size, ``gamma_skipped`` then true), ``unitized_alpha``
    (its uα), ``figures`` (each study
    figure's observed part over its first ``m`` workers, when it enters: ``m`` ≥ 2 and as
    many workers) and ``pairs`` (``[a, b, part]`` for each two of its workers, all
    categories); a part None is left out for its size, or (``with_gamma`` false) for γ's
    time budget being nil."""
    every = figures["all"]
    chosen = [u for u in units if u.category in every]
    too_big = len(workers) > MAX_ANNOTATORS or len(chosen) > MAX_UNITS or not with_gamma
    parts: dict[str, Any] = {
        "gamma": None if too_big or not chosen else gamma(chosen, workers),
        "gamma_skipped": bool(too_big and chosen),
        "unitized_alpha": unitizing_alpha(chosen, workers, length),
        "figures": {},
        "pairs": [],
    }
    if 2 <= m <= len(workers):
        slots = [f"slot {i + 1}" for i in range(m)]
        slotted = _slotted(units, workers, m)
        for name, cats in figures.items():
            mine = [u for u in slotted if u.category in cats]
            part = corpus_gamma.alignment_part(mine, slots) if with_gamma else None
            parts["figures"][name] = part
    for a, b in combinations(workers, 2):
        mine = [u for u in chosen if u.annotator in (a, b)]
        part = corpus_gamma.alignment_part(mine, [a, b]) if with_gamma else None
        parts["pairs"].append([a, b, part])
    return parts
