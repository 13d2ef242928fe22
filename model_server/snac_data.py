"""SNaC-format data: load the JSON release and turn it into sentence-level examples.

A SNaC file maps document id -> segment index (string) -> ``{"text", "errors"}``; each
error has ``span`` (text), ``error_type`` (CharE, RefE, SceneE, ...) and ``votes``.
Each example is one sentence with its context (all earlier text of the document) and the
gold errors that start in it, with code-point offsets inside the sentence.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from model_server.grammar import find_span
from model_server.text import split_many


def shared_data_dir() -> Path:
    """``$MARGINALIA_SHARED_DATA`` or ``<repo>/../shared/data``."""
    env = os.environ.get("MARGINALIA_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def snac_path(split: str) -> Path:
    return shared_data_dir() / "snac" / f"{split}.json"


@dataclass(frozen=True)
class GoldError:
    category: str
    span: str
    start: int  # offsets inside the sentence
    end: int
    votes: int = 1


@dataclass
class SentenceExample:
    doc_id: str
    segment: int
    index: int  # sentence index inside the segment
    start: int  # offsets of the sentence inside the segment
    end: int
    sentence: str
    context: str
    gold: list[GoldError] = field(default_factory=list)
    people: tuple | None = None  # person mentions with their clusters' evidence, if known

    def categories(self, min_votes: int = 1) -> set[str]:
        return {g.category for g in self.gold if g.votes >= min_votes}


def load_documents(path: str | Path) -> dict[str, list[dict]]:
    """SNaC JSON -> {doc_id: [segment dicts in index order]}."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    docs = {}
    for doc_id, segments in data.items():
        ordered = sorted(segments.items(), key=lambda kv: int(kv[0]))
        docs[str(doc_id)] = [seg for _, seg in ordered]
    return docs


def _locate(span: str, text: str) -> tuple[int, int] | None:
    return find_span(span, text)


def sentence_examples(docs: dict[str, list[dict]]) -> list[SentenceExample]:
    """Every sentence of every document, with context and its gold errors.

    A gold span is placed at its first occurrence in the segment and assigned to the
    sentence where it starts; SceneE spans cover that whole sentence.
    """
    flat = [(doc_id, i, seg) for doc_id, segs in docs.items() for i, seg in enumerate(segs)]
    splits = split_many([seg.get("text", "") for _, _, seg in flat])
    examples: list[SentenceExample] = []
    history: dict[str, list[str]] = {}
    for (doc_id, seg_index, seg), spans in zip(flat, splits, strict=True):
        text = seg.get("text", "")
        earlier = history.setdefault(doc_id, [])
        seg_examples = []
        for k, (start, end) in enumerate(spans):
            sentence = text[start:end]
            seg_examples.append(
                SentenceExample(doc_id, seg_index, k, start, end, sentence, " ".join(earlier))
            )
            earlier.append(sentence)
        for err in seg.get("errors", []):
            category, span = err.get("error_type"), str(err.get("span", ""))
            where = _locate(span, text)
            if where is None or not seg_examples:
                continue
            s, e = where
            for ex in seg_examples:
                if ex.start <= s < ex.end or (s < ex.start and e > ex.start):
                    if category == "SceneE":
                        rel = (0, ex.end - ex.start)
                    else:
                        rel = (max(s, ex.start) - ex.start, min(e, ex.end) - ex.start)
                    ex.gold.append(
                        GoldError(
                            category,
                            ex.sentence[rel[0] : rel[1]],
                            rel[0],
                            rel[1],
                            int(err.get("votes") or 1),
                        )
                    )
                    break
        examples.extend(seg_examples)
    return examples


def attach_people(examples: list[SentenceExample], docs: dict[str, list[dict]]) -> bool:
    """Give every example its person mentions with their whole-document evidence, from the
    clusters the registered finder (:func:`model_server.clusters.set_cluster_finder`: the
    app's import, ``app.entities``) computes for ``docs``; False (nothing attached) without a
    finder."""
    from model_server.clusters import evidence_by_document, sentence_evidence

    texts = {doc_id: [seg.get("text", "") for seg in segs] for doc_id, segs in docs.items()}
    evidence = evidence_by_document(texts)
    if evidence is None:
        return False
    for ex in examples:
        ex.people = sentence_evidence(evidence.get(ex.doc_id, {}), ex.segment, ex.start, ex.end)
    return True
