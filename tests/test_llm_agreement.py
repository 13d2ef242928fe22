"""The calibration's figures on a document small enough to count by hand: three humans and a
model marking one segment; the leave-one-out consensus, F1 against each human, pooled
pairwise α (and its formula against the ``krippendorff`` package), γ, and the cost per
correct error from paid minutes and tokens."""

from __future__ import annotations

from datetime import timedelta

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select, update

from app.llm.agreeing import alpha_of
from tests.conftest import make_study
from tests.llm_annotating import add_annotator, answers, run_annotator
from tests.llm_standin import standin

TEXT = "Anna met Bob. Carl left. Dora came."
MARKS = {"h1": ["Carl", "Dora"], "h2": ["Carl"], "h3": ["Carl", "Bob"]}
MODEL = ["Carl", "Anna"]


def body(word: str, n: int) -> dict:
    start = TEXT.index(word)
    return {"segment": 0, "start": start, "end": start + len(word), "text": word,
            "category": "CharE", "client_id": f"c{n}"}  # fmt: skip


@pytest.fixture
def toy(app, client):
    from app.db import session_scope
    from app.documents.records import DocumentInput, GoldSpan
    from app.llm.annotators import set_costs
    from app.models import Assignment, Study

    gold = [GoldSpan(0, "Carl", "CharE", 1, offsets=(TEXT.index("Carl"), TEXT.index("Carl") + 4))]
    make_study(app, documents=[DocumentInput("d1", [TEXT], gold=gold)], gold=True)
    for worker, words in MARKS.items():
        token = client.post(
            "/api/assignments", json={"study": "demo", "document": "d1", "worker_id": worker}
        ).get_json()["token"]
        for n, word in enumerate(words):
            added = client.post(f"/api/assignments/{token}/annotations", json=body(word, n))
            assert added.status_code == 201, added.get_json()
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        for minutes, worker in ((10, "h1"), (20, "h2"), (30, "h3")):
            opened = session.scalar(
                select(Assignment.created_at).where(Assignment.worker_id == worker)
            )
            session.execute(
                update(Assignment)
                .where(Assignment.worker_id == worker)
                .values(submitted_at=opened + timedelta(minutes=minutes))
            )
        study = session.scalar(select(Study))
        set_costs(study, model="stand-in", input_price=1000.0, output_price=0.0, human_per_hour=12)
    items = [{"category": "CharE", "span": w, "context": "", "reason": "x"} for w in MODEL]
    app.config["FIGURES_GAMMA_SECONDS"] = 0  # γ: test_gamma_pairs_lay_shared_documents_end_to_end
    with standin(answers({TEXT: items})) as server:
        add_annotator(app, "demo", server.url)
        run_annotator(app, "demo")
        tokens = sum(u[0] for u in server.usage)
    from app.llm.runs import latest_calibration

    with app.app_context(), session_scope() as session:
        return latest_calibration(session, 1, "gpt").calibration, tokens


def test_the_figures_counted_by_hand(toy):
    result, tokens = toy
    consensus = result["consensus"]
    # each human's reference: what both other humans marked, Carl; the model faces all three
    model, humans = consensus["annotator"]["all"], consensus["humans"]["all"]
    assert (model["marks"], model["matched"], model["reference"]) == (6, 3, 3)
    assert model["f1"]["value"] == pytest.approx(6 / 9)
    assert (humans["marks"], humans["matched"], humans["reference"]) == (5, 3, 3)
    assert humans["precision"]["value"] == pytest.approx(0.6)
    assert humans["f1"]["value"] == pytest.approx(0.75)
    h2 = consensus["per_human"]["h2"]["all"]
    assert (h2["precision"]["value"], h2["recall"]["value"]) == (1.0, 1.0)
    # F1 against each human: model {Carl, Anna} vs h1 {Carl, Dora}: 2·1 / (2 + 2)
    assert result["pairs"]["llm:gpt"]["h1"]["f1"]["value"] == pytest.approx(0.5)
    assert result["pairs"]["h2"]["h3"]["f1"]["value"] == pytest.approx(2 / 3)
    # α: 10 tokens per pair; (model, h1): D = 2, n = 20, K = 4; (model, h2): 1, 20, 3;
    # (model, h3): 2, 20, 4 → 1 − 59·5 / (11·49)
    assert result["alpha"]["annotator"]["CharE"]["value"] == pytest.approx(1 - 59 * 5 / (11 * 49))
    assert result["alpha"]["annotator"]["all"]["value"] == pytest.approx(1 - 59 * 5 / (11 * 49))
    assert result["alpha"]["per_human"]["h1"]["CharE"]["documents"] == 1
    # γ: no budget here, so each pair is left out and counted (not guessed)
    assert result["gamma"]["annotator"]["all"] == {
        "mean": None,
        "pairs": {"h1": None, "h2": None, "h3": None},
    }
    assert result["gamma"]["skipped"] > 0
    # gold: Carl; every worker found it once
    assert result["gold"]["annotator"]["all"]["matched"] == 1
    cost = result["cost"]
    assert cost["per_human"]["h1"]["cost"] == pytest.approx(2.0)  # 10 min at 12 an hour
    assert cost["humans"]["cost"] == pytest.approx(12.0)
    assert cost["humans"]["cost_per_correct_error"] == pytest.approx(4.0)
    assert cost["humans"]["minutes_per_document"] == pytest.approx(20.0)
    assert cost["annotator"]["cost"] == pytest.approx(tokens / 1e6 * 1000.0)
    assert cost["annotator"]["cost_per_correct_error"] == pytest.approx(tokens / 1e6 * 1000.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(2, 5), st.integers(0, 5)), min_size=1, max_size=40))
def test_pooled_alpha_is_krippendorffs(units):
    units = [(m, min(k, m)) for m, k in units]
    coders = np.array([m for m, _ in units], dtype=float)
    marked = np.array([k for _, k in units], dtype=float)
    sums = np.array([(marked * (coders - marked) / (coders - 1)).sum(), coders.sum(), marked.sum()])
    ours = alpha_of(sums)
    counts = np.stack([coders - marked, marked], axis=1)
    if counts[:, 0].sum() == 0 or counts[:, 1].sum() == 0:
        assert ours is None
        return
    theirs = krippendorff.alpha(
        value_counts=counts, value_domain=[0, 1], level_of_measurement="nominal"
    )
    assert ours == pytest.approx(theirs, abs=1e-9)


PAIR_TEXTS = {("d", 0): "Anna met Bob. Carl left.", ("d", 1): "Dora came home, and slept."}
SPANS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(sorted(PAIR_TEXTS)),
        st.integers(0, 25),
        st.integers(1, 8),
        st.sampled_from(["CharE", "RefE", "SceneE"]),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(SPANS)
def test_a_pairs_alpha_is_the_reports_token_alpha(found):
    """The pooled α's units are the report's token units (one layout, agreement.py): for one
    pair on one document, α from the pair's sums is the report's token-level α, per category
    and over all (SceneE widened to its sentences in both)."""
    from app.llm.agreeing import alpha_sums
    from app.quality.agreement import CategoryScheme, WorkBatch, agreement_report
    from app.rules.spans import Span

    spans = []
    for worker, key, start, width, category in found:
        text = PAIR_TEXTS[key]
        start = min(start, len(text) - 1)
        end = min(start + width, len(text))
        spans.append(Span(key[0], key[1], start, end, category, worker, text[start:end]))
    categories = ["CharE", "RefE", "SceneE"]
    scopes = {"SceneE": "sentence"}
    scheme = CategoryScheme(categories, scopes=scopes)
    report = agreement_report(WorkBatch(spans, PAIR_TEXTS, {"a": ["d"], "b": ["d"]}), scheme)
    for name, wanted in [*((c, [c]) for c in categories), ("all", categories)]:
        sums = alpha_sums(spans, PAIR_TEXTS, "d", ("a", "b"), wanted, scopes)
        figure = report["all"] if name == "all" else report["per_category"][name]
        expected = figure["token"]["alpha"]
        ours = alpha_of(np.array(sums))
        assert (ours is None) == (expected is None)
        if ours is not None:
            assert ours == pytest.approx(expected, abs=1e-9)


def test_gamma_pairs_lay_shared_documents_end_to_end():
    from app.llm.agreeing import GammaClock, lay_pair, pairwise_gamma
    from app.quality.unitizing import Unit, document_units
    from app.rules.spans import Span

    texts = {("a", 0): "Anna met Bob.", ("b", 0): "Carl left. Dora came."}
    spans = [
        Span("a", 0, 0, 4, "CharE", "llm:x"),
        Span("a", 0, 9, 12, "CharE", "h1"),
        Span("b", 0, 0, 4, "CharE", "llm:x"),
        Span("b", 0, 0, 4, "CharE", "h1"),
        Span("b", 0, 11, 15, "CharE", "h2"),  # h2 did only b
    ]
    annotated = {"llm:x": ["a", "b"], "h1": ["a", "b"], "h2": ["b"]}
    units, lengths, _ = document_units(spans, texts, annotated)
    # b laid after a (13 code points): the model's units at 0 and 13, h1's at 9 and 13
    assert set(lay_pair(units, lengths, ["a", "b"], ("llm:x", "h1"), {"CharE"})) == {
        Unit("llm:x", 0, 4, "CharE"), Unit("h1", 9, 12, "CharE"),
        Unit("llm:x", 13, 17, "CharE"), Unit("h1", 13, 17, "CharE"),
    }  # fmt: skip
    clock = GammaClock(600)
    found = pairwise_gamma(spans, texts, annotated, "llm:x", ["h1"], ["CharE"], {}, clock)
    pair = found["CharE"]["pairs"]["h1"]
    assert -1 <= pair["low"] <= pair["gamma"] <= pair["high"] <= 1
    assert found["all"]["pairs"]["h1"] == pair and found["all"]["mean"] == pair["gamma"]
    assert len(clock.known) == 1 and clock.skipped == 0  # CharE has the units of all: once
