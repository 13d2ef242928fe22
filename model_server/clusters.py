"""Whole-document evidence about people: the import's entity clusters as plain data.

At import the web app groups a document's person mentions into characters
(``app.entities``: which names are people, "John Fenwick" / "Fenwick" / "Mr. Fenwick" as one)
and stores them as Entity / EntityMention rows. The caller (the worker, or the training and
evaluation code, which runs ``app.entities`` itself) passes them here as :class:`Cluster`
values, so ``model_server`` never imports the app; this module turns them into features of a
name candidate: is it a person the import tracked, is this the character's first mention,
how often the document names it before and after, was its first mention introduced.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from model_server.introductions import introduced_at

PERSON = "PERSON"
ClusterFinder = Callable[[list[list[str]]], list[list["Cluster"]]]
"""Documents (lists of segment texts) -> each document's clusters."""
_finder: ClusterFinder | None = None


@dataclass(frozen=True)
class Mention:
    """Where a character is named: ``segments[segment][start:end]`` (code points)."""

    segment: int
    start: int
    end: int


@dataclass(frozen=True)
class Cluster:
    """One character of a document (an Entity row) and its mentions (EntityMention rows)."""

    label: str
    mentions: tuple[Mention, ...]


@dataclass(frozen=True)
class MentionEvidence:
    """A mention's whole-document features, with offsets inside its sentence."""

    start: int
    end: int
    feats: dict[str, float]


CLUSTER_FEATURES = (
    "cl_person",
    "cl_first",
    "cl_earlier",
    "cl_later",
    "cl_first_introduced",
    "cl_first_earlier_segment",
    "cl_segments",
)


def _log_count(n: int) -> float:
    return min(1.0, math.log1p(n) / math.log(20))


def document_evidence(
    segments: Sequence[str], clusters: Sequence[Cluster]
) -> dict[int, list[tuple[Mention, dict[str, float]]]]:
    """Per segment, its person mentions with their clusters' features."""
    out: dict[int, list[tuple[Mention, dict[str, float]]]] = {}
    n_segments = max(1, len(segments))
    for cluster in clusters:
        if cluster.label != PERSON or not cluster.mentions:
            continue
        ordered = sorted(cluster.mentions, key=lambda m: (m.segment, m.start))
        first = ordered[0]
        text = segments[first.segment] if 0 <= first.segment < len(segments) else ""
        introduced = float(introduced_at(text, first.start, first.end))
        spread = len({m.segment for m in ordered}) / n_segments
        for i, mention in enumerate(ordered):
            out.setdefault(mention.segment, []).append(
                (
                    mention,
                    {
                        "cl_person": 1.0,
                        "cl_first": float(i == 0),
                        "cl_earlier": _log_count(i),
                        "cl_later": _log_count(len(ordered) - 1 - i),
                        "cl_first_introduced": introduced,
                        "cl_first_earlier_segment": float(first.segment < mention.segment),
                        "cl_segments": spread,
                    },
                )
            )
    return out


def sentence_evidence(
    evidence: dict[int, list[tuple[Mention, dict[str, float]]]],
    segment: int,
    start: int,
    end: int,
) -> tuple[MentionEvidence, ...]:
    """The mentions inside ``segments[segment][start:end]`` (a sentence), sentence offsets."""
    return tuple(
        MentionEvidence(m.start - start, m.end - start, feats)
        for m, feats in evidence.get(segment, [])
        if start <= m.start < end
    )


def candidate_features(
    mentions: Sequence[MentionEvidence] | None, start: int, end: int
) -> dict[str, float]:
    """The features of the candidate at ``sentence[start:end]``: those of the first person
    mention it overlaps; zeros when it overlaps none (not a person the import tracked)."""
    for m in mentions or ():
        if m.start < end and start < m.end:
            return dict(m.feats)
    return dict.fromkeys(CLUSTER_FEATURES, 0.0)


def set_cluster_finder(finder: ClusterFinder | None) -> None:
    """Register how training and evaluation get the clusters of SNaC documents (the app
    registers ``app.detection.clusters.find_clusters``, the import's own ``app.entities``);
    without one, evaluation runs without clusters (MiniLM's names fall back to the heads
    that do not read them) and ``train_head`` refuses."""
    global _finder
    _finder = finder


def cluster_finder() -> ClusterFinder | None:
    return _finder


def evidence_by_document(
    docs: dict[str, list[str]], finder: ClusterFinder | None = None
) -> dict[str, dict[int, list[tuple[Mention, dict[str, float]]]]] | None:
    """``{doc_id: document_evidence}`` for documents given as segment texts, through
    ``finder`` (default: the registered one); None without a finder."""
    finder = finder or _finder
    if finder is None:
        return None
    found = finder([list(segments) for segments in docs.values()])
    return {
        doc_id: document_evidence(segments, clusters)
        for (doc_id, segments), clusters in zip(docs.items(), found, strict=True)
    }
