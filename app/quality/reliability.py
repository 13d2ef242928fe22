"""Worker reliability from the annotations themselves, without gold: MACE (Hovy et al., 2013)
and Dawid-Skene (1979), as ``crowd-kit`` computes them (docs/METRICS.md, "Worker
reliability"): Dawid-Skene through it, MACE through :func:`app.quality.mace.mace_em`, its EM
on arrays (crowd-kit's figures, ten times sooner).

A pure function of the counted work (the spans, texts and annotated documents of
:func:`app.quality.agreement.agreement_report`, sentence-scope spans widened the same way),
so a queued job can call it (:mod:`app.quality.figures`).

* **Unit**: a (document, segment, sentence, category): the sentences of
  :func:`app.rules.scoring.sentence_bounds`, for every category of the taxonomy, on the
  documents at least two workers submitted. A worker's **label** of a unit is 1 when one of
  their spans of that category overlaps the sentence, else 0; only the workers who submitted
  the document label its units.
* **competence** (MACE): the posterior probability that the worker gives the true label
  rather than a label from their own spamming strategy (crowd-kit's ``spamming_[:, 1]``).
  :data:`RESTARTS` restarts of :data:`ITERATIONS` EM iterations (MACE's ``em`` M-step: on
  the replayed workers of tests/test_reliability.py its variational-Bayes step put a worker
  who marks a random half of the errors above the one who marks them all, with one honest
  worker), seed :data:`SEED`.
* **consensus_f1**: the worker's F1 against MACE's posterior, soft: 2 Σ p·l / (Σ p + Σ l)
  over the units the worker labelled (p the unit's posterior, l the worker's label).
* **sensitivity** / **specificity** (Dawid-Skene, :data:`ITERATIONS` EM iterations): the
  worker's estimated P(label 1 | true 1) and P(label 0 | true 0).
* **expected_f1** (the models' figure to order workers by, and the pause rule's): the F1
  the worker's Dawid-Skene confusion matrix gives at the model's error prior π,
  :func:`expected_f1`. MACE's competence rewards a worker who says 0 to every unit (most
  units are not errors); this figure, like F1, gives them 0.
* **posterior** of a unit: MACE's probability that it is an error (label 1). The units at
  least one worker marked are returned with theirs; those at or above a threshold are the
  ``consensus`` export layer (app/rules/work.py, default 0.9).
"""

from __future__ import annotations

import warnings
from array import array
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from app.quality.agreement import CategoryScheme, WorkBatch, _prepare
from app.rules.scoring import Span, TextKey, sentence_bounds

SEED = 0
# crowd-kit starts every restart from the same point with a fixed seed (its initial spamming
# and theta are drawn from a generator made anew from ``random_state``): more restarts repeat
# the first one's figures exactly (tests/test_reliability.py), at their cost
RESTARTS = 1
ITERATIONS = 50
MAX_LABELS = 1_000_000  # beyond it the models are not fitted (a job's bound)


def unit_labels(
    spans: Iterable[Span],
    texts: Mapping[TextKey, str],
    annotated: Mapping[str, Iterable[str]],
    categories: Sequence[str],
    scopes: Mapping[str, str] | None = None,
) -> tuple[list[tuple[str, int, int, int, str]], dict[tuple[int, str], int]]:
    """The units (document, segment, start, end, category: a sentence under a category) of
    the documents at least two workers submitted, and each (unit index, worker)'s label."""
    kept, coders = _prepare(spans, texts, annotated, scopes)
    workers_of: dict[str, list[str]] = defaultdict(list)
    for worker, docs in annotated.items():
        for doc in set(docs):
            if coders.get(doc, 0) >= 2:
                workers_of[doc].append(worker)
    units: list[tuple[str, int, int, int, str]] = []
    first: dict[tuple[TextKey, str], int] = {}  # (segment, category) -> its first unit
    bounds: dict[TextKey, tuple[list[int], list[int]]] = {}
    labels: dict[tuple[int, str], int] = {}
    for key in sorted(k for k in texts if k[0] in workers_of):
        sentences = sentence_bounds(texts[key])
        bounds[key] = ([s for s, _ in sentences], [e for _, e in sentences])
        for category in categories:
            first[(key, category)] = len(units)
            for start, end in sentences:
                for worker in workers_of[key[0]]:
                    labels[(len(units), worker)] = 0
                units.append((key[0], key[1], start, end, category))
    for s in kept:
        base = first.get((s.key, s.category))
        if base is None or not s.located:
            continue
        starts, ends = bounds[s.key]
        lo = bisect_right(ends, s.start)  # first sentence ending after the span starts
        hi = bisect_left(starts, s.end) if s.end > s.start else lo + 1  # type: ignore[operator]
        for i in range(lo, min(hi, len(starts))):
            if (base + i, s.source) in labels:
                labels[(base + i, s.source)] = 1
    return units, labels


class Labels:
    """The models' units and labels of the counted work, a batch of whole documents at a time
    (the report's walk: :func:`unit_labels` of each batch), kept as compact arrays so a study
    of a million labels is held in tens of megabytes."""

    def __init__(self, categories: Sequence[str], scopes: Mapping[str, str] | None = None):
        self.categories, self.scopes = list(categories), scopes
        self.units: list[tuple[str, int, int, int, str]] = []
        self.tasks, self.coders, self.values = array("l"), array("l"), array("b")
        self.names: dict[str, int] = {}

    def add(self, work: WorkBatch) -> None:
        """Add one batch of whole documents."""
        units, labels = unit_labels(
            work.spans, work.texts, work.annotated, self.categories, self.scopes
        )
        base = len(self.units)
        self.units.extend(units)
        for (unit, worker), label in labels.items():
            self.tasks.append(base + unit)
            self.coders.append(self.names.setdefault(worker, len(self.names)))
            self.values.append(label)


def worker_models(work: WorkBatch, scheme: CategoryScheme) -> dict[str, Any]:
    """:func:`fit` of the work's :class:`Labels` (the work in one batch; the units are per
    category of ``scheme``, its groups do not enter)."""
    labels = Labels(scheme.categories, scheme.scopes)
    labels.add(work)
    return fit(labels)


def fit(found: Labels) -> dict[str, Any]:
    """MACE and Dawid-Skene over the sentence units: ``{"unit": "sentence", "units",
    "labels", "error_prior", "workers": {worker: {"competence", "consensus_f1", "expected_f1",
    "sensitivity", "specificity", "units"}},
    "posteriors": [{"document", "segment", "start", "end", "category", "posterior",
    "marked"}], "seed", "restarts", "iterations", "reason"}``; ``workers`` is empty and
    ``reason`` says why when the models cannot be fitted."""
    units = found.units
    values = set(found.values)
    out: dict[str, Any] = {
        "unit": "sentence",
        "units": len(units),
        "labels": len(found.values),
        "error_prior": None,
        "workers": {},
        "posteriors": [],
        "seed": SEED,
        "restarts": RESTARTS,
        "iterations": ITERATIONS,
        "reason": None,
    }
    if not found.values:
        out["reason"] = "no document has two workers' submitted work"
    elif values != {0, 1}:
        out["reason"] = "every label is the same: nothing to tell workers apart by"
    elif len(found.values) > MAX_LABELS:
        out["reason"] = f"{len(found.values)} labels: more than {MAX_LABELS} are not modelled"
    if out["reason"]:
        return out
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    from app.quality.mace import mace_em

    names = np.array(list(found.names), dtype=object)
    frame = pd.DataFrame(
        {
            "task": np.asarray(found.tasks, dtype=np.int64),
            "worker": names[np.asarray(found.coders)],
            "label": np.asarray(found.values, dtype=np.int64),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # crowd-kit's pandas deprecations
        posterior, spamming = mace_em(frame, iterations=ITERATIONS, seed=SEED)
        dawid_skene = DawidSkene(n_iter=ITERATIONS).fit(frame)
    errors, prior = dawid_skene.errors_, float(dawid_skene.priors_.get(1, 0.0))
    names = list(pd.factorize(frame["worker"])[1])
    per_worker = frame.groupby("worker").size()
    frame["truth"] = posterior.loc[frame["task"], 1].to_numpy()  # P(the unit is an error)
    frame["hit"] = frame["truth"] * frame["label"]
    sums = frame.groupby("worker")[["truth", "label", "hit"]].sum()
    for i, worker in enumerate(names):
        truth, said, hit = sums.loc[worker]
        sensitivity, specificity = _rate(errors, worker, 1), _rate(errors, worker, 0)
        out["workers"][worker] = {
            "competence": float(spamming[i, 1]),
            "consensus_f1": float(2 * hit / (truth + said)) if truth + said > 0 else None,
            "expected_f1": expected_f1(sensitivity, specificity, prior),
            "sensitivity": sensitivity,
            "specificity": specificity,
            "units": int(per_worker[worker]),
        }
    out["workers"] = dict(sorted(out["workers"].items()))
    out["error_prior"] = prior
    marked = frame[frame["label"] == 1].groupby("task").size()
    error = posterior.loc[marked.index, 1].to_numpy()  # one look-up, not one per unit
    for (task, count), chance in zip(marked.items(), error, strict=True):
        doc, segment, start, end, category = units[int(task)]
        out["posteriors"].append(
            {
                "document": doc,
                "segment": segment,
                "start": start,
                "end": end,
                "category": category,
                "posterior": float(chance),
                "marked": int(count),
            }
        )
    return out


def _rate(errors: Any, worker: str, label: int) -> float:
    """Dawid-Skene's P(the worker says ``label`` | the truth is ``label``); 0 for a label the
    worker never gave."""
    try:
        return float(errors.loc[(worker, label), label])
    except KeyError:
        return 0.0


def expected_f1(sensitivity: float, specificity: float, prior: float) -> float | None:
    """The F1 a worker with this Dawid-Skene confusion matrix scores when a share ``prior``
    of the units are errors: per unit, true positives s·π, false positives (1 − t)(1 − π),
    false negatives (1 − s)·π, so F1 = 2sπ / (2sπ + (1 − t)(1 − π) + (1 − s)π) (s the
    sensitivity, t the specificity, π the prior); None when that is 0 / 0 (no errors and a
    worker who never says 1)."""
    hit = sensitivity * prior
    wrong = (1 - specificity) * (1 - prior) + (1 - sensitivity) * prior
    return float(2 * hit / (2 * hit + wrong)) if 2 * hit + wrong > 0 else None
