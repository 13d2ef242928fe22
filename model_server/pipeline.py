"""Run a detector over a whole document and return segment-level suggestion rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from model_server.interface import DetectionInput, Detector, to_categories
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def document_inputs(segments: list[str]) -> list[tuple[int, int, DetectionInput]]:
    """(segment, sentence start, input) for every sentence; context = all earlier text."""
    items: list[tuple[int, int, DetectionInput]] = []
    earlier: list[str] = []
    for seg_index, (text, spans) in enumerate(
        zip(segments, split_many(list(segments)), strict=True)
    ):
        for k, (start, end) in enumerate(spans):
            sentence = text[start:end]
            items.append((seg_index, start, DetectionInput(" ".join(earlier), sentence, k == 0)))
            earlier.append(sentence)
    return items


def detect_document(
    segments: list[str], detector: Detector, taxonomy: dict[str, Any]
) -> list[SuggestionRow]:
    """Split each segment into sentences, detect, map to the taxonomy's categories and
    return rows ordered by (segment, start, category)."""
    items = document_inputs(segments)
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
