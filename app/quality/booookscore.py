"""The BooookScore of each summary (Chang et al., ICLR 2024) from the counted work, and the
count of each attribute value (docs/METRICS.md, "Clean sentences and BooookScore" and
"Multi-label marks and attributes").

A worker's score on a document is the clean-sentence share of its segments under the
worker's counted marks (:func:`app.quality.sentences.sentence_counts` over
:func:`app.quality.sentences.error_places`: the one computation, which the comparison of
systems calls too): 1 - confusing sentences / sentences, the paper's definition. The
document's figure is the mean over the workers who submitted it (a submission with no mark
scores 1.0), or the adjudicated layer's one worker; a source's (or system's) figure and the
overall figure are means over documents with a figure. Reading marks from a layer is ours;
the paper scores one annotator (or GPT-4) per summary.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from sqlalchemy.orm import Session

from app.models import Document, Study
from app.quality.candidates import PAIRED_FIELDS
from app.quality.sentences import category_kinds, error_places, sentence_counts
from app.rules.spans import Span, TextKey
from app.rules.work import Work, columns, select_documents, select_segments, select_work, stream

SPAN_COLUMNS = ("document_id", "worker_id", "id", "segment", "start", "end", "category")


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def booookscore(session: Session, study: Study, work: Work) -> dict[str, Any]:
    """``per_document``: [{``document``, ``source``, ``sentences``, ``workers``: {worker:
    {``confusing``, ``score``}}, ``score``}] in document order; ``per_source``: {source:
    {``documents``, ``score``}}; ``score``: the mean over documents (None without any)."""
    documents = session.execute(
        select_documents(study, work, Document.id, Document.external_id, Document.source)
    ).all()
    names = {document_id: name for document_id, name, _ in documents}
    texts: dict[int, dict[TextKey, str]] = defaultdict(dict)
    for document_id, text in stream(session, select_segments(study, work)):
        own = texts[document_id]
        own[(names[document_id], len(own))] = text
    kinds = category_kinds(study.taxonomy)
    sql = columns(study, work)
    places: dict[int, dict[str, list[Span]]] = defaultdict(dict)
    query = select_work(study, work, *(sql[n] for n in (*SPAN_COLUMNS, *PAIRED_FIELDS)))
    for row in stream(session, query):
        found = places[row[0]].setdefault(row[1], [])
        if row[2] is not None:  # else an empty row: submitted with no mark
            span = Span(names[row[0]], *row[3:7])
            found += error_places(span, tuple(row[7:12]), kinds.get(row[6]))
    per_document, by_source = [], defaultdict(list)
    for document_id, external_id, source in documents:
        total = sentence_counts(texts[document_id], ()).sentences
        workers = {}
        for worker, found in places.get(document_id, {}).items():
            counted = sentence_counts(texts[document_id], found)
            workers[worker] = {"confusing": total - counted.clean, "score": counted.share}
        score = _mean([w["score"] for w in workers.values() if w["score"] is not None])
        per_document.append(
            {
                "document": external_id,
                "source": source or "",
                "sentences": total,
                "workers": workers,
                "score": score,
            }
        )
        if score is not None:
            by_source[source or ""].append(score)
    return {
        "layer": work.layer,
        "per_document": per_document,
        "per_source": {
            src: {"documents": len(scores), "score": _mean(scores)}
            for src, scores in sorted(by_source.items())
        },
        "score": _mean([d["score"] for d in per_document if d["score"] is not None]),
    }


def attribute_counts(session: Session, study: Study, work: Work) -> dict[str, dict[str, int]]:
    """{attribute id: {value: marks}}: each counted mark once (a multi-label mark's rows share
    its attributes), values as text, ids and values in first-seen order."""
    sql = columns(study, work)
    query = select_work(study, work, sql["mark"], sql["attributes"], marks_only=True)
    seen: set[int] = set()
    counts: dict[str, Counter[str]] = {}
    for mark, attributes in stream(session, query):
        if mark in seen or not attributes:
            continue
        seen.add(mark)
        for key, value in attributes.items():
            counts.setdefault(key, Counter())[str(value)] += 1
    return {key: dict(values) for key, values in counts.items()}
