"""Acceptance: an LLM annotator calibrated on SNaC dev. Three dev summaries are imported
with their gold; humans replay the release's votes through the API; a stand-in annotator
answers with the gold marks with known noise (every third one dropped, one wrong one
added). The calibration shows the P/R/F1 that noise implies, its cost is the stand-in's
token counts times the price, the humans' report is the same before and after the run, and
the run took no human's slot."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from tests.conftest import BACKENDS, REPO, make_database_url, shared_file
from tests.llm_annotating import (
    add_annotator,
    answers,
    earlier_quote,
    jobs,
    quote_of,
    run_annotator,
)
from tests.llm_standin import standin
from tests.test_snac_roundtrip import plan_marks

DOCS = ("book_175b13", "book_6b91", "tripod20")
PAIRED = {"InconE", "RepE"}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def import_dev(app) -> dict:
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.formats import parse_documents

    path = shared_file("snac", "dev.json")
    raw = {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items() if k in DOCS}
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session,
            "dev",
            REPO / "taxonomies" / "snac.yaml",
            annotators_per_doc=3,
            suggestions="off",
        )
        chosen = [d for d in parse_documents(path, "snac", gold=True) if d.external_id in DOCS]
        import_documents(session, study, chosen, gold=True)
    return raw


def replay_humans(client, raw: dict, workers: range) -> None:
    """Humans mark the release's votes (worker k marks the errors with more than k votes)."""
    marks, *_ = plan_marks(raw)
    for doc, by_worker in marks.items():
        for k in workers:
            opened = client.post(
                "/api/assignments", json={"study": "dev", "document": doc, "worker_id": f"h{k}"}
            )
            assert opened.status_code == 201, opened.get_json()
            token = opened.get_json()["token"]
            for body in by_worker.get(k, []):
                added = client.post(f"/api/assignments/{token}/annotations", json=body)
                assert added.status_code == 201, added.get_json()
            assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def noisy_gold(app) -> tuple[dict, int, int]:
    """The stand-in's table (segment text -> items): every distinct located gold place but
    every third, and one wrong mark; how many gold places it returns, and the gold count."""
    from app.db import session_scope
    from app.models import Document, GoldError, Segment

    with app.app_context(), session_scope() as session:
        segments = {
            doc: [s.text for s in session.scalars(
                select(Segment).join(Document).where(Document.external_id == doc)
                .order_by(Segment.index))]
            for doc in DOCS
        }  # fmt: skip
        rows = session.execute(
            select(Document.external_id, GoldError.segment, GoldError.start, GoldError.end,
                   GoldError.category)
            .join(Document, Document.id == GoldError.document_id)
            .order_by(Document.position, GoldError.segment, GoldError.start, GoldError.id)
        ).all()  # fmt: skip
    table: dict[str, list] = {}
    places = list(dict.fromkeys(r for r in rows if r.start is not None))
    returned = 0
    for n, (doc, index, start, end, category) in enumerate(places):
        text = segments[doc][index]
        item = quote_of(text, start, end)
        if n % 3 == 2 or item is None:  # dropped: every third (and any place no quote names)
            continue
        if category in PAIRED:
            earlier = earlier_quote(segments[doc], index, start)
            if earlier is None:
                continue
            item["earlier_span"] = earlier
        table.setdefault(text, []).append({**item, "category": category, "reason": "gold"})
        returned += 1
    # one wrong mark: a GramE on the first words of a segment with no gold at all
    marked = {(doc, index) for doc, index, *_ in rows}
    doc, index = next((d, i) for d in DOCS for i in range(len(segments[d])) if (d, i) not in marked)
    text = segments[doc][index]
    words = " ".join(text.split()[:3])
    table.setdefault(text, []).append(
        {**quote_of(text, 0, len(words)), "category": "GramE", "reason": "x"}
    )
    return table, returned, len(rows)


def report(app) -> dict:
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality.reporting import study_report

    with app.app_context(), session_scope() as session:
        return study_report(session, get_study(session, "dev"))


def test_calibration_on_snac_dev_shows_the_noise_and_the_cost(app, client, tmp_path):
    raw = import_dev(app)
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    app.config["FIGURES_GAMMA_SECONDS"] = 0
    replay_humans(client, raw, range(2))
    before = report(app)
    table, returned, gold = noisy_gold(app)
    assert 50 < returned < gold  # 63 of 94 gold errors on these three summaries
    with standin(answers(table)) as server:
        add_annotator(app, "dev", server.url)
        from app.db import session_scope
        from app.documents.studies import get_study
        from app.llm.annotators import set_costs

        with app.app_context(), session_scope() as session:
            set_costs(
                get_study(session, "dev"), model="stand-in", input_price=2.0, output_price=8.0
            )
        run = run_annotator(app, "dev")
        tokens_in = sum(len(r["messages"][-1]["content"].split()) for r in server.requests)
        tokens_out = sum(u[1] for u in server.usage)
        assert len(server.usage) == len(server.requests)  # every request answered once
    done = jobs(app, run)
    assert {j.outcome for j in done.values()} == {"annotated"}
    assert sum(j.marks for j in done.values()) == returned + 1  # every quote named its place
    assert sum(j.refused + j.unlocated + j.ambiguous for j in done.values()) == 0

    # the humans' figures did not move, and a third human still finds a slot on each document
    assert report(app) == before
    replay_humans(client, raw, range(2, 3))

    from app.db import session_scope
    from app.llm.calibration import calibrate
    from app.llm.runs import latest_calibration
    from app.models import Study

    with app.app_context(), session_scope() as session:
        stored = latest_calibration(session, 1, "gpt").calibration
        now = calibrate(session, session.scalar(select(Study.id)), "gpt", gamma_seconds=0)
    for result in (stored, now):
        overall = result["gold"]["annotator"]["all"]
        # hand-computed: R marks right, one wrong, G gold errors (each place marked once)
        assert (overall["marks"], overall["matched"], overall["reference"]) == (
            returned + 1,
            returned,
            gold,
        )
        assert overall["precision"]["value"] == pytest.approx(returned / (returned + 1))
        assert overall["recall"]["value"] == pytest.approx(returned / gold)
        assert overall["f1"]["value"] == pytest.approx(2 * returned / (returned + 1 + gold))
        low, high = overall["f1"]["low"], overall["f1"]["high"]
        assert low <= overall["f1"]["value"] <= high
        cost = result["cost"]["annotator"]
        assert (cost["prompt_tokens"], cost["completion_tokens"]) == (tokens_in, tokens_out)
        assert cost["cost"] == pytest.approx(tokens_in / 1e6 * 2.0 + tokens_out / 1e6 * 8.0)
        assert cost["correct_errors"] == returned
        assert cost["cost_per_correct_error"] == pytest.approx(cost["cost"] / returned)
        assert result["cost"]["paid"]["prompt_tokens"] == tokens_in
    assert stored["humans"] == ["h0", "h1"] and now["humans"] == ["h0", "h1", "h2"]
    # the three summaries come from three systems: ranked from both kinds of marks
    ranks = now["ranks"]["errors_per_100_words"]
    assert now["ranks"]["systems"] == ["book_175b", "book_6b", "tripod"]
    assert sorted(r["model_rank"] for r in ranks["per_system"].values()) == [1.0, 2.0, 3.0]
    assert ranks["spearman"] is not None and -1 <= ranks["kendall"] <= 1
    # each human beside it: h0 marked every vote, so its gold recall is every located error
    h0 = now["gold"]["per_human"]["h0"]["all"]
    assert h0["reference"] == gold and h0["matched"] == h0["marks"]
