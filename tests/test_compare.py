"""``marginalia compare``: systems compared, checked against hand counts on SQLite and Postgres.

Two systems of two documents each (and one document seen by one worker only), their work
submitted through the HTTP API; every figure below is counted by hand from the texts:

* alpha-1 "Anna sings. Bob dances." / "Carl leaves now.": 7 words, 3 sentences; CharE "Anna"
  (w1, w2), RefE "Bob" (w1 only), SceneE "Carl leaves" (w1, w2) + "Carl leaves now" (w3: IoU
  2/3, the same candidate) → K = 2: 2 errors, sentences 0.0 and 1.0 flagged, 1 clean;
* alpha-2 "Dora reads a book." / "Eve sleeps.": 6 words, 2 sentences; GramE "reads a" (w1,
  w2; w3 submits nothing) → 1 error, 1 clean;
* alpha-3: one worker only → left out at K = 2;
* beta-1 "Finn runs very fast. Gus walks slowly. Hal stops.": 9 words, 3 sentences; CharE "Finn"
  (w1, w2, w3), CharE "Hal" (w2, w3) → 2 errors, 1 clean;
* beta-2 "Ida sings. Jon hums.": 4 words, 2 sentences; CharE "Ida" (w1 only; w2 nothing) → 0
  errors, 2 clean.

alpha: 13 words, 5 sentences, 3 errors, 2 clean → 300/13 errors per 100 words, 0.6 per
sentence, clean share 0.4; beta: 13 words, 5 sentences, 2 errors, 3 clean → 200/13, 0.4, 0.6.
"""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from app.cli import main
from app.db import session_scope
from app.documents.studies import get_study
from app.quality.compare import compare_systems
from app.quality.compare_stats import holm
from tests.conftest import BACKENDS, make_database_url, make_study

DOCUMENTS = {
    "alpha-1": ["Anna sings. Bob dances.", "Carl leaves now."],
    "alpha-2": ["Dora reads a book.", "Eve sleeps."],
    "alpha-3": ["Kim waits."],
    "beta-1": ["Finn runs very fast. Gus walks slowly. Hal stops."],
    "beta-2": ["Ida sings. Jon hums."],
}
# document -> worker -> [(segment, text, category)]
WORK = {
    "alpha-1": {
        "w1": [(0, "Anna", "CharE"), (0, "Bob", "RefE"), (1, "Carl leaves", "SceneE")],
        "w2": [(0, "Anna", "CharE"), (1, "Carl leaves", "SceneE")],
        "w3": [(1, "Carl leaves now", "SceneE")],
    },
    "alpha-2": {"w1": [(0, "reads a", "GramE")], "w2": [(0, "reads a", "GramE")], "w3": []},
    "alpha-3": {"w1": [(0, "Kim", "CharE")]},
    "beta-1": {
        "w1": [(0, "Finn", "CharE")],
        "w2": [(0, "Finn", "CharE"), (0, "Hal", "CharE")],
        "w3": [(0, "Finn", "CharE"), (0, "Hal", "CharE")],
    },
    "beta-2": {"w1": [(0, "Ida", "CharE")], "w2": []},
}
# per system, per document: (errors at K = 2, words, sentences, clean sentences)
HAND = {
    "alpha": [(2, 7, 3, 1), (1, 6, 2, 1)],
    "beta": [(2, 9, 3, 1), (0, 4, 2, 2)],
}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def submit(app, client, slug: str, documents: dict, work: dict) -> None:
    """Each worker's marks through the API, then submit (a worker with none submits too)."""
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    for doc, workers in work.items():
        for worker, marks in workers.items():
            opened = client.post(
                "/api/assignments", json={"study": slug, "document": doc, "worker_id": worker}
            )
            token = opened.get_json()["token"]
            for segment, text, category in marks:
                start = documents[doc][segment].index(text)
                body = {
                    "segment": segment,
                    "start": start,
                    "end": start + len(text),
                    "text": text,
                    "category": category,
                }
                answer = client.post(f"/api/assignments/{token}/annotations", json=body)
                assert answer.status_code == 201, answer.get_json()
            assert client.post(f"/api/assignments/{token}/submit").status_code == 200


@pytest.fixture
def two_systems(app, client):
    documents = [(doc, segments) for doc, segments in DOCUMENTS.items()]
    make_study(app, "systems", documents=documents, suggestions="off", annotators_per_doc=3)
    submit(app, client, "systems", DOCUMENTS, WORK)
    return app


def compared(app, **options):
    with app.app_context(), session_scope() as session:
        return compare_systems(session, get_study(session, "systems"), **options)


def rate(docs, column, denominator, scale=1.0):
    return scale * sum(d[column] for d in docs) / sum(d[denominator] for d in docs)


def test_figures_equal_the_hand_count(two_systems):
    result = compared(two_systems, resamples=999)
    assert result["min_workers"] == 2 and result["documents_left_out"] == 1  # alpha-3
    alpha, beta = result["systems"]
    assert (alpha["system"], beta["system"]) == ("alpha", "beta")
    assert [alpha[k] for k in ("documents", "words", "sentences", "errors")] == [2, 13, 5, 3]
    assert [beta[k] for k in ("documents", "words", "sentences", "errors")] == [2, 13, 5, 2]
    assert alpha["errors_per_100_words"]["value"] == pytest.approx(300 / 13)
    assert beta["errors_per_100_words"]["value"] == pytest.approx(200 / 13)
    assert alpha["errors_per_sentence"]["value"] == pytest.approx(0.6)
    assert alpha["clean_sentence_share"]["value"] == pytest.approx(0.4)
    assert beta["clean_sentence_share"]["value"] == pytest.approx(0.6)
    cats = alpha["per_category"]
    assert {c: cats[c]["errors"] for c in ("CharE", "RefE", "SceneE", "GramE")} == {
        "CharE": 1,
        "RefE": 0,  # one vote
        "SceneE": 1,
        "GramE": 1,
    }
    assert cats["SceneE"]["errors_per_100_words"]["value"] == pytest.approx(100 / 13)
    assert beta["per_category"]["CharE"]["errors_per_sentence"]["value"] == pytest.approx(0.4)
    (pair,) = result["pairs"]
    assert (pair["a"], pair["b"]) == ("alpha", "beta")
    assert pair["difference"] == pytest.approx(100 / 13)
    assert pair["clean_sentence_share"]["difference"] == pytest.approx(-0.2)


def test_p_value_is_the_exact_permutation_count(two_systems):
    """2 + 2 documents: C(4, 2) = 6 ways to deal them out; count by hand the deals whose
    |difference of errors per 100 words| is at least the observed 100/13."""
    result = compared(two_systems, resamples=999)
    docs = [dict(zip(("e", "w", "s", "c"), d, strict=True)) for d in HAND["alpha"] + HAND["beta"]]
    observed = abs(rate(docs[:2], "e", "w") - rate(docs[2:], "e", "w"))
    extreme = 0
    for chosen in combinations(range(4), 2):
        a = [docs[i] for i in chosen]
        b = [docs[i] for i in range(4) if i not in chosen]
        extreme += abs(rate(a, "e", "w") - rate(b, "e", "w")) >= observed - 1e-12
    # {a1, a2} | {b1, b2}: 3/13 − 2/13 = 0.077 (observed); {a1, b1} | {a2, b2}: 4/16 − 1/10
    # = 0.15; {a1, b2} | {a2, b1}: 2/11 − 3/15 = −0.018; and the three mirrors: 4 of 6
    assert extreme == 4
    (pair,) = result["pairs"]
    assert pair["p"] == pytest.approx(4 / 6)
    assert pair["p_holm"] == pair["p"]  # one pair: nothing to adjust


def test_intervals_are_scipy_bootstrap_with_the_same_seed(two_systems):
    result = compared(two_systems, resamples=999, seed=7)
    errors = np.array([d[0] for d in HAND["alpha"]], dtype=float)
    words = np.array([d[1] for d in HAND["alpha"]], dtype=float)

    def per_100_words(i, axis=-1):
        return 100 * errors[i].sum(axis=axis) / words[i].sum(axis=axis)

    expected = stats.bootstrap(
        (np.arange(2),),
        per_100_words,
        n_resamples=999,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(7),
    ).confidence_interval
    figure = result["systems"][0]["errors_per_100_words"]
    assert (figure["low"], figure["high"]) == pytest.approx((expected.low, expected.high))
    # two documents: resamples are {1,1}, {1,2}, {2,2}: 2/7, 3/13 and 1/6 × 100
    assert 100 / 6 - 1e-9 <= figure["low"] <= figure["high"] <= 200 / 7 + 1e-9


def test_more_votes_needed_leave_more_out(two_systems):
    result = compared(two_systems, min_workers=3, resamples=99)
    assert result["documents_left_out"] == 2  # alpha-3 (1 worker), beta-2 (2)
    alpha, beta = result["systems"]
    assert alpha["errors"] == 1 and alpha["per_category"]["SceneE"]["errors"] == 1
    assert (beta["documents"], beta["errors"]) == (1, 1)  # Finn


def test_adjudicated_layer_after_auto_accept_equals_the_workers_rule(two_systems):
    from sqlalchemy import select

    from app.models import Document, DocumentReview
    from app.quality.adjudication import auto_accept, set_status

    app = two_systems
    with app.app_context(), session_scope() as session:
        study = get_study(session, "systems")
        docs = list(session.scalars(select(Document).where(Document.study_id == study.id)))
        auto_accept(session, docs, 2, "test")
        for doc in docs:
            if doc.external_id != "alpha-3":
                review = session.get(DocumentReview, doc.id)
                version = review.version if review else 0
                set_status(session, doc, {"status": "done", "version": version}, "test")
    workers = compared(app, resamples=99)
    layer = compared(app, layer="adjudicated", resamples=99)
    for a, b in zip(workers["systems"], layer["systems"], strict=True):
        assert a == b
    assert workers["pairs"] == layer["pairs"]


def test_p_is_twice_the_smaller_one_sided_share_by_hand():
    """The permutation test's p (docs/METRICS.md, "Comparing systems"): twice the smaller
    one-sided share, capped at 1 (SciPy's two-sided p), which differs from "the share of deals
    with |difference| at least the observed" when the groups differ in size. a = (5, 1), b =
    (0, 0, 0), one word each: the observed difference is 3 − 0 = 3. The 10 deals of 2 of the 5
    documents to a: {5, 1} 3; {5, 0} × 3 13/6; {1, 0} × 3 −7/6; {0, 0} × 3 −2. At least 3:
    1 of 10; at most 3: 10 of 10; p = 2 × min(1/10, 1) = 0.2 (the |difference| share would
    be 1/10). With fewer resamples than deals the deals are random and each one-sided share
    is (count + 1) / (resamples + 1): with 4 resamples p = 2 × (c + 1) / 5 for the c random
    deals at least 3, so 0.4, 0.8 or 1 (capped), never 0."""
    from app.quality.compare_stats import difference

    a, b = ([5, 1], [1, 1]), ([0, 0, 0], [1, 1, 1])
    exact = difference(a, b, resamples=999)
    assert exact["difference"] == 3.0
    assert exact["p"] == pytest.approx(0.2)
    random_deals = difference(a, b, resamples=4)["p"]
    assert any(random_deals == pytest.approx(v) for v in (0.4, 0.8, 1.0)), random_deals


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 → 0.03, 0.06, max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # None does not count (m = 2): 0.5 × 2 = 1.0, then max(1.0, 0.9 × 1) = 1.0
    assert holm([0.5, None, 0.9]) == pytest.approx([1.0, None, 1.0])
    assert holm([0.04, 0.2]) == pytest.approx([0.08, 0.2])


def test_command_line_json_text_and_figure(two_systems, tmp_path):
    runner = CliRunner()
    env = {"DATABASE_URL": two_systems.config["DATABASE_URL"]}
    out = runner.invoke(main, ["compare", "systems", "--json", "--resamples", "99"], env=env)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert [s["system"] for s in data["systems"]] == ["alpha", "beta"]
    for key in ("value", "low", "high"):
        assert key in data["systems"][0]["errors_per_100_words"]
        assert key in data["systems"][0]["clean_sentence_share"]
    assert set(data["pairs"][0]) >= {"a", "b", "difference", "low", "high", "p", "p_holm"}
    text = runner.invoke(main, ["compare", "systems", "--resamples", "99"], env=env)
    assert "| alpha " in text.stdout and "23.08" in text.stdout  # 300/13
    for name in ("figure.svg", "figure.png"):
        made = runner.invoke(
            main,
            ["compare", "systems", "--resamples", "99", "--plot", str(tmp_path / name)],
            env=env,
        )
        assert made.exit_code == 0, made.output
    assert (tmp_path / "figure.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = runner.invoke(main, ["compare", "systems", "--plot", str(tmp_path / "f.pdf")], env=env)
    assert bad.exit_code == 1 and ".svg or .png" in bad.output
    bad = runner.invoke(
        main, ["compare", "systems", "--layer", "adjudicated", "--min-workers", "2"], env=env
    )
    assert bad.exit_code == 1 and "workers' layer only" in bad.output


def test_compare_json_over_http(two_systems, client):
    from app.researchers.accounts import create_researcher
    from tests.test_import_jobs import EMAIL, PASSWORD, csrf

    with two_systems.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    login = {"email": EMAIL, "password": PASSWORD, "csrf_token": csrf(client)}
    assert client.post("/admin/login", data=login).status_code == 302
    answer = client.get("/admin/studies/systems/compare.json")
    assert answer.status_code == 200
    data = answer.get_json()
    assert data["resamples"] == 2000 and data["systems"][0]["errors"] == 3
    assert set(data["pairs"][0]["per_category"]) >= {"CharE", "SceneE"}
    bad = client.get("/admin/studies/systems/compare.json?min_workers=-1")
    assert bad.status_code == 400 and "whole number" in bad.get_json()["error"]
    page = client.get("/admin/studies/systems/compare?layer=nope")
    assert page.status_code == 400 and b"layer must be workers or adjudicated" in page.data
    assert client.get("/admin/studies/elsewhere/compare").status_code == 404
