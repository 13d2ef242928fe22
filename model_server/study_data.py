"""A study's curated work as plain data, for the detector learned from it.

The app reads a study's documents and the work that counts (``app/rules/work.py``) and
hands them over as these values (``app.detection.study_data.read_study``); ``model_server``
never imports the app, so the command line asks a registered reader
(:func:`set_study_reader`) for them, as it asks the cluster finder for entity clusters.

The unit the learned detector judges is the **sentence** of the detector's own splitter
(:func:`model_server.text.sentence_spans_from_doc`, segment by segment, in
:func:`model_server.learned.sentence_texts`). A sentence **holds** an error of
category ``c`` when a span of ``c`` overlaps it by at least one character, or the span's
other end (a paired or relation category's earlier span) does: BooookScore's rule for a
confusing sentence (the paper scores the share of sentences without one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LabelledSpan:
    """One error of the curated work: category, segment and code-point offsets (end
    exclusive); a paired or relation error also has its other span (which may end in a
    later segment than it starts: ``paired_end_segment``)."""

    category: str
    segment: int
    start: int
    end: int
    paired_segment: int | None = None
    paired_start: int | None = None
    paired_end: int | None = None
    paired_end_segment: int | None = None


@dataclass(frozen=True)
class StudyDocument:
    doc_id: str
    segments: tuple[str, ...]
    spans: tuple[LabelledSpan, ...] = ()


@dataclass(frozen=True)
class CategoryInfo:
    """What the detector needs of a taxonomy category: its id, ``scope`` (``span`` or
    ``sentence``) and ``kind`` (``single``, ``paired`` or ``relation``)."""

    id: str
    scope: str = "span"
    kind: str = "single"

    @property
    def paired(self) -> bool:
        return self.kind in ("paired", "relation")


@dataclass(frozen=True)
class StudyData:
    """The training data of one study: its categories (taxonomy order) and its curated
    documents; ``source`` says where it came from (study, layer, filters) for the card."""

    name: str
    categories: tuple[CategoryInfo, ...]
    documents: tuple[StudyDocument, ...]
    source: dict[str, Any] = field(default_factory=dict)


def categories_of(taxonomy: dict[str, Any]) -> tuple[CategoryInfo, ...]:
    """The categories of a taxonomy snapshot (``study.taxonomy``) as :class:`CategoryInfo`."""
    return tuple(
        CategoryInfo(
            str(cat["id"]),
            str(cat.get("scope") or "span"),
            str(cat.get("kind") or "single"),
        )
        for cat in taxonomy.get("categories", [])
        if cat.get("id")
    )


@dataclass(frozen=True)
class Sentence:
    """A sentence of a document: segment, code-point offsets in it, its index in the
    document and whether it opens its segment."""

    segment: int
    start: int
    end: int
    index: int
    opens_segment: bool


def _overlaps(sentence: Sentence, segment: int, start: int, end: int, end_segment: int) -> bool:
    if not segment <= sentence.segment <= end_segment:
        return False
    after = sentence.segment > segment or sentence.end > start
    before = sentence.segment < end_segment or sentence.start < end
    return after and before


def span_sentences(sentences: Sequence[Sentence], span: LabelledSpan) -> set[int]:
    """Indices of the sentences the span overlaps, and those its other span overlaps."""
    hit = {
        s.index for s in sentences if _overlaps(s, span.segment, span.start, span.end, span.segment)
    }
    if span.paired_segment is not None and span.paired_start is not None:
        to = span.paired_end_segment if span.paired_end_segment is not None else span.paired_segment
        end = span.paired_end if span.paired_end is not None else span.paired_start
        hit |= {
            s.index
            for s in sentences
            if _overlaps(s, span.paired_segment, span.paired_start, end, to)
        }
    return hit


def sentence_targets(
    sentences: Sequence[Sentence], spans: Sequence[LabelledSpan]
) -> list[set[str]]:
    """Per sentence, the categories it holds an error of (the module's rule)."""
    out: list[set[str]] = [set() for _ in sentences]
    for span in spans:
        for k in span_sentences(sentences, span):
            out[k].add(span.category)
    return out


StudyReader = Callable[[str, str, int], StudyData]
_reader: list[StudyReader] = []


def set_study_reader(reader: StudyReader | None) -> None:
    """Register how a study's curated work is read (slug, layer, min workers) -> data; the
    ``marginalia`` CLI registers the app's (``app.detection.study_data``)."""
    _reader.clear()
    if reader is not None:
        _reader.append(reader)


def read_study(slug: str, layer: str, min_workers: int = 1) -> StudyData:
    if not _reader:
        raise RuntimeError(
            "no study reader registered: train on a study with `marginalia detector train --study`"
        )
    return _reader[0](slug, layer, min_workers)
