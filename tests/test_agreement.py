"""Krippendorff's alpha and two-agree % on small cases worked out by hand.

Nominal alpha on binary units, from the coincidence matrix o (Krippendorff 2011): each
unit u with m_u >= 2 values adds, for every ordered pair of values (c, k) from different
coders, 1 / (m_u - 1) to o[c][k]. With n_c = sum_k o[c][k] and n = n_0 + n_1:

    alpha = 1 - (n - 1) * (o[0][1] + o[1][0]) / (2 * n_0 * n_1)

Each case is also checked against ``krippendorff.alpha(reliability_data=...)`` on the
workers x units matrix written out in full, so the value-count path of the reference
definition (tests/agreement_reference.py) is shown to agree with the package's plain
interface.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from app.documents.taxonomy import load_taxonomy
from app.quality.agreement import (
    NORMALISED,
    CategoryScheme,
    WorkBatch,
    agreement_report,
    groups_from_taxonomy,
)
from app.rules.scoring import Span, sentence_bounds, token_bounds
from tests.agreement_reference import (
    UnitCounts,
    krippendorff_alpha,
    normalise_boundaries,
    two_agree,
    unit_counts,
)

ROOT = Path(__file__).resolve().parents[1]
NAN = math.nan

#        0         1         2         3
#        0123456789012345678901234567890123
PARTY = "Claudio meets Hero at the party."  # 7 tokens: Claudio meets Hero at the party .
THREE = "Anna sings. Bob dances. Carl leaves."  # 3 sentences


def mark(worker, doc, start, end, category="CharE", segment=0):
    return Span(doc, segment, start, end, category, worker)


def package_alpha(matrix):
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")


def test_token_alpha_two_workers_one_partial_overlap():
    # A marks "Claudio" (token 1); B marks "Claudio meets" (tokens 1-2); 7 tokens.
    # units: (1,1), (0,1), then five (0,0)
    # o11 = 2, o01 = o10 = 1, o00 = 5 * 2 = 10; n0 = 11, n1 = 3, n = 14
    # alpha = 1 - 13 * 2 / (2 * 11 * 3) = 1 - 26/66 = 20/33 = 0.6061
    texts = {("d", 0): PARTY}
    spans = [mark("A", "d", 0, 7), mark("B", "d", 0, 13)]
    annotated = {"A": ["d"], "B": ["d"]}
    counts = unit_counts(spans, texts, annotated, ["CharE"], "token")
    assert counts.coders.tolist() == [2] * 7
    assert counts.marked.tolist() == [2, 1, 0, 0, 0, 0, 0]
    assert krippendorff_alpha(counts) == pytest.approx(20 / 33)
    matrix = [[1, 0, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0]]
    assert package_alpha(matrix) == pytest.approx(20 / 33)
    # two-agree: 2 marked tokens, 1 of them by both workers
    assert two_agree(counts) == 0.5

    report = agreement_report(WorkBatch(spans, texts, annotated), CategoryScheme(["CharE"]))
    char = report["per_category"]["CharE"]
    assert char["token"] == {"alpha": pytest.approx(20 / 33), "two_agree": 0.5, "marked_units": 2}
    # boundary-normalised: both spans become "Claudio meets" -> units (1,1),(1,1),5x(0,0)
    # -> no disagreement, alpha = 1
    assert char[NORMALISED] == {"alpha": 1.0, "two_agree": 1.0, "marked_units": 2}
    # one sentence, one segment, both marked: no variation -> alpha undefined
    assert char["sentence"] == {"alpha": None, "two_agree": 1.0, "marked_units": 1}
    assert char["segment"]["alpha"] is None
    assert report["units"] == {"token": 7, "sentence": 1, "segment": 1}
    assert (report["workers"], report["documents"]) == (2, 1)
    json.dumps(report)


def test_sentence_alpha_three_workers_with_missing_values():
    # d1 = THREE (A, B, C annotated it); d2 = "Dora waits." (A and C); d3 (B only).
    # sentence units and values (A, B, C):
    #   d1 s0: 1 1 1   -> o11 += 3*2/2 = 3
    #   d1 s1: 1 0 0   -> o10 += 1, o01 += 1, o00 += 1
    #   d1 s2: 0 0 0   -> o00 += 3
    #   d2 s0: 0 . 1   -> o01 += 1, o10 += 1
    #   d3 s0: . 1 .   -> one value: not pairable, left out
    # o00 = 4, o01 = o10 = 2, o11 = 3; n0 = 6, n1 = 5, n = 11
    # alpha = 1 - 10 * 4 / (2 * 6 * 5) = 1 - 40/60 = 1/3
    texts = {("d1", 0): THREE, ("d2", 0): "Dora waits.", ("d3", 0): "Eve hums."}
    spans = [
        mark("A", "d1", 0, 4, "RefE"),  # "Anna"
        mark("A", "d1", 12, 15, "RefE"),  # "Bob"
        mark("B", "d1", 5, 10, "RefE"),  # "sings"
        mark("C", "d1", 0, 10, "RefE"),  # "Anna sings"
        mark("C", "d2", 0, 4, "RefE"),  # "Dora"
        mark("B", "d3", 0, 3, "RefE"),  # "Eve"
        mark("C", "d3", 0, 3, "RefE"),  # C did not annotate d3: ignored
    ]
    annotated = {"A": ["d1", "d2"], "B": ["d1", "d3"], "C": ["d1", "d2"]}
    counts = unit_counts(spans, texts, annotated, ["RefE"], "sentence")
    assert counts.coders.tolist() == [3, 3, 3, 2, 1]
    assert counts.marked.tolist() == [3, 1, 0, 1, 1]
    assert krippendorff_alpha(counts) == pytest.approx(1 / 3)
    matrix = [[1, 1, 0, 0, NAN], [1, 0, 0, NAN, 1], [1, 0, 0, 1, NAN]]
    assert package_alpha(matrix) == pytest.approx(1 / 3)
    # two-agree over pairable units: marked d1s0 (3), d1s1 (1), d2s0 (1) -> 1/3
    assert two_agree(counts) == pytest.approx(1 / 3)

    # segment level: d1 (1,1,1), d2 (0,.,1), d3 unpairable
    # o11 = 3, o01 = o10 = 1, n0 = 1, n1 = 4, n = 5 -> alpha = 1 - 4*2/(2*1*4) = 0
    report = agreement_report(WorkBatch(spans, texts, annotated), CategoryScheme(["RefE"]))
    segment = report["per_category"]["RefE"]["segment"]
    assert segment["alpha"] == pytest.approx(0.0)
    assert package_alpha([[1, 0, NAN], [1, NAN, 1], [1, 1, NAN]]) == pytest.approx(0.0)
    assert segment["two_agree"] == 0.5
    assert report["documents"] == 2
    assert report["units"] == {"token": 12, "sentence": 4, "segment": 2}


def test_groups_agree_where_categories_do_not():
    # A says CharE, B says RefE over "Claudio"; text "Claudio meets Hero." has 4 tokens.
    # CharE units: (1,0), 3x(0,0): o01 = o10 = 1, o00 = 6; n0 = 7, n1 = 1, n = 8
    # alpha = 1 - 7 * 2 / (2 * 7 * 1) = 0
    # coherence group (CharE or RefE): (1,1), 3x(0,0) -> alpha = 1
    texts = {("d", 0): "Claudio meets Hero."}
    spans = [mark("A", "d", 0, 7, "CharE"), mark("B", "d", 0, 7, "RefE")]
    annotated = {"A": ["d"], "B": ["d"]}
    groups = {"coherence": ["CharE", "RefE"], "language": ["GramE"]}
    scheme = CategoryScheme(["CharE", "RefE", "GramE"], groups=groups)
    report = agreement_report(WorkBatch(spans, texts, annotated), scheme)
    assert report["per_category"]["CharE"]["token"]["alpha"] == pytest.approx(0.0)
    assert package_alpha([[1, 0, 0, 0], [0, 0, 0, 0]]) == pytest.approx(0.0)
    assert report["per_category"]["CharE"]["token"]["two_agree"] == 0.0
    assert report["per_group"]["coherence"]["token"]["alpha"] == 1.0
    assert report["all"]["token"]["alpha"] == 1.0
    # nobody marked a language error: alpha undefined, two-agree undefined
    assert report["per_group"]["language"]["token"] == {
        "alpha": None,
        "two_agree": None,
        "marked_units": 0,
    }


def test_a_worker_marking_a_unit_twice_counts_once():
    texts = {("d", 0): PARTY}
    spans = [mark("A", "d", 0, 7), mark("A", "d", 0, 13), mark("B", "d", 0, 7)]
    counts = unit_counts(spans, texts, {"A": ["d"], "B": ["d"]}, ["CharE"], "token")
    assert counts.marked.tolist() == [2, 1, 0, 0, 0, 0, 0]


def test_sentence_scope_spans_are_widened_to_their_sentence():
    # A marks "Bob", B marks "dances" as SceneE: both become "Bob dances." (tokens 4-6)
    texts = {("d", 0): THREE}
    spans = [mark("A", "d", 12, 15, "SceneE"), mark("B", "d", 16, 22, "SceneE")]
    annotated = {"A": ["d"], "B": ["d"]}
    plain = unit_counts(spans, texts, annotated, ["SceneE"], "token")
    assert plain.marked.tolist() == [0, 0, 0, 1, 1, 0, 0, 0, 0]
    scoped = unit_counts(
        spans, texts, annotated, ["SceneE"], "token", scopes={"SceneE": "sentence"}
    )
    assert scoped.marked.tolist() == [0, 0, 0, 2, 2, 2, 0, 0, 0]
    assert krippendorff_alpha(scoped) == 1.0


def test_normalisation_chains_overlaps_but_not_touching_spans():
    spans = [
        mark("A", "d", 0, 5),
        mark("B", "d", 3, 10),
        mark("C", "d", 9, 15),  # one chain
        mark("A", "d", 15, 20),  # touches the chain's end: separate
        mark("B", "d", 3, 10, "RefE"),  # other category: separate
        mark("C", "d", 0, 5, segment=1),  # other segment: separate
    ]
    out = normalise_boundaries(spans)
    assert [(s.start, s.end) for s in out] == [(0, 15), (0, 15), (0, 15), (15, 20), (3, 10), (0, 5)]
    assert [s.source for s in out] == ["A", "B", "C", "A", "B", "C"]


def test_normalised_alpha_hand_computed():
    # PARTY tokens: Claudio[0,7) meets[8,13) Hero[14,18) at[19,21) the[22,25) party[26,31) .
    # A: "Hero" [14,18); B: "meets Hero" [8,18); C: "the party" [22,31); A also "party".
    # raw token values (A,B,C): Claudio 000, meets 010, Hero 110, at 000, the 001,
    #   party 101, . 000
    # normalised: {A Hero, B meets Hero} -> [8,18); {C the party, A party} -> [22,31)
    #   meets 110, Hero 110, the 101, party 101, others 000
    # each marked unit: values 1,1,0 -> o11 += 1, o10 += 1, o01 += 1, o00 += 0 (per unit
    #   pairs: (1,1)x2, (1,0)x2, (0,1)x2 over m-1 = 2)
    # 4 such units: o11 = 4, o10 = o01 = 4; 3 zero units: o00 = 3 * 3 = 9
    # n0 = 13, n1 = 8, n = 21 -> alpha = 1 - 20 * 8 / (2 * 13 * 8) = 1 - 20/26 = 3/13
    texts = {("d", 0): PARTY}
    spans = [
        mark("A", "d", 14, 18),
        mark("B", "d", 8, 18),
        mark("C", "d", 22, 31),
        mark("A", "d", 26, 31),
    ]
    annotated = {"A": ["d"], "B": ["d"], "C": ["d"]}
    counts = unit_counts(spans, texts, annotated, ["CharE"], NORMALISED)
    assert counts.marked.tolist() == [0, 2, 2, 0, 2, 2, 0]
    assert krippendorff_alpha(counts) == pytest.approx(3 / 13)
    matrix = [[0, 1, 1, 0, 1, 1, 0], [0, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 0]]
    assert package_alpha(matrix) == pytest.approx(3 / 13)
    report = agreement_report(WorkBatch(spans, texts, annotated), CategoryScheme(["CharE"]))
    assert report["per_category"]["CharE"][NORMALISED]["alpha"] == pytest.approx(3 / 13)
    assert report["per_category"]["CharE"][NORMALISED]["two_agree"] == 1.0
    # raw two-agree: marked meets(1) Hero(2) the(1) party(2) -> 2/4
    assert report["per_category"]["CharE"]["token"]["two_agree"] == 0.5


def test_undefined_alpha():
    assert krippendorff_alpha(UnitCounts(np.array([1, 1]), np.array([1, 0]))) is None
    assert krippendorff_alpha(UnitCounts(np.array([2, 2]), np.array([0, 0]))) is None
    assert krippendorff_alpha(UnitCounts(np.array([2, 2]), np.array([2, 2]))) is None
    assert krippendorff_alpha(UnitCounts(np.zeros(0, int), np.zeros(0, int))) is None
    report = agreement_report(
        WorkBatch([], {("d", 0): PARTY}, {"A": ["d"]}), CategoryScheme(["CharE"])
    )
    assert report["units"] == {"token": 0, "sentence": 0, "segment": 0}
    assert report["all"]["token"] == {"alpha": None, "two_agree": None, "marked_units": 0}


def test_value_counts_path_matches_the_package_on_random_data():
    rng = np.random.default_rng(7)
    matrix = rng.integers(0, 2, size=(4, 60)).astype(float)
    matrix[rng.random(matrix.shape) < 0.3] = np.nan
    present = ~np.isnan(matrix)
    counts = UnitCounts(present.sum(axis=0), np.nansum(matrix, axis=0).astype(int))
    assert krippendorff_alpha(counts) == pytest.approx(package_alpha(matrix))


def test_groups_from_the_snac_taxonomy():
    groups = groups_from_taxonomy(load_taxonomy(ROOT / "taxonomies" / "snac.yaml"))
    assert groups == {
        "coherence": ["CharE", "RefE", "SceneE", "InconE"],
        "language": ["RepE", "GramE", "CorefE"],
    }


def _snac_synthetic(split: str):
    """SNaC data as three synthetic workers: worker k marks every error with votes >= k."""
    from app.documents.locating import locate
    from tests.conftest import shared_file

    path = shared_file("snac", f"{split}.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    texts, spans = {}, []
    for doc, segments in data.items():
        for index, segment in segments.items():
            texts[(doc, int(index))] = segment["text"]
            for error in segment["errors"]:
                placed = locate(segment["text"], error["span"])
                found = (placed.start, placed.end)
                for k in range(1, 4):
                    if placed.found and error["votes"] >= k:
                        spans.append(
                            mark(f"w{k}", doc, *found, error["error_type"], segment=int(index))
                        )
    annotated = {f"w{k}": list(data) for k in range(1, 4)}
    return texts, spans, annotated


def test_snac_dev_matches_a_naive_recomputation():
    texts, spans, annotated = _snac_synthetic("dev")
    categories = ["CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE"]
    report = agreement_report(WorkBatch(spans, texts, annotated), CategoryScheme(categories))
    by_place = defaultdict(list)
    for sp in spans:
        by_place[sp.source, sp.category, sp.key].append(sp)
    for level, bounds_of in (("token", token_bounds), ("sentence", sentence_bounds)):
        units = [(key, s, e) for key in sorted(texts) for s, e in bounds_of(texts[key])]
        assert report["units"][level] == len(units)
        for category in categories:
            matrix = [
                [
                    int(any(sp.start < e and s < sp.end for sp in by_place[worker, category, key]))
                    for key, s, e in units
                ]
                for worker in ("w1", "w2", "w3")
            ]
            expected = package_alpha(matrix)
            column = np.array(matrix).sum(axis=0)
            stat = report["per_category"][category][level]
            assert stat["alpha"] == pytest.approx(expected), (category, level)
            assert stat["two_agree"] == pytest.approx((column >= 2).sum() / (column >= 1).sum())
    # workers nest (w3 marks a subset of w2, of w1), so every unit w3 marked has 3 marks
    assert 0 < report["all"]["token"]["alpha"] < 1
