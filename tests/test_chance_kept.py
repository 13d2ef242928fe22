"""A study figure's chance disorder is kept while the pooled statistics it was drawn from move
by at most ``corpus_gamma.DRIFT`` (docs/METRICS.md, "Over several documents"): hand-computed
statistics on each side of the bound, then the figure's γ with the kept chance and with a
chance drawn anew."""

from __future__ import annotations

import copy

import pytest

from app.quality import corpus_gamma
from app.quality.corpus_gamma import DRIFT, laid_parameters, still_drawn
from app.quality.document_figures import UnitizedFigures, _Sums
from app.quality.unitizing import Unit

DRAWN = {
    "annotators": 3,
    "units": [200.0, 10.0],
    "gap": [50.0, 20.0],
    "length": [8.0, 3.0],
    "categories": ["A", "B"],
    "weights": [0.5, 0.5],
}


def moved(**changes) -> dict:
    found = copy.deepcopy(DRAWN)
    found.update(changes)
    return found


def test_the_bound_is_a_fifth_of_the_sampling_precision():
    assert round(DRIFT, 12) == 0.01


@pytest.mark.parametrize(
    ("now", "kept"),
    [
        (moved(), True),
        (moved(gap=[50.49, 20.0]), True),  # |50.49 - 50| = 0.49 <= 0.01 * 50 = 0.5
        (moved(gap=[50.51, 20.0]), False),  # 0.51 > 0.5
        (moved(gap=[49.51, 20.0]), True),  # either way
        (moved(gap=[49.49, 20.0]), False),
        (moved(gap=[50.0, 20.49]), True),  # a deviation on its mean's scale: 0.49 <= 0.5
        (moved(gap=[50.0, 20.51]), False),
        (moved(units=[201.9, 10.0]), True),  # 1.9 <= 2
        (moved(units=[202.1, 10.0]), False),
        (moved(units=[200.0, 11.9]), True),  # 1.9 <= 2, though 19 % of the deviation
        (moved(units=[200.0, 12.1]), False),
        (moved(length=[8.0, 3.079]), True),  # 0.079 <= 0.08
        (moved(length=[8.0, 3.081]), False),
        (moved(weights=[0.509, 0.491]), True),  # (0.009 + 0.009) / 2 = 0.009 <= 0.01
        (moved(weights=[0.511, 0.489]), False),  # 0.011 > 0.01
        (moved(annotators=2), False),  # another set of slots: another sampler
        (moved(categories=["A", "C"]), False),
    ],
)
def test_kept_or_drawn_again_at_the_bound(now, kept):
    assert still_drawn(DRAWN, now) is kept


def test_a_statistic_whose_mean_is_zero_must_stay_as_it_was():
    """Every gap 0 (units end to end): no move at all is within 1 % of 0."""
    flat = moved(gap=[0.0, 0.0])
    assert still_drawn(flat, flat)
    assert not still_drawn(flat, moved(gap=[0.001, 0.0]))


def _documents(gap: int) -> list[tuple[list[Unit], int]]:
    """Two annotators on one document of 100 code points: A [0, 10) and [10 + gap, 20 + gap),
    B the same, one category."""
    units = [Unit(name, start, start + 10, "A") for name in ("a", "b") for start in (0, 10 + gap)]
    return [(units, 100)]


def test_a_figure_keeps_its_chance_while_its_statistics_stay_near():
    """The units agree exactly but for B's second unit one code point later (observed
    disorder ((1 + 1) / 20)² = 0.01 over 4 / 2 = 2 units per annotator: 0.005), the chance of
    a near set of statistics is kept (γ = 1 − 0.005 / 0.5 = 0.99) and one drawn from
    statistics moved past the bound is drawn anew."""
    documents = _documents(40)
    units = documents[0][0]
    units[3] = Unit("b", 51, 61, "A")
    now = laid_parameters(documents, ["a", "b"])
    assert now is not None and now["gap"][0] > 0
    observed = [
        corpus_gamma.two_alignment([(0, 10, "A"), (50, 60, "A")], [(0, 10, "A"), (51, 61, "A")]),
        4,
    ]
    assert observed[0] == pytest.approx(0.01)
    near = copy.deepcopy(now)
    near["gap"][0] = now["gap"][0] * (1 + DRIFT * 0.9)
    far = copy.deepcopy(now)
    far["gap"][0] = now["gap"][0] * (1 + DRIFT * 1.1)
    for drawn_from, kept in ((near, True), (far, False)):
        figures = UnitizedFigures(None, None, ["A"], {}, {}, b"", 2)
        chance = {"disorder": 0.5, "samples": 30}
        sums = _Sums(figures, {"drawn": {"all": {"parameters": drawn_from, "chance": chance}}})
        value = sums.gamma([observed], documents, ["a", "b"], figure="all")
        assert value is not None
        used = sums.drawn_used["all"]
        if kept:
            assert value["gamma"] == pytest.approx(1 - 0.005 / 0.5)
            assert used["parameters"] == drawn_from  # still measured from where it was drawn
        else:
            assert used["parameters"] == now and used["chance"] != chance
            assert value["gamma"] == pytest.approx(1 - 0.005 / used["chance"]["disorder"])
