"""Systems compared: errors per 100 words, per sentence and the clean-sentence share of each
document source, with bootstrap intervals, and every pair's difference with a permutation
test (``marginalia compare``, the Compare page; docs/METRICS.md, "Comparing systems").

* A document's **system** is its ``source`` (set at import: ``--source``, a file's column, or
  the id's prefix; docs/FORMATS.md).
* The **documents** compared are those that count (:mod:`app.rules.work`: practice left
  out) and that the layer covers: on the workers' layer those with at least ``K`` submitted
  assignments (fewer could never reach ``K`` votes, so they would only dilute the figures),
  and those imported by vote rank at every ``K`` (a clean document is evidence too:
  :mod:`app.quality.vote_ranks`); on the adjudicated layer those whose review is done.
* An **error** on the workers' layer is a candidate error (:mod:`app.quality.candidates`)
  with at least ``K`` votes, placed at its proposal; on the adjudicated layer an accepted row.
* Per document: words and sentences (:mod:`app.quality.sentences`), errors per category,
  clean sentences; the figures and statistics are :mod:`app.quality.compare_stats`'.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from sqlalchemy.orm import Session

from app.errors import InvalidInput
from app.models import Document, Study
from app.quality import compare_stats
from app.quality.candidates import PAIRED_FIELDS, group_candidates, study_marks
from app.quality.sentences import category_kinds, error_places, sentence_counts, word_count
from app.quality.vote_ranks import vote_rank_workers
from app.rules.scoring import Span, TextKey, scopes_from_taxonomy
from app.rules.work import (
    ADJUDICATED,
    WORKERS,
    Work,
    columns,
    select_documents,
    select_segments,
    select_work,
    stream,
)

BY = ("source",)
Errors = list[tuple[Span, list[Span]]]  # each error and its places (sentences.error_places)


@dataclass
class DocumentCounts:
    """What one document contributes to its system's figures."""

    document: str
    system: str
    words: int = 0
    sentences: int = 0
    clean: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    by_votes: bool = False  # its workers are imported vote ranks: counted at every K


def default_min_workers(study: Study) -> int:
    """K when none is given: 2 where the study asks for two or more workers per document
    (an error one worker alone marked does not count), else 1."""
    return 2 if study.annotators_per_doc >= 2 else 1


def _errors_workers(
    session: Session,
    study: Study,
    work: Work,
    texts: Mapping[TextKey, str],
    names: Mapping[int, str],
    k: int,
    by_votes: Mapping[int, Any],
) -> dict[int, Errors]:
    """Per document id with at least k submitted workers, or imported by vote rank (a rank
    missing is one no error reached: clean at k, :mod:`app.quality.vote_ranks`), its errors
    with >= k votes, each at its proposal."""
    scopes = scopes_from_taxonomy(study.taxonomy or {})
    kinds = category_kinds(study.taxonomy)
    out: dict[int, Errors] = {}
    for doc_id, (workers, marks) in study_marks(session, study, work).items():
        if len(workers) < k and doc_id not in by_votes:
            continue
        name = names[doc_id]
        out[doc_id] = []
        for c in group_candidates(name, workers, marks, texts, scopes):
            if c.votes >= k:
                span = Span(name, c.segment, c.proposal.start, c.proposal.end, c.category)
                out[doc_id].append(
                    (span, error_places(span, c.proposal.paired, kinds.get(c.category)))
                )
    return out


def _errors_adjudicated(session: Session, study: Study, work: Work) -> dict[int, Errors]:
    """Per document id of a done review its accepted rows."""
    sql = columns(study, work)
    names = ("document_id", "document", "id", "segment", "start", "end", "category")
    kinds = category_kinds(study.taxonomy)
    out: dict[int, Errors] = {}
    query = select_work(study, work, *(sql[n] for n in (*names, *PAIRED_FIELDS)))
    for row in stream(session, query):
        errors = out.setdefault(row[0], [])
        if row[2] is not None:
            span = Span(row[1], row[3], row[4], row[5], row[6])
            errors.append((span, error_places(span, tuple(row[7:12]), kinds.get(row[6]))))
    return out


def document_counts(
    session: Session,
    study: Study,
    *,
    layer: str = WORKERS,
    min_workers: int | None = None,
    include_practice: bool = False,
) -> tuple[list[DocumentCounts], int]:
    """The documents compared, in document order, and how many of the documents that count
    were left out (workers' layer: fewer than K submitted workers; adjudicated: no done
    review)."""
    if layer == ADJUDICATED and min_workers is not None:
        raise InvalidInput("--min-workers applies to the workers' layer only")
    if min_workers is not None and min_workers < 1:
        raise InvalidInput("--min-workers must be at least 1")
    work = Work(layer=layer, include_practice=include_practice)
    documents = session.execute(
        select_documents(study, work, Document.id, Document.external_id, Document.source)
    ).all()
    names = {doc_id: name for doc_id, name, _ in documents}
    texts: dict[TextKey, str] = {}
    position: Counter[int] = Counter()
    for doc_id, text in stream(session, select_segments(study, work)):
        texts[(names[doc_id], position[doc_id])] = text
        position[doc_id] += 1
    by_votes: Mapping[int, Any] = {}
    if work.layer == WORKERS:  # also one LLM annotator's marks (layer llm:NAME)
        k = min_workers or default_min_workers(study)
        by_votes = vote_rank_workers(session, study, work)
        errors = _errors_workers(session, study, work, texts, names, k, by_votes)
    else:
        errors = _errors_adjudicated(session, study, work)
    out = []
    for doc_id, name, source in documents:
        found = errors.get(doc_id)
        if found is None:
            continue
        own = {(name, i): texts[(name, i)] for i in range(position[doc_id])}
        counted = sentence_counts(own, [place for _, places in found for place in places])
        out.append(
            DocumentCounts(
                name,
                source or "",
                sum(word_count(text) for text in own.values()),
                counted.sentences,
                counted.clean,
                Counter(span.category for span, _ in found),
                doc_id in by_votes,
            )
        )
    return out, len(documents) - len(out)


def compare_systems(
    session: Session,
    study: Study,
    *,
    by: str = "source",
    layer: str = WORKERS,
    min_workers: int | None = None,
    resamples: int = compare_stats.RESAMPLES,
    seed: int = compare_stats.SEED,
    include_practice: bool = False,
    category_pairs: bool = True,
) -> dict[str, Any]:
    """The comparison as ``marginalia compare --json`` gives it (docs/CONTRACT.md);
    ``category_pairs=False`` leaves out the pairs' per-category tests (the page shows none)."""
    if by not in BY:
        raise InvalidInput(f"unknown grouping {by!r} (use {' or '.join(BY)})")
    if not 1 <= resamples <= 1_000_000:
        raise InvalidInput("--resamples must be between 1 and 1,000,000")
    counts, left_out = document_counts(
        session, study, layer=layer, min_workers=min_workers, include_practice=include_practice
    )
    taxonomy = [c["id"] for c in (study.taxonomy or {}).get("categories", [])]
    seen = {cat for doc in counts for cat in doc.errors}
    categories = taxonomy + sorted(seen - set(taxonomy))
    by_system: dict[str, list[DocumentCounts]] = defaultdict(list)
    for doc in counts:
        by_system[doc.system].append(doc)
    options = {"resamples": resamples, "seed": seed}
    systems = [_system(name, docs, categories, options) for name, docs in sorted(by_system.items())]
    pairs = [
        _pair(a, b, by_system[a], by_system[b], categories if category_pairs else [], options)
        for a, b in combinations(sorted(by_system), 2)
    ]
    for figure in ("errors_per_100_words", "clean_sentence_share", *categories):
        if figure in categories and not category_pairs:
            continue
        family = [
            pair if figure == "errors_per_100_words" else _figure_of(pair, figure) for pair in pairs
        ]
        compare_stats.add_holm(family)
    return {
        "study": study.slug,
        "by": by,
        "layer": layer,
        "min_workers": (min_workers or default_min_workers(study)) if layer == WORKERS else None,
        "documents_left_out": left_out,
        "vote_rank_documents": sum(doc.by_votes for doc in counts),
        "resamples": resamples,
        "seed": seed,
        "confidence": compare_stats.CONFIDENCE,
        "interval": "percentile bootstrap over documents",
        "test": "two-sided permutation test over documents, Holm-adjusted across the pairs",
        "categories": categories,
        "systems": systems,
        "pairs": pairs,
    }


def _figure_of(pair: dict[str, Any], figure: str) -> dict[str, Any]:
    return pair[figure] if figure == "clean_sentence_share" else pair["per_category"][figure]


def _columns(docs: list[DocumentCounts], category: str | None) -> list[int]:
    return [sum(d.errors.values()) if category is None else d.errors[category] for d in docs]


def _system(
    name: str, docs: list[DocumentCounts], categories: list[str], options: dict[str, int]
) -> dict[str, Any]:
    words = [d.words for d in docs]
    sentences = [d.sentences for d in docs]
    errors = _columns(docs, None)
    per_category = {
        cat: {
            "errors": sum(_columns(docs, cat)),
            "errors_per_100_words": compare_stats.interval(
                _columns(docs, cat), words, 100, **options
            ),
            "errors_per_sentence": compare_stats.interval(
                _columns(docs, cat), sentences, **options
            ),
        }
        for cat in categories
    }
    return {
        "system": name,
        "documents": len(docs),
        "sentences": sum(sentences),
        "words": sum(words),
        "errors": sum(errors),
        "errors_per_100_words": compare_stats.interval(errors, words, 100, **options),
        "errors_per_sentence": compare_stats.interval(errors, sentences, **options),
        "clean_sentence_share": compare_stats.interval(
            [d.clean for d in docs], sentences, **options
        ),
        "per_category": per_category,
    }


def _pair(
    a: str,
    b: str,
    docs_a: list[DocumentCounts],
    docs_b: list[DocumentCounts],
    categories: list[str],
    options: dict[str, int],
) -> dict[str, Any]:
    def words(docs):
        return [d.words for d in docs]

    def diff(category: str | None) -> dict[str, Any]:
        return compare_stats.difference(
            (_columns(docs_a, category), words(docs_a)),
            (_columns(docs_b, category), words(docs_b)),
            100,
            **options,
        )

    clean = compare_stats.difference(
        ([d.clean for d in docs_a], [d.sentences for d in docs_a]),
        ([d.clean for d in docs_b], [d.sentences for d in docs_b]),
        **options,
    )
    return {
        "a": a,
        "b": b,
        **diff(None),
        "clean_sentence_share": clean,
        "per_category": {cat: diff(cat) for cat in categories},
    }
