"""The BooookScore of each summary (Chang et al., ICLR 2024) from the counted work, and the
count of each attribute value (docs/METRICS.md, "BooookScore" and "Attributes").

A document's sentences are those of the one splitter (:mod:`app.documents.segmenting`),
segment by segment. A sentence is **confusing** for a worker when one of the worker's
counted marks, or a mark's other span (paired or related), overlaps it by at least one
character. A worker's score on a document is the share of its sentences that are not
confusing (the paper's definition: 1 - confusing sentences / sentences); the document's
figure is the mean over the workers who submitted it (a submission with no mark scores
1.0), or over the adjudicated layer's one worker; a source's (or system's) figure and the
overall figure are means over documents with a figure. Reading marks from a layer is ours;
the paper scores one annotator (or GPT-4) per summary.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from typing import Any

from sqlalchemy.orm import Session

from app.documents.segmenting import sentence_spans
from app.models import Document, Study
from app.quality.work import Work, columns, select_documents, select_segments, select_work, stream

SPAN_COLUMNS = (
    "document_id",
    "worker_id",
    "segment",
    "start",
    "end",
    "paired_segment",
    "paired_start",
    "paired_end",
    "paired_end_segment",
    "id",
)
Sentences = list[tuple[tuple[int, int], ...]]  # per segment, (start, end) of each sentence


def _touched(sentences: Sentences, segment: int, start: int, end: int) -> set[tuple[int, int]]:
    """(segment, sentence index) of every sentence that [start, end) in ``segment`` overlaps."""
    spans = sentences[segment]
    first = bisect_right([e for _, e in spans], start)
    last = bisect_left([s for s, _ in spans], end)
    return {(segment, i) for i in range(first, last)}


def _confusing(sentences: Sentences, row: Any) -> set[tuple[int, int]]:
    hit = _touched(sentences, row.segment, row.start, row.end)
    if row.paired_segment is not None:
        to = row.paired_end_segment if row.paired_end_segment is not None else row.paired_segment
        if to == row.paired_segment:
            hit |= _touched(sentences, to, row.paired_start, row.paired_end)
        else:  # across segment breaks: the rest of the first, those between, the last's start
            hit |= _touched(sentences, row.paired_segment, row.paired_start, 1 << 62)
            for segment in range(row.paired_segment + 1, to):
                hit |= _touched(sentences, segment, 0, 1 << 62)
            hit |= _touched(sentences, to, 0, row.paired_end)
    return hit


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def booookscore(session: Session, study: Study, work: Work) -> dict[str, Any]:
    """``per_document``: [{``document``, ``source``, ``sentences``, ``workers``: {worker:
    {``confusing``, ``score``}}, ``score``}] in document order; ``per_source``: {source:
    {``documents``, ``score``}}; ``score``: the mean over documents (None without any)."""
    sentences: dict[int, Sentences] = defaultdict(list)
    for document_id, text in stream(session, select_segments(study, work)):
        sentences[document_id].append(sentence_spans(text))
    sql = columns(study, work)
    hits: dict[int, dict[str, set[tuple[int, int]]]] = defaultdict(dict)
    for row in stream(session, select_work(study, work, *(sql[n].label(n) for n in SPAN_COLUMNS))):
        confusing = hits[row.document_id].setdefault(row.worker_id, set())
        if row.id is not None:  # an empty row: submitted with no mark
            confusing |= _confusing(sentences[row.document_id], row)
    per_document, by_source = [], defaultdict(list)
    documents = select_documents(study, work, Document.id, Document.external_id, Document.source)
    for document_id, external_id, source in session.execute(documents):
        total = sum(len(s) for s in sentences[document_id])
        workers = {
            worker: {
                "confusing": len(hit),
                "score": 1 - len(hit) / total if total else None,
            }
            for worker, hit in hits.get(document_id, {}).items()
        }
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
