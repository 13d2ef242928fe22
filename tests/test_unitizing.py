"""γ and unitizing α (docs/METRICS.md, "Unitized agreement"): Krippendorff's (2004) own
example, a case computed by hand, and how the study figure, the per-document rows and the
per-pair matrices are built. γ against pygamma-agreement on SNaC dev:
tests/test_unitizing_snac.py."""

from __future__ import annotations

import pytest

from app.quality.agreement import CategoryScheme, WorkBatch
from app.quality.document_figures import unitized_report
from app.quality.unitizing import Unit, alpha_disorders, unitizing_alpha
from app.rules.scoring import Span


def test_krippendorffs_2004_example():
    """Krippendorff (2004), "Measuring the reliability of qualitative text analysis data":
    two observers on [150, 450); the figures DKPro Statistics' test reproduces (Do_c 0.0144,
    De_c 0.0532, uα_c 0.7285; k identical: uα_k 1, De_k 0.0490; joint 0.8587)."""
    shift = 150
    c = [[(225, 295), (370, 400)], [(220, 300), (355, 375), (400, 420)]]
    k = [[(180, 240), (300, 350)], [(180, 240), (300, 350)]]

    def moved(coders):
        return [[(s - shift, e - shift) for s, e in units] for units in coders]

    do, de = alpha_disorders(moved(c), 300)
    assert do == pytest.approx(0.0144, abs=1e-4) and de == pytest.approx(0.0532, abs=1e-4)
    assert alpha_disorders(moved(k), 300) == (0.0, pytest.approx(0.0490, abs=1e-4))
    units = [
        Unit(str(i), s, e, name)
        for name, coders in (("c", moved(c)), ("k", moved(k)))
        for i, marks in enumerate(coders)
        for s, e in marks
    ]
    only_c = [u for u in units if u.category == "c"]
    assert unitizing_alpha(only_c, ["0", "1"], 300) == pytest.approx(0.7285, abs=1e-4)
    assert unitizing_alpha(units, ["0", "1"], 300) == pytest.approx(0.8587, abs=1e-4)


def test_hand_computed_case():
    # Continuum [0, 10); A marks [2, 6), B marks [3, 6).
    # Sections A: gap [0,2), unit [2,6), gap [6,10); B: gap [0,3), unit [3,6), gap [6,10).
    # Observed: the two units overlap: (2-3)^2 + (6-6)^2 = 1, twice (ordered pairs) = 2;
    #   Do = 2 / (m(m-1) L^2) = 2 / 200.
    # Expected: units 4 and 3 (N = 2), gaps 2, 4, 3, 4.
    #   l=4: (N-1)/3 (2*64 - 3*16 + 4) = 28, plus 16 * ((4-4+1) + (4-4+1)) = 32: 60;
    #   l=3: (1/3)(54 - 27 + 3) = 10, plus 9 * ((3-3+1) + 2 + 2) = 45: 55;
    #   De = (2/L) * 115 / (mL(mL-1) - (4*3 + 3*2)) = 23 / 362.
    # uα = 1 - (2/200) / (23/362) = 1 - 724/4600 = 969/1150.
    assert alpha_disorders([[(2, 6)], [(3, 6)]], 10) == (
        pytest.approx(2 / 200),
        pytest.approx(23 / 362),
    )
    units = [Unit("A", 2, 6, "c"), Unit("B", 3, 6, "c")]
    assert unitizing_alpha(units, ["A", "B"], 10) == pytest.approx(969 / 1150)
    # a coder's overlapping units are merged first: A's [2,4) + [3,6) is A's [2,6)
    split = [Unit("A", 2, 4, "c"), Unit("A", 3, 6, "c"), Unit("B", 3, 6, "c")]
    assert unitizing_alpha(split, ["A", "B"], 10) == pytest.approx(969 / 1150)
    # touching units of two coders are not an overlap: A [0,5), B [5,10) disagree fully
    assert alpha_disorders([[(0, 5)], [(5, 10)]], 10)[0] == pytest.approx(2 * 50 / 200)
    assert unitizing_alpha([], ["A", "B"], 10) is None
    assert unitizing_alpha(units, ["A"], 10) is None


TEXT = "Anna met Bob today. Bob left at noon."


def span(doc, worker, start, end, category="CharE", segment=0):
    return Span(doc, segment, start, end, category, worker, TEXT[start:end])


def test_report_slots_documents_pairs_and_identical_work():
    texts = {("d1", 0): TEXT, ("d1", 1): TEXT, ("d2", 0): TEXT, ("d3", 0): TEXT}
    # d1 and d2: three workers; d3: two, so the study figure (m = 3) leaves it out.
    annotated = {"w1": {"d1", "d2", "d3"}, "w2": {"d1", "d2", "d3"}, "w3": {"d1", "d2"}}
    spans = [span(d, w, 0, 4) for d in ("d1", "d2") for w in ("w1", "w2", "w3")] + [
        span("d1", w, 9, 12, "RefE", segment=1) for w in ("w1", "w2", "w3")
    ]
    result = unitized_report(WorkBatch(spans, texts, annotated), CategoryScheme(["CharE", "RefE"]))
    assert result["study"] == {"annotators": 3, "documents": 2, "left_out": 1}
    everyone_agrees = {"gamma": 1.0}
    for figure in (result["gamma"]["all"], result["gamma"]["per_category"]["CharE"]):
        assert figure["gamma"] == everyone_agrees["gamma"]
    assert result["unitized_alpha"]["per_category"]["CharE"] == pytest.approx(1.0)
    assert result["unitized_alpha"]["all"] == pytest.approx(1.0)
    rows = {r["document"]: r for r in result["per_document"]}
    assert set(rows) == {"d1", "d2", "d3"} and rows["d3"]["workers"] == 2
    # d3: nobody marked anything: both figures undefined
    assert rows["d3"]["gamma"] is None and rows["d3"]["unitized_alpha"] is None
    pairs = result["pairs"]
    assert pairs["workers"] == ["w1", "w2", "w3"]
    assert pairs["documents"] == [[0, 3, 2], [3, 0, 2], [2, 2, 0]]
    assert pairs["gamma"][0][0] is None and pairs["gamma"][0][1]["gamma"] == 1.0
    assert pairs["unitized_alpha"][1][2] == pytest.approx(1.0)
    assert (result["seed"], result["samples"], result["skipped"]) == (4577, 30, 0)


def test_pygamma_is_compiled_with_numbas_disk_cache():
    """pygamma compiles its numba functions at import, by default never cached: 20-25 s of CPU
    in every new process (each ``marginalia report``, each worker start). Through the app's
    loader the next process loads the machine code from disk."""
    import subprocess
    import sys

    probe = (
        "from app.quality.unitizing import pygamma_classes; pygamma_classes(); "
        "import numba, pygamma_agreement.numba_utils as m; "
        "print(type(m.levenshtein._cache).__name__, numba.njit.__name__)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    # cached, and numba's own decorator given back unchanged to everything imported later
    assert shown.stdout.split() == ["FunctionCache", "njit"]
