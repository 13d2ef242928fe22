"""Agreement per document and per pair of workers (docs/METRICS.md, "Agreement per document
and per pair"): hand-computed Krippendorff's alpha on four tokens, and a property test that
both equal :func:`agreement_report`'s all-categories token figure on the restricted input
(one truth: the breakdown slices the same units, it does not recompute them another way)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.quality.agreement import CategoryScheme, WorkBatch, agreement_breakdown, agreement_report
from app.rules.scoring import Span

TEXT = "Anna met Bob today"  # four tokens


def span(doc: str, worker: str, start: int, end: int, category: str = "CharE") -> Span:
    return Span(doc, 0, start, end, category, worker, TEXT[start:end])


def test_hand_computed_per_document_and_per_pair():
    # w1 marks "Anna met" (tokens 0, 1), w2 "met" (token 1), w3 nothing.
    spans = [span("d", "w1", 0, 8), span("d", "w2", 5, 8)]
    annotated = {"w1": {"d"}, "w2": {"d"}, "w3": {"d"}}
    result = agreement_breakdown(
        WorkBatch(spans, {("d", 0): TEXT}, annotated), CategoryScheme(["CharE"])
    )
    # Three coders, marked counts per token [1, 2, 0, 0]: coincidences o00 = 7, o01 = o10 = 2,
    # o11 = 1; n0 = 9, n1 = 3, n = 12; alpha = 1 - (4/12) / (2*9*3 / (12*11)) = 5/27.
    [doc] = result["per_document"]
    assert (doc["document"], doc["workers"]) == ("d", 3)
    assert doc["token"]["alpha"] == pytest.approx(5 / 27)
    assert (doc["token"]["two_agree"], doc["token"]["marked_units"]) == (0.5, 2)
    pairs = {tuple(p["workers"]): p for p in result["per_pair"]}
    assert list(pairs) == [("w1", "w2"), ("w1", "w3"), ("w2", "w3")]
    # w1, w2: [1, 2, 0, 0] of 2: o00 = 4, o01 = o10 = 1, o11 = 2; alpha = 1 - (2/8)/(30/56) = 8/15
    assert pairs[("w1", "w2")]["token"]["alpha"] == pytest.approx(8 / 15)
    assert pairs[("w1", "w2")]["token"]["two_agree"] == 0.5
    # w1, w3: [1, 1, 0, 0]: o01 = o10 = 2, o00 = 4; alpha = 1 - (4/8)/(24/56) = -1/6
    assert pairs[("w1", "w3")]["token"]["alpha"] == pytest.approx(-1 / 6)
    assert pairs[("w1", "w3")]["token"]["two_agree"] == 0.0
    # w2, w3: [0, 1, 0, 0]: alpha = 1 - (2/8)/(14/56) = 0
    assert pairs[("w2", "w3")]["token"]["alpha"] == pytest.approx(0.0)
    assert all(p["documents"] == 1 for p in pairs.values())


def test_a_document_with_one_worker_and_workers_sharing_nothing_are_left_out():
    spans = [span("d1", "w1", 0, 4), span("d2", "w2", 0, 4)]
    texts = {("d1", 0): TEXT, ("d2", 0): TEXT}
    result = agreement_breakdown(
        WorkBatch(spans, texts, {"w1": {"d1"}, "w2": {"d2"}}), CategoryScheme(["CharE"])
    )
    assert result == {"per_document": [], "per_pair": []}


WORKERS = ["w1", "w2", "w3"]
DOCS = ["d1", "d2", "d3"]
BOUNDS = [(0, 4), (5, 8), (9, 12), (13, 18), (0, 8), (5, 12), (0, 18)]


@st.composite
def studies(draw):
    annotated = {w: set(draw(st.lists(st.sampled_from(DOCS), unique=True))) for w in WORKERS}
    spans = [
        span(doc, worker, *draw(st.sampled_from(BOUNDS)), draw(st.sampled_from(["CharE", "RefE"])))
        for worker in WORKERS
        for doc in sorted(annotated[worker])
        for _ in range(draw(st.integers(0, 2)))
    ]
    return spans, annotated


@settings(max_examples=60, deadline=None)
@given(studies())
def test_the_breakdown_equals_the_report_on_the_restricted_input(study):
    spans, annotated = study
    texts = {(doc, 0): TEXT for doc in DOCS}
    categories = ["CharE", "RefE"]
    result = agreement_breakdown(WorkBatch(spans, texts, annotated), CategoryScheme(categories))
    for row in result["per_document"]:
        doc = row["document"]
        only = {w: docs & {doc} for w, docs in annotated.items()}
        expected = agreement_report(
            WorkBatch(spans, {(doc, 0): TEXT}, only), CategoryScheme(categories)
        )
        assert row["token"] == expected["all"]["token"]
        assert row["workers"] == sum(1 for docs in only.values() if docs)
    for row in result["per_pair"]:
        first, second = row["workers"]
        shared = annotated[first] & annotated[second]
        pair = {first: shared, second: shared}
        expected = agreement_report(WorkBatch(spans, texts, pair), CategoryScheme(categories))
        assert row["token"] == expected["all"]["token"]
        assert row["documents"] == len(shared)
    expected_pairs = [
        [a, b]
        for i, a in enumerate(WORKERS)
        for b in WORKERS[i + 1 :]
        if annotated[a] & annotated[b]
    ]
    assert [row["workers"] for row in result["per_pair"]] == expected_pairs
    report = agreement_report(WorkBatch(spans, texts, annotated), CategoryScheme(categories))
    assert len(result["per_document"]) == report["documents"]
