"""Agreement summed batch by batch: the histogram form of Krippendorff's alpha
equals the ``krippendorff`` package on the same units, and a study's figures do not depend
on how its documents are cut into batches (the maintained report adds them a batch at a
time, so its memory does not grow with the study)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.quality import figures
from app.quality.agreement import (
    Agreement,
    CategoryScheme,
    WorkBatch,
    agreement_breakdown,
    agreement_report,
)
from app.quality.agreement_counts import add_units, alpha_from_counts, stat_of
from app.rules.scoring import Span
from tests.agreement_reference import UnitCounts, krippendorff_alpha, two_agree

TEXTS = ["Anna met Bob today.", "He left. She stayed home", "Rain fell on the quiet town"]


@st.composite
def units(draw):
    size = draw(st.integers(1, 40))
    coders = draw(st.lists(st.integers(0, 5), min_size=size, max_size=size))
    marked = [draw(st.integers(0, max(c, 0))) for c in coders]
    return UnitCounts(np.array(coders, dtype=np.int64), np.array(marked, dtype=np.int64))


@settings(max_examples=300, deadline=None)
@given(units())
def test_the_histogram_alpha_is_the_packages_alpha(counts):
    hist: Counter = Counter()
    add_units(hist, counts.coders, counts.marked)
    expected = krippendorff_alpha(counts)
    found = alpha_from_counts(hist)
    assert (found is None) == (expected is None)
    if expected is not None:
        assert found == pytest.approx(expected, abs=1e-12)
    assert stat_of(hist)["two_agree"] == two_agree(counts)


def test_hand_computed_histogram():
    # two units of 3 coders marked by 1 and 2, one unit of 2 coders marked by none:
    # n0 = 2 + 1 + 2 = 5, n1 = 1 + 2 = 3, o01 = 1*2/2 + 2*1/2 = 2; alpha = 1 - 7*2/15
    hist = Counter({(3, 1): 1, (3, 2): 1, (2, 0): 1})
    assert alpha_from_counts(hist) == pytest.approx(1 - 14 / 15)
    assert stat_of(hist) == {"alpha": pytest.approx(1 / 15), "two_agree": 0.5, "marked_units": 2}


DOCS = ["d1", "d2", "d3", "d4"]
WORKERS = ["w1", "w2", "w3"]


@st.composite
def studies(draw):
    annotated = {w: set(draw(st.lists(st.sampled_from(DOCS), unique=True))) for w in WORKERS}
    spans = []
    for worker in WORKERS:
        for doc in sorted(annotated[worker]):
            for _ in range(draw(st.integers(0, 3))):
                segment = draw(st.integers(0, len(TEXTS) - 1))
                start = draw(st.integers(0, len(TEXTS[segment]) - 1))
                end = draw(st.integers(start + 1, len(TEXTS[segment])))
                category = draw(st.sampled_from(["CharE", "RefE", "SceneE"]))
                spans.append(Span(doc, segment, start, end, category, worker))
    cuts = draw(st.lists(st.sampled_from(DOCS), unique=True))
    return spans, annotated, cuts


@settings(max_examples=80, deadline=None)
@given(studies())
def test_batches_add_up_to_the_whole(study):
    spans, annotated, cuts = study
    texts = {(doc, i): text for doc in DOCS for i, text in enumerate(TEXTS)}
    scheme = CategoryScheme(
        ["CharE", "RefE", "SceneE"],
        groups={"coherence": ["CharE", "SceneE"]},
        scopes={"SceneE": "sentence"},
    )
    work = WorkBatch(spans, texts, annotated)
    whole = {
        **agreement_report(work, scheme),
        **agreement_breakdown(work, scheme),
    }
    figures = Agreement(scheme.categories, groups=scheme.groups, scopes=scheme.scopes)
    batches = [[d for d in DOCS if d in cuts], [d for d in DOCS if d not in cuts]]
    for batch in batches:
        figures.add(
            WorkBatch(
                [s for s in spans if s.document in batch],
                {key: text for key, text in texts.items() if key[0] in batch},
                {w: docs & set(batch) for w, docs in annotated.items()},
            )
        )
    assert _same(whole, {**figures.report(), **figures.breakdown()})


@settings(max_examples=80, deadline=None)
@given(studies())
def test_the_figures_key_by_batches_is_the_whole_works_key(study):
    # the report keys the worker's figures (γ, the worker models) a batch at a time: the
    # key must be the one of the whole work, whatever the batches, and move with any mark
    spans, annotated, cuts = study
    texts = {(doc, i): text for doc in DOCS for i, text in enumerate(TEXTS)}
    options = {"categories": ["CharE", "RefE"], "groups": {"g": ["CharE"]}, "scopes": {}}
    whole = figures.state_key(spans, texts, annotated, **options)
    key = figures.WorkKey(**options)
    for batch in ([d for d in DOCS if d in cuts], [d for d in DOCS if d not in cuts]):
        key.add(
            WorkBatch(
                [s for s in spans if s.document in batch],
                {k: text for k, text in texts.items() if k[0] in batch},
                {w: docs & set(batch) for w, docs in annotated.items()},
            )
        )
    assert key.hexdigest() == whole
    if spans:
        moved = [replace(spans[0], end=spans[0].end + 1), *spans[1:]]
        assert figures.state_key(moved, texts, annotated, **options) != whole
        another = [replace(spans[0], source="w9"), *spans[1:]]  # another worker's mark
        assert figures.state_key(another, texts, annotated, **options) != whole
    other = {**options, "scopes": {"CharE": "sentence"}}
    assert figures.state_key(spans, texts, annotated, **other) != whole


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, abs=1e-12)
    return a == b


@st.composite
def marked_study(draw):
    spans, annotated, _ = draw(studies())
    if draw(st.booleans()):  # a span known by its text only, and one of an unknown category
        spans.append(Span("d1", 0, None, None, "CharE", "w1", "Anna"))
        spans.append(Span("d2", 1, 0, 2, "Other", "w2"))
    return spans, annotated


TOUCHING = (  # w1 "Anna", w2 " met" and "met Bob": touching spans stay apart, overlapping join
    [Span("d1", 0, 0, 4, "CharE", "w1"), Span("d1", 0, 4, 8, "CharE", "w2")]
    + [Span("d1", 0, 5, 12, "CharE", "w2"), Span("d2", 2, 0, 4, "SceneE", "w3")],
    {"w1": {"d1"}, "w2": {"d1", "d2"}, "w3": {"d2"}},
)


@settings(max_examples=80, deadline=None)
@given(marked_study())
@example(TOUCHING)
def test_the_arrays_count_the_units_as_the_spans_do(study):
    """The numpy form (agreement_units) against the span-by-span definition (unit_counts)."""
    from app.quality.agreement import LEVELS, NORMALISED, _prepare
    from app.quality.agreement_units import SpanTable, UnitLayout, marked_counts, numbers
    from tests.agreement_reference import unit_counts

    spans, annotated = study
    texts = {(doc, i): text for doc in DOCS for i, text in enumerate(TEXTS)}
    scopes = {"SceneE": "sentence"}
    categories = numbers(["CharE", "RefE", "SceneE"])
    for level in (*LEVELS, NORMALISED):
        for wanted in ({"CharE"}, {"CharE", "SceneE"}, {"CharE", "RefE", "SceneE"}):
            expected = unit_counts(spans, texts, annotated, wanted, level, scopes=scopes)
            kept, coders = _prepare(spans, texts, annotated, scopes)
            table = SpanTable.of(kept, numbers(s.source for s in kept), categories)
            table = table.normalised() if level == NORMALISED else table
            layout = UnitLayout(texts, coders, "token" if level == NORMALISED else level)
            rows, first, last = table.units(layout)
            mask = np.array([c in wanted for c in categories])
            found = marked_counts(
                layout.size, table.worker[rows], table.category[rows], first, last, mask
            )
            assert layout.coders.tolist() == expected.coders.tolist()
            assert found.tolist() == expected.marked.tolist(), (level, wanted)
