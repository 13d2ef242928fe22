"""γ on SNaC dev with its annotators' spans replayed through the API: the report's γ per
category (the worker's figure job, through the counted work) equals the corpus γ rebuilt from
pygamma-agreement's own pieces on the same units, built here from the raw file
(tests/test_document_figures.py ``by_hand``: each document's alignment, pygamma's sampler on
the pooled statistics), and lies within pygamma's stated precision of pygamma's γ of the two
documents laid end to end, with the same seed and with another.

Two documents with three replayed workers each keep it to about a minute (pygamma's import
compiles its numba kernels, ~20 s of it)."""

from __future__ import annotations

import json

import pytest

from app.db import session_scope
from app.documents.studies import get_study
from app.quality.reporting import study_report
from app.quality.unitizing import SEED, Unit
from app.rules.scoring import widen_to_sentences
from tests.conftest import shared_file
from tests.test_adjudication_snac import replay_snac_dev
from tests.test_document_figures import by_hand, laid_end_to_end
from tests.test_snac_roundtrip import plan_marks

DOCS = ("book_6b108", "tripod2")  # three replayed workers each: slots 1-3, nothing left out


def units_of(raw: dict, category: str) -> tuple[list[list[Unit]], list[int]]:
    """The raw SNaC marks of ``category`` per document (sorted ids), in code points of the
    document's segments end to end, worker n as slot n, SceneE widened to its sentences
    (the taxonomy's sentence scope); and each document's length."""
    marks, *_ = plan_marks({doc: raw[doc] for doc in DOCS})
    documents, lengths = [], []
    for doc in sorted(DOCS):
        texts = [raw[doc][str(i)]["text"] for i in range(len(raw[doc]))]
        offsets = [sum(len(t) for t in texts[:i]) for i in range(len(texts))]
        units = []
        for worker, bodies in marks[doc].items():
            for b in bodies:
                if b["category"] != category:
                    continue
                start, end = b["start"], b["end"]
                if category == "SceneE":
                    start, end = widen_to_sentences(texts[b["segment"]], start, end)
                base = offsets[b["segment"]]
                units.append(Unit(f"slot {worker + 1}", base + start, base + end, category))
        documents.append(units)
        lengths.append(sum(len(t) for t in texts))
    return documents, lengths


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
        documents, lengths = units_of(raw, category)
        slots = ["slot 1", "slot 2", "slot 3"]
        same, _ = by_hand(documents, slots, lengths)
        assert ours["gamma"] == pytest.approx(same, abs=1e-6), category
        for seed in (SEED, SEED + 1):
            direct, low, high = laid_end_to_end(documents, slots, lengths, seed)
            # two estimates of the expected disorder, each within ±PRECISION of it (95 %):
            # the two γ differ by at most the width of the two stated ranges together
            width = (ours["high"] - ours["low"]) + (high - low)
            assert abs(ours["gamma"] - direct) <= width + 1e-6, category
        compared += 1
    assert compared >= 4
