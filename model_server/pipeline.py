"""Run a detector over a whole document and return segment-level suggestion rows."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from model_server.clusters import Cluster, document_evidence, sentence_evidence
from model_server.interface import DetectionInput, DetectionStats, Detector, to_categories
from model_server.text import split_many


@dataclass(frozen=True)
class SuggestionRow:
    """One suggestion with code-point offsets into its segment's text (end exclusive)."""

    segment: int
    start: int
    end: int
    text: str
    category: str
    score: float
    detector: str
    detector_version: str
    reason: str = ""
    paired_segment: int | None = None
    paired_start: int | None = None
    paired_end: int | None = None
    paired_text: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def document_inputs(
    segments: list[str], clusters: Sequence[Cluster] | None = None
) -> list[tuple[int, int, DetectionInput]]:
    """(segment, sentence start, input) for every sentence; context = all earlier text;
    with the document's entity ``clusters``, each input's ``people`` (its person mentions
    and their whole-document evidence)."""
    evidence = document_evidence(segments, clusters) if clusters is not None else None
    items: list[tuple[int, int, DetectionInput]] = []
    earlier: list[str] = []
    for seg_index, (text, spans) in enumerate(
        zip(segments, split_many(list(segments)), strict=True)
    ):
        for k, (start, end) in enumerate(spans):
            sentence = text[start:end]
            people = None
            if evidence is not None:
                people = sentence_evidence(evidence, seg_index, start, end)
            items.append(
                (seg_index, start, DetectionInput(" ".join(earlier), sentence, k == 0, people))
            )
            earlier.append(sentence)
    return items


def detect_document_with_stats(
    segments: list[str],
    detector: Detector,
    taxonomy: dict[str, Any],
    clusters: Sequence[Cluster] | None = None,
) -> tuple[list[SuggestionRow], DetectionStats]:
    """The document's suggestion rows and what they cost. A backend that reads the taxonomy
    itself (the LLM's ``detect_segments``) gets the segments whole; the others go through
    :func:`detect_document`."""
    segment_detector = getattr(detector, "detect_segments", None)
    if segment_detector is not None:
        return segment_detector(segments, taxonomy)
    started = time.perf_counter()
    rows = detect_document(segments, detector, taxonomy, clusters)
    return rows, DetectionStats(seconds=time.perf_counter() - started, suggestions=len(rows))


def detect_document(
    segments: list[str],
    detector: Detector,
    taxonomy: dict[str, Any],
    clusters: Sequence[Cluster] | None = None,
) -> list[SuggestionRow]:
    """Split each segment into sentences, detect, map to the taxonomy's categories and
    return rows ordered by (segment, start, category). ``clusters``: the document's entity
    clusters from the import (the stored Entity / EntityMention rows as
    :class:`~model_server.clusters.Cluster` values), read by MiniLM's CharE heads; without
    them MiniLM uses its heads that do not read clusters."""
    if getattr(detector, "detect_segments", None) is not None:
        return detect_document_with_stats(segments, detector, taxonomy)[0]
    items = document_inputs(segments, clusters)
    if not items:
        return []
    raw = detector.detect([inp for _, _, inp in items])
    rows: list[SuggestionRow] = []
    for (seg_index, offset, inp), found in zip(items, raw, strict=True):
        for sug in to_categories(found, inp.sentence, taxonomy):
            start, end = offset + sug.start, offset + sug.end
            text = segments[seg_index][start:end]
            rows.append(
                SuggestionRow(
                    seg_index,
                    start,
                    end,
                    text,
                    sug.category,
                    round(float(sug.score), 4),
                    sug.detector,
                    sug.version,
                )
            )
    rows.sort(key=lambda r: (r.segment, r.start, r.category))
    return rows
