"""The BooookScore protocol as an annotator preset on BooookScore's own summaries: the model
judges every sentence of each summary, its marks give the summary's score (the share of
sentences none of its marks touches), and the calibration sets it beside the humans' score
of the same summaries."""

from __future__ import annotations

import json
import statistics

import pytest

from app.rules.spans import sentence_bounds
from tests.conftest import REPO, shared_file
from tests.llm_annotating import add_annotator, run_annotator
from tests.llm_standin import Reply, standin

BOOKS = 4


def test_the_models_booookscore_beside_the_humans(app):
    from app.db import session_scope
    from app.documents.studies import create_study, get_study, import_documents
    from app.formats import parse_documents
    from app.llm.runs import latest_calibration
    from app.quality.booookscore import booookscore
    from app.rules.work import Work

    path = shared_file("booookscore", "summary-gpt4-4096-hier.json")
    taxonomy = REPO / "taxonomies" / "booookscore.yaml"
    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "bs", taxonomy, annotators_per_doc=1, suggestions="off")
        documents = parse_documents(path, "booookscore")[:BOOKS]
        import_documents(session, study, documents)
        segments = {d.external_id: d.segments for d in documents}

    def script(segment: str, number: int) -> Reply:
        judged = []
        for line in segment.splitlines():
            n = int(line.split(". ", 1)[0])
            confused = n % 4 == 0  # every fourth sentence confuses the model
            judged.append({"number": n, "questions": "Why?" if confused else None,
                           "types": ["discontinuity"] if confused else None})  # fmt: skip
        return Reply(content=json.dumps({"sentences": judged}))

    app.config["FIGURES_GAMMA_SECONDS"] = 0
    with standin(script) as server:
        add_annotator(app, "bs", server.url, preset="booookscore", batch=10)
        run_annotator(app, "bs")
    listed = sum(len(r["messages"][1]["content"].split("SENTENCES:")[1].splitlines()) - 3
                 for r in server.requests)  # fmt: skip
    sentences = {
        doc: sum(len(sentence_bounds(text)) for text in texts) for doc, texts in segments.items()
    }
    assert listed == sum(sentences.values())  # every sentence judged once
    with app.app_context(), session_scope() as session:
        study = get_study(session, "bs")
        result = latest_calibration(session, study.id, "gpt").calibration["booookscore"]
        humans = {
            d["document"]: d["score"] for d in booookscore(session, study, Work())["per_document"]
        }
    model = {doc: 1 - (n // 4) / n for doc, n in sentences.items()}  # hand-computed
    rows = {r["document"]: r for r in result["per_document"]}
    assert set(rows) == set(model) and result["documents"] == BOOKS
    for doc, row in rows.items():
        assert row["model"] == pytest.approx(model[doc])
        assert row["humans"] == pytest.approx(humans[doc])
    pairs = [(model[d], humans[d]) for d in sorted(model)]
    assert result["model"] == pytest.approx(statistics.fmean(m for m, _ in pairs))
    assert result["humans"] == pytest.approx(statistics.fmean(h for _, h in pairs))
    assert result["mean_absolute_difference"] == pytest.approx(
        statistics.fmean(abs(m - h) for m, h in pairs)
    )
    assert result["pearson"] == pytest.approx(
        statistics.correlation([m for m, _ in pairs], [h for _, h in pairs])
    )
