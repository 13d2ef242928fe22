"""The detector interface: (context, sentence) pairs in, raw suggestions out.

Every backend (rules, T5, MiniLM) implements :class:`Detector`. Raw suggestions carry the
detector's own label (``character``, ``event``, ``scene``, ``inconsistent``); a study's
taxonomy maps them to its categories through each category's ``detector_label``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable


class DetectionInput(NamedTuple):
    """One sentence to judge; ``opens_segment`` is True for a segment's first sentence.
    ``people``: the person mentions in the sentence with their whole-document evidence
    (:class:`model_server.clusters.MentionEvidence`, from the import's entity clusters), or
    None when the caller has no clusters."""

    context: str
    sentence: str
    opens_segment: bool = False
    people: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class RawSuggestion:
    """A suspected error in a sentence: detector label, offsets inside the sentence."""

    label: str
    start: int
    end: int
    score: float
    detector: str
    version: str


@runtime_checkable
class Detector(Protocol):
    """What every backend provides."""

    name: str
    version: str

    def detect(self, batch: Sequence[DetectionInput | tuple]) -> list[list[RawSuggestion]]:
        """One list of raw suggestions per input, in input order."""
        ...


def as_inputs(batch: Sequence[DetectionInput | tuple]) -> list[DetectionInput]:
    """Accept plain (context, sentence) or (context, sentence, opens_segment) tuples."""
    return [item if isinstance(item, DetectionInput) else DetectionInput(*item) for item in batch]


def label_map(taxonomy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """detector label -> taxonomy category (first category claiming the label wins)."""
    mapping: dict[str, dict[str, Any]] = {}
    for category in taxonomy.get("categories", []):
        label = (category.get("detector_label") or "").strip().lower()
        if label and label not in mapping:
            mapping[label] = category
    return mapping


@dataclass(frozen=True)
class CategorySuggestion:
    """A raw suggestion mapped to a study category, offsets inside the sentence."""

    category: str
    start: int
    end: int
    score: float
    detector: str
    version: str


def to_categories(
    raw: Sequence[RawSuggestion], sentence: str, taxonomy: dict[str, Any]
) -> list[CategorySuggestion]:
    """Map raw suggestions to the taxonomy's categories; sentence-scope ones cover the
    whole sentence; labels with no category and empty spans are dropped."""
    mapping = label_map(taxonomy)
    out: dict[tuple[str, int, int], CategorySuggestion] = {}
    for sug in raw:
        category = mapping.get(sug.label)
        if category is None:
            continue
        start, end = sug.start, sug.end
        if category.get("scope") == "sentence":
            start, end = 0, len(sentence)
        start, end = max(0, start), min(len(sentence), end)
        if end <= start or not sentence[start:end].strip():
            continue
        key = (category["id"], start, end)
        if key not in out or out[key].score < sug.score:
            out[key] = CategorySuggestion(
                category["id"], start, end, float(sug.score), sug.detector, sug.version
            )
    return list(out.values())


@dataclass
class DetectionStats:
    """What detecting one document cost and what was thrown away (counted, never silent)."""

    seconds: float = 0.0
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    timeouts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed: int = 0
    truncated: int = 0
    refused: int = 0
    bad_items: int = 0
    unknown_category: int = 0
    unlocatable: int = 0
    unlocatable_earlier: int = 0
    suggestions: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def dropped(self) -> int:
        """Answers and items that gave no suggestion."""
        return (
            self.malformed
            + self.truncated
            + self.refused
            + self.bad_items
            + self.unknown_category
            + self.unlocatable
        )

    def add(self, other: DetectionStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def operating_points(detector: Any) -> dict[str, dict[str, Any]]:
    """Per category (CharE, RefE, ...) the operating points this detector version stores
    (``best_f1``, ``precision_90``, ``precise``, ``balanced``, ``thorough``; each
    ``{"threshold", "precision", "recall", "f1"}`` or None, see
    :mod:`model_server.operating_points`); ``{}`` for a backend without scores (rules, LLM)."""
    return dict(getattr(detector, "operating_points", None) or {})


def at_hint_level(detector: Any, level: str | None) -> Any:
    """The detector used at a study's hint level (precise / balanced / thorough); a backend
    without operating points is returned as it is."""
    if not level or not hasattr(detector, "at_level"):
        return detector
    return detector.at_level(level)
