"""MACE's EM (Hovy et al., 2013) as crowd-kit 1.4's ``MACE(method="em", n_restarts=1)``
computes it, step for step, on numpy arrays (docs/METRICS.md, "Worker reliability").

Why a second form: crowd-kit's E-step groups a pandas frame several times per iteration, so
its 50 iterations took ~5 s of the figure job's CPU at a 1,000-document study (96,000
labels), on every submission; the same arithmetic on arrays takes a tenth of a second.
The figures are crowd-kit's to rounding: tests/test_mace.py fits both on random label sets
(workers and labels in every order, workers who give one label only) and compares the
competences and posteriors.

crowd-kit's own quirks are kept, since its figures are the definition: the parameters start
from ``scipy.stats.uniform(1, 1 + noise)`` draws seeded with the seed; workers and labels are
numbered in their order of first appearance, except the strategy counts of the M-step, which
pandas' group-by orders by worker name and label value before they are read back by position.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.stats as sps

NOISE = 0.5  # crowd-kit's ``default_noise``


def _normalize(counts: np.ndarray, smoothing: float) -> np.ndarray:
    """crowd-kit's ``normalize``: each row plus ``smoothing``, over its sum (0 where that is
    0)."""
    norm = (counts + smoothing).sum(axis=1)[:, np.newaxis]
    return np.divide(
        counts + smoothing, norm, out=np.zeros_like(counts), where=~np.isclose(norm, 0)
    )


def mace_em(frame: pd.DataFrame, *, iterations: int, seed: int) -> tuple[pd.DataFrame, Any]:
    """MACE of ``frame`` (columns ``task``, ``worker``, ``label``): the posterior of each
    task's labels (rows: tasks in order of first appearance, columns: labels likewise, as
    crowd-kit's ``probas_``) and the spamming parameters (rows: workers in order of first
    appearance; column 1: the competence, crowd-kit's ``spamming_``)."""
    workers, worker_names = pd.factorize(frame["worker"])
    labels, label_names = pd.factorize(frame["label"])
    tasks, task_names = pd.factorize(frame["task"])
    n_workers, n_labels, n_tasks = len(worker_names), len(label_names), len(task_names)
    smoothing = 0.01 / n_labels
    by_name = np.argsort(np.asarray(worker_names, dtype=object), kind="stable")
    by_value = np.argsort(np.asarray(label_names), kind="stable")

    spamming = sps.uniform(1, 1 + NOISE).rvs(size=(n_workers, 2), random_state=seed)
    thetas = sps.uniform(1, 1 + NOISE).rvs(size=(n_workers, n_labels), random_state=seed)
    spamming = spamming / spamming.sum(axis=1, keepdims=True)
    thetas = thetas / thetas.sum(axis=1, keepdims=True)

    def e_step(spamming: np.ndarray, thetas: np.ndarray) -> tuple[Any, Any, Any]:
        spam, knows = spamming[workers, 0], spamming[workers, 1]
        strategy = spam * thetas[workers, labels]  # P(the label | spamming)
        gold = np.ones((n_tasks, n_labels))
        for label in range(n_labels):
            np.multiply.at(gold[:, label], tasks, strategy + knows * (labels == label))
        gold /= n_labels
        instance = gold.sum(axis=1)
        marginal = np.zeros(len(tasks))
        for label in range(n_labels):
            marginal += gold[tasks, label] / (strategy + knows * (labels == label))
        marginal = marginal * strategy / instance[tasks]
        counts = np.zeros((n_workers, n_labels))
        np.add.at(counts, (workers, labels), marginal)
        knowing = np.zeros((n_workers, 2))
        np.add.at(knowing[:, 0], workers, marginal)
        true = gold[tasks, labels] * knows / (strategy + knows) / instance[tasks]
        np.add.at(knowing[:, 1], workers, true)
        return gold, knowing, counts[by_name][:, by_value]

    gold, knowing, counts = e_step(spamming, thetas)
    for _ in range(iterations):
        spamming, thetas = _normalize(knowing, smoothing), _normalize(counts, smoothing)
        gold, knowing, counts = e_step(spamming, thetas)
    posterior = pd.DataFrame(
        gold / gold.sum(axis=1, keepdims=True), index=task_names, columns=label_names
    )
    return posterior, spamming
