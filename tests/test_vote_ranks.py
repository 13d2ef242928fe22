"""Imported vote ranks (docs/METRICS.md, "Vote ranks"): a SNaC file kept with ``--as-work``
is one worker per vote rank; ``compare`` counts its clean documents at every K, and the
report, its text and the dashboard say agreement among vote ranks is not inter-annotator
agreement (SQLite and Postgres). By hand:

* alpha1 "Anna sings. Bob dances." (4 words, 2 sentences): CharE "Anna", 3 votes;
* alpha2 "Carl leaves now." (3 words, 1 sentence): CharE "Carl", 1 vote: clean at K ≥ 2
  (its only worker is vote-1: it was left out at K = 2 before, "too few workers");
* beta1 "Finn runs. Hal waits." (4 words, 2 sentences): CharE "Finn", 2 votes;
* beta2 "Nobody is here." (3 words, 1 sentence): no error at all (it had no worker before:
  left out at every K).

K = 2: alpha 1 error / 7 words, clean (1 + 1) / 3; beta 1 / 7, clean (1 + 1) / 3.
K = 3: alpha the same; beta 0 errors, clean 3 / 3. No document is left out at any K.
"""

from __future__ import annotations

import json

import pytest

from app.db import session_scope
from app.documents.studies import create_study, get_study, import_documents
from app.formats import parse_documents
from app.quality.compare import compare_systems
from tests.conftest import BACKENDS, REPO, make_database_url

FILE = {
    "alpha1": {"0": {"text": "Anna sings. Bob dances.", "errors": [("Anna", 3)]}},
    "alpha2": {"0": {"text": "Carl leaves now.", "errors": [("Carl", 1)]}},
    "beta1": {"0": {"text": "Finn runs. Hal waits.", "errors": [("Finn", 2)]}},
    "beta2": {"0": {"text": "Nobody is here.", "errors": []}},
}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def snac_file(tmp_path):
    data = {
        doc: {
            index: {
                "text": body["text"],
                "errors": [
                    {"span": span, "error_type": "CharE", "votes": votes, "antecedants": None}
                    for span, votes in body["errors"]
                ],
            }
            for index, body in segments.items()
        }
        for doc, segments in FILE.items()
    }
    path = tmp_path / "votes.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_clean_documents_count_at_every_k_and_agreement_is_labelled(app, tmp_path):
    documents = parse_documents(snac_file(tmp_path), "snac", as_work=True)
    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "votes", REPO / "taxonomies" / "snac.yaml")
        import_documents(session, study, documents)
    with app.app_context(), session_scope() as session:
        study = get_study(session, "votes")
        results = {
            k: compare_systems(session, study, min_workers=k, resamples=50) for k in (1, 2, 3, 4)
        }
    for k, result in results.items():
        assert (result["documents_left_out"], result["vote_rank_documents"]) == (0, 4), k
        assert [s["documents"] for s in result["systems"]] == [2, 2], k
    figures = {
        k: {
            s["system"]: (s["errors"], s["words"], s["clean_sentence_share"]["value"])
            for s in result["systems"]
        }
        for k, result in results.items()
    }
    assert figures[2] == {
        "alpha": (1, 7, pytest.approx(2 / 3)),
        "beta": (1, 7, pytest.approx(2 / 3)),
    }
    assert figures[3] == {"alpha": (1, 7, pytest.approx(2 / 3)), "beta": (0, 7, 1.0)}
    assert figures[4] == {"alpha": (0, 7, 1.0), "beta": (0, 7, 1.0)}
    check_labelled(app)


def check_labelled(app) -> None:
    """The report names the vote ranks and says their agreement is not inter-annotator
    agreement; so do its text and the dashboard."""
    from app.quality.reporting import format_report, study_report
    from tests.test_worker_management import ADMIN, create_researcher, logged_in

    with app.app_context(), session_scope() as session:
        report = study_report(session, get_study(session, "votes"))
    votes = report["agreement"]["vote_ranks"]
    assert votes["workers"] == ["vote-1", "vote-2", "vote-3"] and votes["documents"] == 4
    assert "not inter-annotator agreement" in votes["note"]
    assert "NOT INTER-ANNOTATOR AGREEMENT: vote-1, vote-2, vote-3" in format_report(report)
    create_researcher(app, ADMIN, admin=True)
    page = logged_in(app, ADMIN).get("/admin/studies/votes").get_data(as_text=True)
    assert 'id="vote-ranks">Not inter-annotator agreement: vote-1, vote-2, vote-3' in page
    assert "Agreement among vote ranks" in page


def test_annotators_are_not_vote_ranks_but_thresh_votes_are(app, tmp_path):
    """A Thresh edit naming its annotators makes annotators; one giving ``votes`` makes
    vote ranks (import-1, import-2), which the report labels."""
    from app.formats.records import Problem
    from app.formats.thresh import parse

    entries = [
        {"id": "named", "target": "Anna sings.", "edits": [
            {"category": "CharE", "output_idx": [[0, 4]], "annotators": ["ann", "bea"]}]},
        {"id": "voted", "target": "Bob dances.", "edits": [
            {"category": "CharE", "output_idx": [[0, 3]], "votes": 2}]},
    ]  # fmt: skip
    named, voted = parse(entries, Problem("thresh.json"))
    assert (named.vote_workers, voted.vote_workers) == (set(), {"import-1", "import-2"})
    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "votes", REPO / "taxonomies" / "snac.yaml")
        import_documents(session, study, [named, voted])
    from app.quality.reporting import study_report

    with app.app_context(), session_scope() as session:
        report = study_report(session, get_study(session, "votes"))
    votes = report["agreement"]["vote_ranks"]
    assert (votes["workers"], votes["documents"]) == (["import-1", "import-2"], 1)
