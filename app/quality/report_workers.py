"""The report's worker rows, summed a batch of documents at a time, in memory that does
not grow with the study.

:class:`WorkerTally` takes the counted work batch by batch (:mod:`app.quality.report_stream`)
and keeps per worker only sums: annotations, words of the documents done, the consensus
counts (:func:`app.quality.worker_quality.consensus`), each document's suggestion and
confident recall (merged by :func:`app.rules.scoring.merge_suggestion_recall` and
:func:`app.quality.confident.merge_confident_recall`), and their spans on gold documents
(few: scored at the end by :func:`app.rules.scoring.precision_recall_f1`). Every figure is
the one the functions give over the whole study at once: none of them pairs spans of two
documents.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from app.quality.confident import confident_recall, merge_confident_recall
from app.quality.report_stream import CountedDocument
from app.quality.sentences import word_count
from app.quality.worker_quality import consensus, marks_rate, set_quality
from app.rules.scoring import (
    Span,
    TextKey,
    merge_suggestion_recall,
    precision_recall_f1,
    suggestion_recall,
)
from app.rules.work import in_hand, is_counted

CONSENSUS_KEYS = ("confirmed", "marks", "caught", "agreed")


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    if (start.tzinfo is None) != (end.tzinfo is None):  # SQLite drops the zone
        start, end = start.replace(tzinfo=None), end.replace(tzinfo=None)
    return (end - start).total_seconds()


def suggestion_span(document: str, row: Any) -> Span:
    """A stored suggestion (a row of ``report_stream.SUGGESTION_COLUMNS``) as a Span."""
    return Span(
        document,
        row.segment,
        row.start,
        row.end,
        row.category,
        row.detector,
        row.text,
        row.id,
        row.score,
    )


class WorkerTally:
    """Per worker sums over the batches of counted documents (module docstring)."""

    def __init__(
        self,
        *,
        categories: Sequence[str],
        scopes: Mapping[str, str],
        thresholds: Mapping[str, Mapping[str, Any]],
        version: str | None,
        gold_docs: set[str],
    ) -> None:
        self.categories, self.scopes = list(categories), scopes
        self.thresholds, self.version, self.gold_docs = thresholds, version, gold_docs
        self.marks: Counter[str] = Counter()
        self.words: Counter[str] = Counter()
        self.agreed: dict[str, Counter[str]] = defaultdict(Counter)
        self.recall: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.confident: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.on_gold: dict[str, list[tuple[int, str, list[Span]]]] = defaultdict(list)

    def add(
        self,
        documents: Sequence[CountedDocument],
        submitted: Mapping[int, Sequence[Any]],
    ) -> tuple[dict[str, list[Span]], dict[str, set[str]], dict[TextKey, str]]:
        """Add a batch; returns its spans by worker, documents by worker and texts (what the
        agreement figures take of the same batch). ``submitted``: document id -> its
        submitted assignments (rows with ``id`` and ``worker_id``), in id order."""
        texts = {(d.external_id, i): text for d in documents for i, text in enumerate(d.segments)}
        worker_spans: dict[str, list[Span]] = {}
        order: dict[str, list[str]] = {}
        done: dict[str, set[str]] = defaultdict(set)
        for doc in documents:
            name = doc.external_id
            by_assignment: dict[int, list[Span]] = defaultdict(list)
            for row in doc.marks:
                by_assignment[row.assignment_id].append(
                    Span(
                        name,
                        row.segment,
                        row.start,
                        row.end,
                        row.category,
                        row.worker_id,
                        row.text,
                        row.id,
                    )
                )
            suggestions = [suggestion_span(name, row) for row in doc.suggestions]
            calibrated = [
                s
                for s, row in zip(suggestions, doc.suggestions, strict=True)
                if row.detector_version == self.version
            ]
            words = sum(word_count(text) for text in doc.segments)
            mine: dict[str, tuple[int, list[Span]]] = {}
            for assignment in submitted.get(doc.id, ()):
                spans = by_assignment.get(assignment.id, [])
                worker = assignment.worker_id
                worker_spans.setdefault(worker, []).extend(spans)
                self.marks[worker] += len(spans)
                if worker not in mine:
                    mine[worker] = (assignment.id, [])
                    self.words[worker] += words
                mine[worker][1].extend(spans)
            order[name] = list(mine)
            for worker, (first, spans) in mine.items():
                done[worker].add(name)
                if suggestions:
                    found = suggestion_recall(
                        spans,
                        suggestions,
                        texts=texts,
                        scopes=self.scopes,
                        categories=self.categories,
                    )
                    self.recall[worker].append((first, found))
                if calibrated:
                    found = confident_recall(
                        spans, calibrated, self.thresholds, texts=texts, scopes=self.scopes
                    )
                    self.confident[worker].append((first, found))
                if name in self.gold_docs:
                    self.on_gold[worker].append((first, name, spans))
        for worker, counts in consensus(worker_spans, order, texts, self.scopes).items():
            self.agreed[worker].update(counts)
        return worker_spans, dict(done), texts

    def rows(
        self,
        assignments: Sequence[Any],
        segment_counts: Mapping[int, int],
        external: Mapping[int, str],
        states: Mapping[str, str],
        gold: Mapping[str, list[Span]],
        gold_texts: Mapping[TextKey, str],
    ) -> list[dict[str, Any]]:
        """The report's ``workers`` rows (every worker of ``assignments``), with ``quality``."""
        by_worker: dict[str, list[Any]] = defaultdict(list)
        for a in assignments:
            by_worker[a.worker_id].append(a)
        rows, rates = [], {}
        for worker_id in sorted(by_worker):
            done = [a for a in by_worker[worker_id] if is_counted(a.status)]
            rates_of = []
            for a in done:
                seconds = _seconds(a.created_at, a.submitted_at)
                if seconds is not None and segment_counts.get(a.document_id):
                    rates_of.append(seconds / segment_counts[a.document_id])
            rows.append(
                {
                    "worker_id": worker_id,
                    "documents_done": len(done),
                    "documents_active": sum(1 for a in by_worker[worker_id] if in_hand(a.status)),
                    "annotations": self.marks[worker_id],
                    "segments": sum(segment_counts.get(a.document_id, 0) for a in done),
                    "seconds_per_segment": statistics.median(rates_of) if rates_of else None,
                    "conditions": sorted(
                        {a.condition for a in by_worker[worker_id] if a.condition}
                    ),
                    "suggestion_recall": merge_suggestion_recall(
                        [part for _, part in sorted(self.recall[worker_id], key=_first)],
                        self.categories,
                    ),
                    "confident_recall": merge_confident_recall(
                        [part for _, part in sorted(self.confident[worker_id], key=_first)],
                        self.thresholds,
                    ),
                    "gold": self._gold(worker_id, gold, gold_texts),
                    "state": states[worker_id],
                }
            )
            rates[worker_id] = marks_rate(self.marks[worker_id], self.words[worker_id])
        agreed = {w: {k: c[k] for k in CONSENSUS_KEYS} for w, c in self.agreed.items()}
        set_quality(rows, agreed, rates)
        return rows

    def _gold(
        self, worker: str, gold: Mapping[str, list[Span]], texts: Mapping[TextKey, str]
    ) -> dict[str, Any] | None:
        """Strict, lenient and sentence-level P/R/F1 on the gold documents done (None
        without any)."""
        parts = sorted(self.on_gold.get(worker, []), key=_first)
        if not parts:
            return None
        documents = sorted({name for _, name, _ in parts})
        scored = precision_recall_f1(
            [span for _, _, spans in parts for span in spans],
            [g for doc in documents for g in gold.get(doc, [])],
            texts=texts,
            scopes=self.scopes,
            categories=self.categories,
        )
        return {"documents": len(documents), **scored}


def _first(item: tuple[Any, ...]) -> int:
    return item[0]
