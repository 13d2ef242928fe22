"""How far an LLM annotator can be trusted, read off one table: its figures beside the same
figures of every human of the study and of the humans pooled (docs/METRICS.md, "LLM
annotators"). Computed by the worker when a run ends (app/llm/steps.py) and stored with the
run; the calibration view and ``marginalia llm calibration`` show the stored figures.

The work is the study's counted documents (app/rules/work.py: no training phase), the
annotator's submitted assignments and the humans'. Per category and over all categories:

* **gold**: strict P/R/F1 (app/rules/scoring.py) on the gold documents each one did;
* **consensus**: strict P/R/F1 against the humans' consensus, **leave one out**: on a
  document with two humans or more, for each human h the reference is the candidate
  errors (app/quality/candidates.py) that at least K of the *other* humans marked (K: a
  strict majority of them unless ``min_humans``); h is scored against it, and so is the
  annotator, once per h: both face exactly the same references;
* **per human**: F1 of each one against each human's marks, on the documents both did;
* **α** with the humans and **γ** with each human (app/llm/agreeing.py).

Counts are summed over documents (micro), so P = Σ matched / Σ marks, R = Σ matched /
Σ reference, F1 = Σ 2·matched / Σ (marks + reference) (one-to-one matching: the matched
counts on both sides are equal); the 95% intervals are compare_stats' percentile bootstrap
over documents. Costs: app/llm/costs.py.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flask import current_app, has_app_context
from scipy import stats
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.llm import agreeing, costs
from app.llm.ranks import booookscore_side_by_side, ranks_side_by_side
from app.models import Document, LlmRun, Study, utcnow
from app.quality.candidates import Mark, group_candidates, study_marks
from app.quality.compare_stats import CONFIDENCE, interval
from app.quality.figures import BUDGET
from app.quality.reporting import gold_documents
from app.rules.scoring import Span, TextKey, precision_recall_f1, scopes_from_taxonomy
from app.rules.work import (
    EVERYONE,
    LLM_PREFIX,
    Work,
    is_llm,
    select_documents,
    select_segments,
    stream,
)

RESAMPLES = 2_000
SEED = 0
ALL = agreeing.ALL  # app/llm/__init__.py's
Counts = np.ndarray  # matched marks, marks, matched reference, reference


def majority(others: int) -> int:
    """K of the consensus: a strict majority of the other humans."""
    return others // 2 + 1


def prf_counts(
    predicted: Sequence[Span],
    reference: Sequence[Span],
    texts: Mapping[TextKey, str],
    scopes: Mapping[str, str],
    categories: Sequence[str],
) -> dict[str, Counts]:
    """Strict counts per category and over all (:data:`ALL`)."""
    table = precision_recall_f1(
        predicted, reference, texts=texts, scopes=scopes, categories=categories
    )
    entries = {**table["per_category"], ALL: table["overall"]}
    return {
        c: np.array([e["matched_predicted"], e["predicted"], e["matched_gold"], e["gold"]])
        for c, e in entries.items()
    }


class Tally:
    """Per-document counts of each column (annotator, a human, the humans pooled)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, dict[str, Counts]]] = defaultdict(lambda: defaultdict(dict))

    def add(self, column: str, document: str, found: Mapping[str, Counts]) -> None:
        for category, counts in found.items():
            held = self.rows[column][category]
            held[document] = held.get(document, np.zeros(4, dtype=int)) + counts

    def figures(self, column: str, categories: Sequence[str]) -> dict[str, Any]:
        out = {}
        for category in [*categories, ALL]:
            docs = self.rows.get(column, {}).get(category, {})
            rows = np.array(list(docs.values()), dtype=float).reshape(-1, 4)
            mp, n, mr, r = rows.T
            options = {"resamples": RESAMPLES, "seed": SEED}
            out[category] = {
                "precision": interval(mp, n, **options),
                "recall": interval(mr, r, **options),
                "f1": interval(mp + mr, n + r, **options),
                "marks": int(n.sum()),
                "reference": int(r.sum()),
                "matched": int(mp.sum()),
                "documents": len(rows),
            }
        return out

    def matched(self, column: str) -> dict[str, int]:
        """Matched marks per document over all categories (the correct errors found)."""
        return {doc: int(c[0]) for doc, c in self.rows.get(column, {}).get(ALL, {}).items()}


def _three(tally: Tally, coder: str, humans: list[str], categories: list[str]) -> dict:
    return {
        "annotator": tally.figures(coder, categories),
        "humans": tally.figures("", categories),
        "per_human": {h: tally.figures(h, categories) for h in humans},
    }


@dataclass
class StudyWork:
    """The counted work the calibration reads: texts, each document's workers (the humans
    and the annotator, in assignment order) and their spans, the gold."""

    texts: dict[TextKey, str]
    segments: dict[str, int]
    workers_of: dict[str, list[str]]
    marks: dict[str, list[Mark]]
    spans: dict[tuple[str, str], list[Span]]
    humans: list[str]
    names: dict[int, str]
    gold_docs: set[str]
    gold: dict[str, list[Span]]

    def texts_of(self, doc: str) -> dict[TextKey, str]:
        return {(doc, i): self.texts[(doc, i)] for i in range(self.segments.get(doc, 0))}


def read_work(session: Session, study: Study, coder: str) -> StudyWork:
    work = Work(workers=EVERYONE)
    documents = session.execute(
        select_documents(study, work, Document.id, Document.external_id, Document.is_gold)
    ).all()
    names = {row.id: row.external_id for row in documents}
    texts: dict[TextKey, str] = {}
    segments: dict[str, int] = defaultdict(int)
    for doc_id, text in stream(session, select_segments(study, work)):
        texts[(names[doc_id], segments[names[doc_id]])] = text
        segments[names[doc_id]] += 1
    workers_of: dict[str, list[str]] = {}
    marks: dict[str, list[Mark]] = {}
    for doc_id, (workers, found) in study_marks(session, study, work).items():
        keep = [w for w in workers if w == coder or not is_llm(w)]
        workers_of[names[doc_id]] = keep
        marks[names[doc_id]] = [m for m in found if m.worker in keep]
    gold_docs, gold, _ = gold_documents(session, study, documents)
    return StudyWork(
        texts,
        dict(segments),
        workers_of,
        marks,
        {
            (doc, w): [m.span(doc) for m in marks[doc] if m.worker == w]
            for doc, workers in workers_of.items()
            for w in workers
        },
        sorted({w for ws in workers_of.values() for w in ws if w != coder}),
        names,
        gold_docs,
        gold,
    )


def score(
    data: StudyWork,
    coder: str,
    categories: list[str],
    scopes: Mapping[str, str],
    min_humans: int | None,
) -> tuple[Tally, Tally, Tally]:
    """The gold, consensus and per-human tallies (columns: a worker ID, ``""`` the humans
    pooled, ``"A\nB"`` A against B)."""
    graded, agreed, paired = Tally(), Tally(), Tally()
    for doc, workers in sorted(data.workers_of.items()):
        here = data.texts_of(doc)
        people = [w for w in workers if w != coder]
        scored = [coder, *people] if coder in workers else people
        if doc in data.gold_docs:
            for w in workers:
                reference = data.gold.get(doc, [])
                found = prf_counts(data.spans[(doc, w)], reference, here, scopes, categories)
                graded.add(w, doc, found)
                if w != coder:
                    graded.add("", doc, found)
        for h in people:
            for a in scored:
                if a != h:
                    found = prf_counts(data.spans[(doc, a)], data.spans[(doc, h)], here, scopes, [])
                    paired.add(f"{a}\n{h}", doc, {ALL: found[ALL]})
            others = [w for w in people if w != h]
            k = min_humans or majority(len(others))
            if not others or len(others) < k:
                continue
            chosen = [m for m in data.marks[doc] if m.worker in others]
            reference = [
                Span(doc, c.segment, c.proposal.start, c.proposal.end, c.category, "consensus")
                for c in group_candidates(doc, others, chosen, here, scopes, ordered=False)
                if c.votes >= k
            ]
            for a in [h, coder] if coder in workers else [h]:
                found = prf_counts(data.spans[(doc, a)], reference, here, scopes, categories)
                agreed.add(a, doc, found)
                if a == h:
                    agreed.add("", doc, found)
    return graded, agreed, paired


def calibrate(
    session: Session,
    study_id: int,
    name: str,
    *,
    gamma_seconds: float | None = None,
    min_humans: int | None = None,
) -> dict[str, Any]:
    """The calibration figures of annotator ``name`` in the study (JSON-ready). SciPy's
    warning that an interval is undefined (NaN, e.g. a category nobody marked) is not
    shown: such a bound is None in the figures."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        return _calibrate(session, study_id, name, gamma_seconds, min_humans)


def _calibrate(
    session: Session,
    study_id: int,
    name: str,
    gamma_seconds: float | None,
    min_humans: int | None,
) -> dict[str, Any]:
    study = session.get(Study, study_id)
    coder = f"{LLM_PREFIX}{name}"
    taxonomy = study.taxonomy or {}
    categories = [c["id"] for c in taxonomy.get("categories", [])]
    scopes = scopes_from_taxonomy(taxonomy)
    data = read_work(session, study, coder)
    humans = data.humans
    graded, agreed, paired = score(data, coder, categories, scopes, min_humans)
    every_span = [s for found in data.spans.values() for s in found]
    annotated: dict[str, list[str]] = defaultdict(list)
    for doc, workers in data.workers_of.items():
        for w in workers:
            annotated[w].append(doc)

    def alpha(who: str | None) -> dict[str, Any]:
        return agreeing.pairwise_alpha(
            every_span, data.texts, data.workers_of, who, humans, categories, scopes,
            resamples=RESAMPLES, seed=SEED,
        )  # fmt: skip

    clock = agreeing.GammaClock(_gamma_budget(gamma_seconds))

    def gamma(who: str) -> dict[str, Any]:
        return agreeing.pairwise_gamma(
            every_span, data.texts, annotated, who, humans, categories, scopes, clock
        )

    run = latest_run(session, study.id, name)
    config = (run.config if run is not None else {}) or {}
    table = costs.price_table(study)
    model = costs.model_costs(session, study, name, config.get("model", ""), data.names)
    people = costs.human_costs(session, study, data.names)
    pooled = {f"{h}\n{d}": v for h, docs in people.items() for d, v in docs.items()}
    pooled_found = {f"{h}\n{d}": n for h in humans for d, n in graded.matched(h).items()}
    return {
        "annotator": name,
        "worker_id": coder,
        "model": config.get("model", ""),
        "preset": config.get("preset", ""),
        "computed_at": utcnow().isoformat(timespec="seconds"),
        "categories": categories,
        "humans": humans,
        "documents": {
            "annotator": sum(coder in ws for ws in data.workers_of.values()),
            "humans": sum(any(w != coder for w in ws) for ws in data.workers_of.values()),
            "gold": sum(doc in data.gold_docs for doc in data.workers_of),
        },
        "min_humans": min_humans,
        "gold": _three(graded, coder, humans, categories),
        "consensus": _three(agreed, coder, humans, categories),
        "pairs": {
            a: {
                h: paired.figures(f"{a}\n{h}", [])[ALL]
                for h in humans
                if h != a and paired.rows.get(f"{a}\n{h}")
            }
            for a in [coder, *humans]
        },
        "alpha": {
            "annotator": alpha(coder),
            "humans": alpha(None),
            "per_human": {h: alpha(h) for h in humans},
        },
        "gamma": {
            "annotator": gamma(coder),
            "per_human": {h: gamma(h) for h in humans},
            "skipped": clock.skipped,
        },
        "cost": {
            "currency": table["currency"],
            "price": model["price"],
            "human_per_hour": table["human_per_hour"],
            "paid": model["paid"],
            "annotator": costs.summary(model["per_document"], graded.matched(coder)),
            "humans": costs.summary(pooled, pooled_found),
            "per_human": {h: costs.summary(people.get(h, {}), graded.matched(h)) for h in humans},
        },
        "ranks": ranks_side_by_side(session, study, coder),
        "booookscore": booookscore_side_by_side(session, study, coder)
        if config.get("preset") == "booookscore"
        else None,
        "resamples": RESAMPLES,
        "seed": SEED,
        "confidence": CONFIDENCE,
    }


def _gamma_budget(seconds: float | None) -> float:
    if seconds is not None:
        return seconds
    config = current_app.config if has_app_context() else {}
    return float(config.get("FIGURES_GAMMA_SECONDS", BUDGET))


def latest_run(session: Session, study_id: int, name: str) -> LlmRun | None:
    """The annotator's latest run (its settings name the model it used)."""
    return session.scalar(
        select(LlmRun)
        .where(LlmRun.study_id == study_id, LlmRun.annotator == name)
        .order_by(LlmRun.id.desc())
        .limit(1)
    )
