"""Workers of known quality replayed on studies whose gold they never see: the data sets, the
five shapes of worker, and their true F1 (docs/METRICS.md, "Worker reliability"; the test
``tests/test_worker_ranking.py`` and the table's command ``bench/replayed_workers.py``).

* **Data sets**: SNaC dev and train (``../shared/data``; a few summaries drawn by a seed,
  their errors placed by the shared locate rule, :func:`app.documents.locating.locate`)
  and a **generated** study that needs no shared data (:func:`generated`): sentences of
  invented words, errors planted at a chosen rate, so the test also runs on a fresh clone.
* **Workers**: *exact* marks every gold error, *random-half* a seeded half of them,
  *every-word* every word under every category, *spammer* a seeded tenth of the words, each
  under a random category, *nothing* submits without a mark.
* **True F1**: the strict sentence-level F1 against the gold (the report's ``gold`` →
  ``sentence`` figure: a sentence under a category is an error when a gold span of that
  category falls in it), the unit the worker models label.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.quality.sentences import WORD_PATTERN
from app.rules.scoring import Span, TextKey, precision_recall_f1

CATEGORIES = ("CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE")
SCOPES = {"SceneE": "sentence"}  # as taxonomies/snac.yaml
WORKERS = ("exact", "random-half", "every-word", "spammer", "nothing")
SPAM_RATE = 0.1
SYLLABLES = ("ka", "lo", "mi", "ren", "sa", "tu", "vel", "dor", "an", "is", "pe", "ro")


@dataclass
class Replayed:
    """A study of replayed workers: texts per (document, segment), the gold spans (which the
    study is never given), and each worker's spans and documents."""

    name: str
    texts: dict[TextKey, str]
    gold: list[Span]
    spans: dict[str, list[Span]] = field(default_factory=dict)

    @property
    def documents(self) -> list[str]:
        return sorted({doc for doc, _ in self.texts})

    @property
    def annotated(self) -> dict[str, set[str]]:
        return {worker: set(self.documents) for worker in WORKERS}

    @property
    def all_spans(self) -> list[Span]:
        return [s for spans in self.spans.values() for s in spans]

    def true_f1(self) -> dict[str, float]:
        """Each worker's sentence-level F1 against the gold (0 for a worker with none)."""
        return {
            worker: precision_recall_f1(
                self.spans[worker], self.gold, texts=self.texts, scopes=SCOPES
            )["sentence"]["overall"]["f1"]
            or 0.0
            for worker in WORKERS
        }


def replay(name: str, texts: Mapping[TextKey, str], gold: Sequence[Span], seed: int) -> Replayed:
    """The five workers' spans over ``texts``, from ``gold`` and a seeded generator."""
    rng = random.Random(seed)
    study = Replayed(name, dict(texts), [_as(g, "gold") for g in gold])
    study.spans = {worker: [] for worker in WORKERS}
    study.spans["exact"] = [_as(g, "exact") for g in gold]
    study.spans["random-half"] = [_as(g, "random-half") for g in rng.sample(gold, len(gold) // 2)]
    for (doc, segment), text in sorted(study.texts.items()):
        for m in WORD_PATTERN.finditer(text):
            for category in CATEGORIES:
                study.spans["every-word"].append(
                    Span(doc, segment, *m.span(), category, "every-word", m.group())
                )
            if rng.random() < SPAM_RATE:
                category = rng.choice(CATEGORIES)
                study.spans["spammer"].append(
                    Span(doc, segment, *m.span(), category, "spammer", m.group())
                )
    return study


def _as(span: Span, worker: str) -> Span:
    return Span(span.document, span.segment, span.start, span.end, span.category, worker, span.text)


def snac(split: str, documents: int, seed: int) -> Replayed:
    """``documents`` summaries of SNaC's ``split`` drawn with ``seed``; each error placed once
    by the shared locate rule (entries repeating a span in a segment at successive
    occurrences; an empty span or one found nowhere left out) is the gold."""
    from app.documents.locating import locate
    from tests.conftest import shared_file

    raw = json.loads(shared_file("snac", f"{split}.json").read_text(encoding="utf-8"))
    chosen = sorted(random.Random(seed).sample(sorted(raw), documents))
    texts: dict[TextKey, str] = {}
    gold: list[Span] = []
    for doc in chosen:
        for index, body in raw[doc].items():
            text = texts[(doc, int(index))] = body["text"]
            taken: dict[tuple[str, str], set[tuple[int, int]]] = {}
            for error in body["errors"]:
                used = taken.setdefault((error["span"], error["error_type"]), set())
                found = locate(text, error["span"], taken=used) if error["span"].strip() else None
                if found is None or not found.found:
                    continue
                used.add((found.start, found.end))
                where = (found.start, found.end)
                gold.append(
                    Span(doc, int(index), *where, error["error_type"], "gold", text[slice(*where)])
                )
    return replay(f"SNaC {split}, {documents} summaries, seed {seed}", texts, gold, seed)


def generated(
    seed: int, documents: int = 3, segments: int = 4, error_rate: float = 0.05
) -> Replayed:
    """A study nobody wrote: ``documents`` documents of ``segments`` segments of 3 to 7
    sentences of invented words; each (sentence, category) holds an error, a span of one to
    three of its words, with probability ``error_rate``."""
    rng = random.Random(seed)
    texts: dict[TextKey, str] = {}
    gold: list[Span] = []
    for d in range(documents):
        doc = f"gen-{seed}-{d}"
        for segment in range(segments):
            sentences, words_at = [], []
            at = 0
            for _ in range(rng.randint(3, 7)):
                words = [_word(rng) for _ in range(rng.randint(5, 14))]
                words[0] = words[0].capitalize()
                places, offset = [], at
                for w in words:
                    places.append((offset, offset + len(w)))
                    offset += len(w) + 1
                sentences.append(" ".join(words) + ".")
                words_at.append(places)
                at += len(sentences[-1]) + 1
            text = " ".join(sentences)
            texts[(doc, segment)] = text
            for places in words_at:
                for category in CATEGORIES:
                    if rng.random() < error_rate:
                        first = rng.randrange(len(places))
                        last = min(len(places) - 1, first + rng.randint(0, 2))
                        start, end = places[first][0], places[last][1]
                        gold.append(
                            Span(doc, segment, start, end, category, "gold", text[start:end])
                        )
    return replay(f"generated, seed {seed}, error rate {error_rate}", texts, gold, seed)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))


def figures(study: Replayed) -> dict[str, Any]:
    """The worker models over the replayed study (app/quality/reliability.py) and each
    worker's true F1."""
    from app.quality.agreement import CategoryScheme, WorkBatch
    from app.quality.reliability import worker_models

    scheme = CategoryScheme(CATEGORIES, scopes=SCOPES)
    models = worker_models(WorkBatch(study.all_spans, study.texts, study.annotated), scheme)
    return {"models": models, "true_f1": study.true_f1()}
