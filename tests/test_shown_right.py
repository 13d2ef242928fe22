"""Numbers shown as they are: an agreement just below zero reads 0.00, never "-0.00", on the
dashboard and in the text report (SQLite and Postgres), by hand."""

from __future__ import annotations

import re

import pytest

from app.quality.report_text import fixed
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import api_add, open_token

WORDS = 300


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def test_fixed_never_writes_a_negative_zero():
    assert [fixed(v) for v in (-0.001, -0.0, 0.004, -0.02, 0.5)] == [
        "0.00",
        "0.00",
        "0.00",
        "-0.02",
        "0.50",
    ]
    assert fixed(-0.04, 1) == "0.0" and fixed(-0.06, 1) == "-0.1"


def test_an_alpha_just_below_zero_reads_zero(app, client):
    """300 one-letter words, one segment; w1 marks word 1, w2 word 2 (CharE). Token units:
    300 per coder, n = 600 values; marked counts one 1 per marked unit, so o01 = o10 = 2,
    n1 = 2, n0 = 598: α = 1 − (n − 1) o01 / (n0 n1) = 1 − 599 · 2 / (598 · 2) = −1/598
    ≈ −0.0017 (the same for the document and the pair). Shown as 0.00."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality.reporting import format_report, study_report
    from tests.test_worker_management import ADMIN, create_researcher, logged_in

    text = " ".join(["a"] * WORDS)
    make_study(app, documents=[("doc-1", [text])], annotators_per_doc=2)
    for worker, start in (("w1", 0), ("w2", 2)):
        token = open_token(client, worker=worker)
        body = {"segment": 0, "start": start, "end": start + 1, "text": "a", "category": "CharE"}
        assert api_add(client, token, body).status_code == 201
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        report = study_report(session, get_study(session, "demo"))
    agreement = report["agreement"]
    assert agreement["per_category"]["CharE"]["token"]["alpha"] == pytest.approx(-1 / 598)
    assert agreement["all"]["token"]["alpha"] == pytest.approx(-1 / 598)
    (document,) = agreement["per_document"]
    assert document["token"]["alpha"] == pytest.approx(-1 / 598)
    assert "-0.00" not in format_report(report)
    create_researcher(app, ADMIN, admin=True)
    page = logged_in(app, ADMIN).get("/admin/studies/demo").get_data(as_text=True)
    agreement_card = page[page.index('id="agreement"') :]
    assert "-0.00" not in page
    assert re.search(r'<td class="num">0\.00</td>', agreement_card)


def test_gold_f1_per_assignment_and_the_best_over_graded_documents(app, client):
    """Gold F1 (docs/METRICS.md, "Against gold") is computed when read, stored or not: before,
    a study without a pass mark or a pause rule showed none, since only those stored it. By
    hand, gold CharE "the wrong man" and GramE "goed": w1 marks CharE "the wrong man" (P 1,
    R 1/2, F1 2/3); w2 CharE "wrong man" (token IoU 2/3: a match) and RefE "Tom" (wrong): P
    1/2, R 1/2, F1 1/2. Each assignment's gold_f1 in the export, each worker's best on the
    Workers page and in workers.csv."""
    import csv
    import io
    import json

    from app.db import session_scope
    from app.documents.studies import get_study, import_documents
    from app.formats import DocumentInput, GoldSpan
    from tests.helpers import export_text
    from tests.test_training import TEST, span
    from tests.test_worker_management import ADMIN, create_researcher, logged_in

    make_study(app, documents=[("doc-1", ["A real text."])], annotators_per_doc=2)
    gold = [GoldSpan(0, "the wrong man", "CharE", 1), GoldSpan(1, "goed", "GramE", 1)]
    with app.app_context(), session_scope() as session:
        import_documents(session, get_study(session, "demo"), [DocumentInput("g-1", TEST, gold=gold)], gold=True)  # fmt: skip
    marks = {
        "w1": [span(0, "the wrong man", "CharE", TEST)],
        "w2": [span(0, "wrong man", "CharE", TEST), span(0, "Tom", "RefE", TEST)],
    }
    for worker, bodies in marks.items():
        token = open_token(client, worker=worker, document="g-1")
        for body in bodies:
            assert api_add(client, token, body).status_code == 201
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    rows = [json.loads(line) for line in export_text(app, fmt="assignments-jsonl").splitlines()]
    assert {r["worker_id"]: r["gold_f1"] for r in rows} == {
        "w1": pytest.approx(2 / 3),
        "w2": pytest.approx(1 / 2),
    }
    create_researcher(app, ADMIN, admin=True)
    ada = logged_in(app, ADMIN)
    listed = csv.DictReader(io.StringIO(ada.get("/admin/studies/demo/workers.csv").text))
    assert {r["worker_id"]: r["best_gold_f1"] for r in listed} == {"w1": "0.6667", "w2": "0.5000"}
    page = ada.get("/admin/studies/demo/workers").get_data(as_text=True)
    for worker, shown in (("w1", "0.67"), ("w2", "0.50")):
        row = re.search(rf'<tr data-worker="{worker}".*?</tr>', page, re.S).group(0)
        assert f'<td class="num best-gold-f1">{shown}</td>' in row, row


def test_practice_is_never_graded_into_the_best_gold_f1(app, client):
    """A training phase: the worker marks the practice document's every answer (its F1 1,
    in the assignment export) and nothing on the qualification document (F1 0): their best
    gold F1 is 0.00, the qualification's, as the screen-out page says; practice is never
    graded."""
    import json

    from tests.helpers import export_text
    from tests.test_training import PRACTICE, arrive, training_study
    from tests.test_training import span as practice_span
    from tests.test_worker_management import ADMIN, create_researcher, logged_in

    training_study(app, attempts=1)
    _, token, _ = arrive(client, "p1")
    for segment, text, category in ((0, "the wrong person", "CharE"), (0, "Anna", "RefE"), (1, "leaved", "GramE")):  # fmt: skip
        body = practice_span(segment, text, category, PRACTICE)
        assert api_add(client, token, body).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    _, token, _ = arrive(client, "p1")
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    rows = [json.loads(line) for line in export_text(app, fmt="assignments-jsonl").splitlines()]
    scored = {r["document"]: r["gold_f1"] for r in rows}  # the qualification drawn at random
    assert scored.pop("practice-1") == 1.0 and list(scored.values()) == [0.0]
    create_researcher(app, ADMIN, admin=True)
    page = logged_in(app, ADMIN).get("/admin/studies/demo/workers").get_data(as_text=True)
    assert '<td class="num best-gold-f1">0.00</td>' in page
