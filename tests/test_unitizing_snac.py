"""γ on SNaC dev with its annotators' spans replayed through the API: the report's
γ per category (the worker's figure job, through the counted work) equals pygamma-agreement
run directly on the same units, built here from the raw file: exactly with the same seed,
and within pygamma's stated precision with another seed.

Two documents with three replayed workers each keep it to about a minute (pygamma's import
compiles its numba kernels, ~20 s of it)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from app.db import session_scope
from app.documents.studies import get_study
from app.quality.reporting import study_report
from app.quality.scoring import widen_to_sentences
from app.quality.unitizing import PRECISION, SAMPLES, SEED
from tests.conftest import shared_file
from tests.test_adjudication_snac import replay_snac_dev
from tests.test_snac_roundtrip import plan_marks

DOCS = ("book_6b108", "tripod2")  # three replayed workers each: slots 1-3, nothing left out


def direct_gamma(raw: dict, category: str, seed: int) -> tuple[float, float, float]:
    """pygamma on the raw SNaC marks of ``category``: the two documents end to end in code
    points (sorted ids, segments in order), worker n as annotator n, SceneE widened to its
    sentences (the taxonomy's sentence scope)."""
    from pyannote.core import Segment
    from pygamma_agreement import CombinedCategoricalDissimilarity, Continuum

    marks, *_ = plan_marks({doc: raw[doc] for doc in DOCS})
    continuum, at = Continuum(), 0
    for worker in range(3):
        continuum.add_annotator(f"slot {worker + 1}")
    for doc in sorted(DOCS):
        texts = [raw[doc][str(i)]["text"] for i in range(len(raw[doc]))]
        offsets = [sum(len(t) for t in texts[:i]) for i in range(len(texts))]
        for worker, bodies in marks[doc].items():
            for b in bodies:
                if b["category"] != category:
                    continue
                start, end = b["start"], b["end"]
                if category == "SceneE":
                    start, end = widen_to_sentences(texts[b["segment"]], start, end)
                base = at + offsets[b["segment"]]
                continuum.add(f"slot {worker + 1}", Segment(base + start, base + end), category)
        at += sum(len(t) for t in texts)
    np.random.seed(seed)
    logging.disable(logging.WARNING)
    try:
        found = continuum.compute_gamma(
            CombinedCategoricalDissimilarity(alpha=1, beta=1),
            n_samples=SAMPLES,
            precision_level=PRECISION,
            fast=True,
        )
    finally:
        logging.disable(logging.NOTSET)
    low, high = found.approx_gamma_range
    return float(found.gamma), float(low), float(high)


@pytest.mark.slow
def test_gamma_per_category_equals_pygamma_on_the_same_units(app, client):
    raw = json.loads(shared_file("snac", "dev.json").read_text(encoding="utf-8"))
    replay_snac_dev(app, client, only=set(DOCS))
    with app.app_context(), session_scope() as session:
        study = get_study(session, "snac-dev")
        report = study_report(session, study, compute_figures=True)
    agreement = report["agreement"]
    assert agreement["unitized"]["state"] == "current"
    assert agreement["unitized"]["study"] == {"annotators": 3, "documents": 2, "left_out": 0}
    figures = agreement["gamma"]["per_category"]
    compared = 0
    for category, ours in figures.items():
        if ours is None:  # no worker marked it on these two documents
            assert all(
                b["category"] != category
                for doc in DOCS
                for bodies in plan_marks({doc: raw[doc]})[0][doc].values()
                for b in bodies
            )
            continue
        same, _, _ = direct_gamma(raw, category, SEED)
        assert ours["gamma"] == pytest.approx(same, abs=1e-6), category
        other, low, high = direct_gamma(raw, category, SEED + 1)
        # two estimates of the expected disorder, each within ±PRECISION of it (95 %): the
        # two γ differ by at most the width of the two stated ranges together
        width = (ours["high"] - ours["low"]) + (high - low)
        assert abs(ours["gamma"] - other) <= width + 1e-6, category
        compared += 1
    assert compared >= 4
