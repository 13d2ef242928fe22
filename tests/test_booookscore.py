"""BooookScore (Chang et al., ICLR 2024) as a protocol: its human annotation files come back
exactly through ``--format booookscore`` (the shared release and a file with several
annotators, unlabelled, multi-label, reversed, overlapping and identical relation spans,
and a summary submitted with no mark), and the report's BooookScore equals a hand count."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from app.formats import iter_export, parse_documents
from tests.conftest import BACKENDS, REPO, make_database_url, shared_file

TAXONOMY = REPO / "taxonomies" / "booookscore.yaml"


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def new_study(app, slug: str, path: Path) -> None:
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents

    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, slug, TAXONOMY, annotators_per_doc=3, suggestions="off")
        import_documents(session, study, parse_documents(path, "booookscore"))


def export(app, slug: str, layer: str = "workers") -> dict:
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        study = get_study(session, slug)
        return json.loads("".join(iter_export(session, study, "booookscore", layer)))


def content(data: dict) -> dict:
    """What BooookScore's files say, per book: the summary, and each single (span, label
    set, question) and relation (span_a, span_b, label set, question) with its annotator."""
    out = {}
    for book, entry in data.items():
        singles = Counter(
            (s.get("annotator"), s["span"], frozenset(s["labels"]), s["questions"])
            for s in entry["singles"]
        )
        relations = Counter(
            (
                r.get("annotator"),
                r["span_a"],
                r["span_b"],
                frozenset(r["shared_labels"]),
                r["shared_questions"],
            )
            for r in entry["relations"]
        )
        out[book] = (entry["summary"], singles, relations)
    return out


@pytest.mark.slow
def test_the_release_comes_back_and_again(app, tmp_path):
    path = shared_file("booookscore", "summary-gpt4-4096-hier.json")
    original = json.loads(path.read_text(encoding="utf-8"))
    new_study(app, "bs", path)
    exported = export(app, "bs")
    assert content(exported) == content(original)
    assert sum(len(e["singles"]) for e in exported.values()) == 257
    assert sum(len(e["relations"]) for e in exported.values()) == 96
    assert {w for e in exported.values() for w in e["annotators"]} == {path.stem}
    # the export read back into a fresh study gives the very same file
    again = tmp_path / "again.json"
    again.write_text(json.dumps(exported), encoding="utf-8")
    new_study(app, "bs-again", again)
    assert export(app, "bs-again") == exported


SUMMARY = "Ann met Bo. Bo left.\n\nLater, Cy came back. The end. \n\nCy won."
OTHER = {
    "summary": "Dee sang. Dee sang again.",
    "singles": [{"id": "x", "span": "sang", "questions": "Who?", "labels": ["salience"]}],
    "relations": [],
}
FILE = {
    "book-1": {
        "summary": SUMMARY,
        "annotators": ["ann", "bob", "cat"],
        "singles": [
            {
                "span": "Bo left.",
                "questions": "Where to?",
                "labels": ["event omission", "causal omission"],
                "annotator": "ann",
            },
            {"span": "Cy", "questions": "", "labels": ["entity omission"], "annotator": "bob"},
        ],
        "relations": [
            {  # span_b before span_a, in another paragraph, and no label at all
                "span_a": "Cy won.",
                "span_b": "Ann met Bo.",
                "shared_questions": "Why?",
                "shared_labels": [],
                "annotator": "ann",
            },
            {  # the same span twice
                "span_a": "The end.",
                "span_b": "The end.",
                "shared_questions": "Twice?",
                "shared_labels": ["duplication", "language"],
                "annotator": "bob",
            },
            {  # overlapping spans
                "span_a": "Later, Cy came",
                "span_b": "Cy came back.",
                "shared_questions": "q",
                "shared_labels": ["inconsistency"],
                "annotator": "bob",
            },
        ],
    },
    "book-2": {**OTHER, "annotators": ["ann"]},
}


def test_several_annotators_empty_work_and_odd_relations_come_back(app, tmp_path):
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(FILE), encoding="utf-8")
    new_study(app, "mixed", path)
    exported = export(app, "mixed")
    assert content(exported) == content(FILE)
    assert exported["book-1"]["annotators"] == ["ann", "bob", "cat"]  # cat: no mark
    assert exported["book-2"] == {**OTHER, "annotators": ["ann"]} | {
        "singles": [{"span": "sang", "questions": "Who?", "labels": ["salience"]}]
    }
    again = tmp_path / "again.json"
    again.write_text(json.dumps(exported), encoding="utf-8")
    new_study(app, "mixed-again", again)
    assert export(app, "mixed-again") == exported


def test_the_report_gives_the_booookscore_counted_by_hand(app, tmp_path):
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality.reporting import study_report

    path = tmp_path / "sys-a.json"
    path.write_text(json.dumps(FILE), encoding="utf-8")
    new_study(app, "scored", path)
    with app.app_context(), session_scope() as session:
        report = study_report(session, get_study(session, "scored"))
    figures = report["booookscore"]["workers"]
    book1, book2 = figures["per_document"]
    # book-1's sentences: "Ann met Bo." "Bo left." | "Later, Cy came back." "The end." |
    # "Cy won." = 5. ann: "Bo left." (2), the relation "Cy won." (5) + "Ann met Bo." (1):
    # 3 confusing, 1 - 3/5 = 0.4. bob: "Cy" is in "Later, Cy came back." (3), "The end."
    # (4), "Later, Cy came" / "Cy came back." (3 again): 2 confusing, 1 - 2/5 = 0.6.
    # cat: nothing marked, 1.0. The document: (0.4 + 0.6 + 1.0) / 3.
    assert book1["sentences"] == 5
    assert {w: v["confusing"] for w, v in book1["workers"].items()} == {
        "ann": 3,
        "bob": 2,
        "cat": 0,
    }
    assert book1["workers"]["ann"]["score"] == pytest.approx(0.4)
    assert book1["score"] == pytest.approx((0.4 + 0.6 + 1.0) / 3)
    # book-2: "Dee sang." "Dee sang again."; "sang" is placed at its first occurrence: 1/2
    assert book2["sentences"] == 2 and book2["score"] == pytest.approx(0.5)
    assert figures["per_source"] == {
        "sys-a": {"documents": 2, "score": pytest.approx(((0.4 + 0.6 + 1.0) / 3 + 0.5) / 2)}
    }
    assert figures["score"] == figures["per_source"]["sys-a"]["score"]
    assert report["booookscore"]["adjudicated"]["score"] is None  # nothing reviewed yet
    # a multi-label mark counts once per category in the distribution
    assert report["categories"]["overall"]["event_omission"] == 1
    assert report["categories"]["overall"]["causal_omission"] == 1


def test_bad_files_get_one_clear_line(tmp_path):
    from app.errors import InvalidInput

    cases = {
        "not in the summary": {
            "b": {"summary": "A b.", "singles": [{"span": "zzz", "labels": []}]}
        },
        "labels must be a list": {
            "b": {"summary": "A b.", "singles": [{"span": "A", "labels": "x"}]}
        },
        'is not in "annotators"': {
            "b": {
                "summary": "A b.",
                "annotators": ["x"],
                "singles": [{"span": "A", "labels": [], "annotator": "y"}],
            }
        },
        "has no text": {"b": {"summary": "  ", "singles": []}},
    }
    for message, data in cases.items():
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(InvalidInput, match=message):
            parse_documents(path, "booookscore")


def test_as_gold_a_mark_of_several_types_is_a_gold_error_per_type(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(FILE), encoding="utf-8")
    book1, _book2 = parse_documents(path, "booookscore", gold=True)
    assert not book1.work and not book1.empty_workers
    found = {(g.text, g.category) for g in book1.gold}
    assert {("Bo left.", "event_omission"), ("Bo left.", "causal_omission")} <= found
    assert ("Cy won.", "unlabelled") in found


@pytest.mark.slow
def test_the_report_and_compare_give_the_same_clean_sentence_share(app):
    """One rule (app/quality/sentences.py): on the shared release (one annotator per
    summary, so K = 1) every summary's BooookScore is compare's clean-sentence share of it,
    and compare's system figure is the ratio of the report's sums."""
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality.compare import compare_systems, document_counts
    from app.quality.reporting import study_report

    new_study(app, "release", shared_file("booookscore", "summary-gpt4-4096-hier.json"))
    with app.app_context(), session_scope() as session:
        study = get_study(session, "release")
        figures = study_report(session, study)["booookscore"]["workers"]
        counts, left_out = document_counts(session, study, min_workers=1)
        compared = compare_systems(session, study, min_workers=1, resamples=99)
    assert left_out == 0 and len(counts) == len(figures["per_document"]) == 100
    for document, counted in zip(figures["per_document"], counts, strict=True):
        (worker,) = document["workers"].values()
        assert (document["document"], document["sentences"]) == (
            counted.document,
            counted.sentences,
        )
        assert worker["confusing"] == counted.sentences - counted.clean
        assert document["score"] == pytest.approx(counted.clean / counted.sentences)
    sentences = sum(d["sentences"] for d in figures["per_document"])
    confusing = sum(w["confusing"] for d in figures["per_document"] for w in d["workers"].values())
    (system,) = compared["systems"]
    assert system["clean_sentence_share"]["value"] == pytest.approx(1 - confusing / sentences)
    assert figures["score"] == pytest.approx(0.8648, abs=5e-5)  # the mean over summaries
    assert 1 - confusing / sentences == pytest.approx(0.8673, abs=5e-5)  # over sentences


def test_the_acceptance_commands_bring_the_file_back(app, database_url, monkeypatch, tmp_path):
    """The BooookScore round trip as a researcher types it: ``study create`` with
    taxonomies/booookscore.yaml, ``import --format booookscore``, ``export --format
    booookscore --out F``: every summary, single and relation (with its annotator) back."""
    from click.testing import CliRunner

    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "summaries.json").write_text(json.dumps(FILE), encoding="utf-8")
    for args in (
        ["study", "create", "s", "--taxonomy", str(TAXONOMY)],
        ["import", "s", "summaries.json", "--format", "booookscore", "--no-ner"],
        ["export", "s", "--format", "booookscore", "--out", "F.json"],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
    exported = json.loads((tmp_path / "F.json").read_text(encoding="utf-8"))
    assert content(exported) == content(FILE)
    assert exported["book-1"]["annotators"] == ["ann", "bob", "cat"]
