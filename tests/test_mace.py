"""MACE on arrays (app/quality/mace.py) gives crowd-kit's figures: the competences and the
posteriors of ``crowdkit.aggregation.MACE(method="em")``, the definition
(docs/METRICS.md, "Worker reliability"), on random label sets: workers named out of
alphabetical order and first seen in any order, the label 1 seen before 0 or after, workers
who give one label only, tasks with one label or many."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.quality.mace import mace_em
from app.quality.reliability import ITERATIONS, RESTARTS, SEED


def crowd_kit(
    frame: pd.DataFrame, iterations: int, seed: int, restarts: int = RESTARTS
) -> tuple[pd.DataFrame, np.ndarray]:
    from crowdkit.aggregation import MACE

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MACE(
            n_restarts=restarts, n_iter=iterations, method="em", random_state=seed, verbose=False
        )
        posterior = model.fit_predict_proba(frame)
    return posterior, model.spamming_


def assert_same(
    frame: pd.DataFrame, iterations: int = ITERATIONS, seed: int = SEED, restarts: int = RESTARTS
) -> None:
    ours, spamming = mace_em(frame, iterations=iterations, seed=seed)
    theirs, their_spamming = crowd_kit(frame, iterations, seed, restarts)
    assert list(ours.index) == list(theirs.index)
    assert list(ours.columns) == list(theirs.columns)
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(spamming, their_spamming, rtol=0, atol=1e-9)


@st.composite
def label_sets(draw) -> pd.DataFrame:
    workers = draw(st.lists(st.sampled_from("zqmbkad"), min_size=2, max_size=6, unique=True))
    tasks = draw(st.integers(min_value=1, max_value=25))
    seed = draw(st.integers(min_value=0, max_value=2**31))
    rng = np.random.default_rng(seed)
    rows = []
    for task in rng.permutation(tasks):
        truth = rng.random() < 0.3
        for worker in rng.permutation(workers)[: rng.integers(1, len(workers) + 1)]:
            skill = (ord(worker) % 7) / 8
            said = truth if rng.random() < 0.4 + skill / 2 else not truth
            rows.append((int(task), str(worker), int(said)))
    if draw(st.booleans()):  # one worker says 0 to every unit they label
        rows = [(t, w, 0 if w == workers[0] else label) for t, w, label in rows]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    if frame["label"].nunique() < 2:  # the models are not fitted then (reliability.fit)
        frame.loc[0, "label"] = 1 - frame.loc[0, "label"]
    return frame


@settings(max_examples=25, deadline=None)
@given(label_sets())
def test_the_array_form_gives_crowd_kits_figures(frame):
    assert_same(frame)


@pytest.mark.parametrize(("iterations", "seed"), [(0, 0), (1, 0), (7, 11), (200, 3)])
def test_any_number_of_iterations_and_seed(iterations, seed):
    rng = np.random.default_rng(seed)
    rows = [
        (task, f"w{worker}", int(rng.random() < 0.2 + 0.1 * worker))
        for task in range(40)
        for worker in range(5)
    ]
    assert_same(pd.DataFrame(rows, columns=["task", "worker", "label"]), iterations, seed)


def test_one_run_is_crowd_kits_three_restarts():
    """crowd-kit starts each restart from the same seeded point (reliability.RESTARTS), so the
    one run made gives the figures of three restarts."""
    rng = np.random.default_rng(5)
    rows = [
        (task, f"w{worker}", int(rng.random() < 0.3 + 0.1 * worker))
        for task in range(30)
        for worker in range(4)
    ]
    assert_same(pd.DataFrame(rows, columns=["task", "worker", "label"]), restarts=3)
