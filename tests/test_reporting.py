"""The study report, from a real SQLite database built with the models' metadata."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import krippendorff
import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from app.models import (
    Annotation,
    Assignment,
    Base,
    Document,
    GoldError,
    Segment,
    Study,
    Suggestion,
)
from app.reporting import format_report, study_report
from app.taxonomy import load_taxonomy, taxonomy_hash

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

#        0         1         2         3
#        0123456789012345678901234567890123
PARTY = "Claudio meets Hero at the party."  # 7 tokens, 1 sentence
THREE = "Anna sings. Bob dances. Carl leaves."  # 9 tokens, 3 sentences


@pytest.fixture
def session(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'report.db'}")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        yield session
    engine.dispose()


def _document(session, study, external_id, segments, source, position, is_gold=False):
    doc = Document(
        study=study, external_id=external_id, source=source, position=position, is_gold=is_gold
    )
    doc.segments = [Segment(index=i, text=text) for i, text in enumerate(segments)]
    session.add(doc)
    session.flush()
    return doc


def _assignment(session, study, doc, worker, status, seconds=None, condition=None):
    a = Assignment(
        token=f"{worker}-{doc.external_id}",
        study=study,
        document=doc,
        worker_id=worker,
        status=status,
        created_at=T0,
        condition=condition,
        submitted_at=T0 + timedelta(seconds=seconds) if seconds else None,
    )
    session.add(a)
    session.flush()
    return a


def _annotate(session, assignment, segment, start, end, category, text, removed=False):
    session.add(
        Annotation(
            assignment_id=assignment.id,
            segment=segment,
            start=start,
            end=end,
            text=text,
            category=category,
            client_id=f"c{start}-{end}-{category}",
            removed_at=T0 if removed else None,
        )
    )


@pytest.fixture
def study(session):
    taxonomy = load_taxonomy(ROOT / "taxonomies" / "snac.yaml")
    study = Study(
        slug="demo",
        title="Demo",
        taxonomy_name=taxonomy["name"],
        taxonomy=taxonomy,
        taxonomy_hash=taxonomy_hash(taxonomy),
        annotators_per_doc=2,
        suggestions="hidden",
    )
    session.add(study)
    session.flush()
    b1 = _document(session, study, "b1", [PARTY, THREE], "books", 0)
    m1 = _document(session, study, "m1", ["Dora waits."], "movies", 1)
    g1 = _document(session, study, "g1", [PARTY], "books", 2, is_gold=True)

    a_b1 = _assignment(session, study, b1, "A", "submitted", 120, "assisted")  # 60 s/segment
    _annotate(session, a_b1, 0, 0, 7, "CharE", "Claudio")
    _annotate(session, a_b1, 1, 12, 15, "SceneE", "Bob")
    _annotate(session, a_b1, 0, 22, 31, "RefE", "the party", removed=True)  # removed: ignored
    b_b1 = _assignment(session, study, b1, "B", "submitted", 60, "unassisted")  # 30 s/segment
    _annotate(session, b_b1, 0, 0, 13, "CharE", "Claudio meets")
    _annotate(session, b_b1, 0, 26, 31, "RefE", "party")
    a_g1 = _assignment(session, study, g1, "A", "submitted", 30, "assisted")  # 30 s/segment
    _annotate(session, a_g1, 0, 0, 13, "CharE", "Claudio meets")
    _annotate(session, a_g1, 0, 19, 21, "CharE", "at")
    b_m1 = _assignment(session, study, m1, "B", "active")
    _annotate(session, b_m1, 0, 0, 4, "CharE", "Dora")  # active assignment: ignored
    _assignment(session, study, m1, "C", "submitted", 10)  # saw no errors

    for segment, start, end, category, text in [
        (0, 0, 7, "CharE", "Claudio"),
        (0, 14, 18, "CharE", "Hero"),
        (1, 12, 23, "SceneE", "Bob dances."),
        (0, 0, 7, "CharE", "Claudio"),  # the same suggestion from a second detector run
    ]:
        session.add(
            Suggestion(
                document_id=b1.id,
                segment=segment,
                start=start,
                end=end,
                text=text,
                category=category,
                detector="rules",
                detector_version="1",
            )
        )
    session.add(
        GoldError(
            document_id=g1.id, segment=0, start=None, end=None, text="Claudio", category="CharE"
        )
    )
    session.add(
        GoldError(document_id=g1.id, segment=0, start=22, end=31, text="the party", category="RefE")
    )
    session.commit()
    return study


def test_progress(session, study):
    progress = study_report(session, study)["progress"]
    assert progress["documents"] == 3 and progress["gold_documents"] == 1
    assert progress["complete_documents"] == 1
    assert progress["assignments"] == {"total": 5, "active": 1, "submitted": 4}
    assert progress["per_document"] == [
        {
            "document": "b1",
            "source": "books",
            "gold": False,
            "segments": 2,
            "active": 0,
            "submitted": 2,
            "needed": 2,
            "complete": True,
        },
        {
            "document": "m1",
            "source": "movies",
            "gold": False,
            "segments": 1,
            "active": 1,
            "submitted": 1,
            "needed": 2,
            "complete": False,
        },
        {
            "document": "g1",
            "source": "books",
            "gold": True,
            "segments": 1,
            "active": 0,
            "submitted": 1,
            "needed": 2,
            "complete": False,
        },
    ]


def test_workers(session, study):
    workers = {w["worker_id"]: w for w in study_report(session, study)["workers"]}
    assert list(workers) == ["A", "B", "C"]
    a, b, c = workers["A"], workers["B"], workers["C"]
    assert (a["documents_done"], a["documents_active"], a["annotations"], a["segments"]) == (
        2,
        0,
        4,
        3,
    )
    assert (b["documents_done"], b["documents_active"], b["annotations"]) == (1, 1, 2)
    assert (c["documents_done"], c["annotations"]) == (1, 0)
    assert a["seconds_per_segment"] == 45.0  # median of 60 and 30
    assert b["seconds_per_segment"] == 30.0 and c["seconds_per_segment"] == 10.0
    assert a["conditions"] == ["assisted"] and c["conditions"] == []

    # b1's suggestions, the duplicate counted once: Claudio, Hero (CharE), Bob dances (SceneE)
    # A: "Claudio" catches Claudio; "Bob" (SceneE) is in the suggested sentence -> 2/3
    rec = a["suggestion_recall"]
    assert (rec["caught"], rec["total"]) == (2, 3)
    assert rec["per_category"]["CharE"] == {"recall": 0.5, "caught": 1, "total": 2}
    assert rec["per_category"]["SceneE"] == {"recall": 1.0, "caught": 1, "total": 1}
    assert [m["text"] for m in rec["missed"]] == ["Hero"]
    # B: "Claudio meets" catches Claudio only -> 1/3
    assert b["suggestion_recall"]["recall"] == pytest.approx(1 / 3)
    assert c["suggestion_recall"]["recall"] is None

    # A on gold g1: predicted CharE "Claudio meets", CharE "at"; gold CharE "Claudio"
    # (located from its text), RefE "the party".
    gold = a["gold"]
    assert gold["documents"] == 1
    assert gold["per_category"]["CharE"]["precision"] == 0.5
    assert gold["per_category"]["CharE"]["recall"] == 1.0
    assert gold["per_category"]["RefE"]["recall"] == 0.0
    assert gold["per_category"]["RefE"]["precision"] is None
    assert gold["overall"]["precision"] == 0.5 and gold["overall"]["recall"] == 0.5
    assert gold["overall"]["f1"] == 0.5
    assert b["gold"] is None and c["gold"] is None


def _alpha(matrix):
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")


def test_agreement(session, study):
    agreement = study_report(session, study)["agreement"]
    # only b1 has two workers (A, B): 7 + 9 tokens, 1 + 3 sentences, 2 segments
    assert agreement["documents"] == 1 and agreement["workers"] == 3
    assert agreement["units"] == {"token": 16, "sentence": 4, "segment": 2}
    char = agreement["per_category"]["CharE"]
    # CharE tokens: Claudio (1,1), meets (0,1), 14 x (0,0)
    # o11 = 2, o01 = o10 = 1, o00 = 28; n0 = 29, n1 = 3, n = 32
    # alpha = 1 - 31 * 2 / (2 * 29 * 3) = 1 - 62/174 = 56/87
    assert char["token"]["alpha"] == pytest.approx(56 / 87)
    assert _alpha([[1, 0] + [0] * 14, [1, 1] + [0] * 14]) == pytest.approx(56 / 87)
    assert char["token"]["two_agree"] == 0.5
    assert char["token_normalised"]["alpha"] == 1.0
    assert char["sentence"]["alpha"] == 1.0 and char["segment"]["alpha"] == 1.0
    # coherence group tokens: A = Claudio, Bob dances . (SceneE widened to its sentence);
    # B = Claudio meets, party. Units (A,B): Claudio (1,1); meets, party (0,1);
    # Bob, dances, . (1,0); 10 x (0,0). o11 = 2, o01 = o10 = 5, o00 = 20;
    # n0 = 25, n1 = 7, n = 32 -> alpha = 1 - 31 * 10 / (2 * 25 * 7) = 4/35
    coherence = agreement["per_group"]["coherence"]["token"]
    assert coherence["alpha"] == pytest.approx(4 / 35)
    a_row = [1, 0, 0, 0, 0, 0, 0] + [0, 0, 0, 1, 1, 1, 0, 0, 0]
    b_row = [1, 1, 0, 0, 0, 1, 0] + [0] * 9
    assert _alpha([a_row, b_row]) == pytest.approx(4 / 35)
    assert coherence["two_agree"] == pytest.approx(1 / 6)
    assert agreement["per_group"]["language"]["token"]["alpha"] is None
    assert list(agreement["per_category"]) == [
        "CharE",
        "RefE",
        "SceneE",
        "InconE",
        "RepE",
        "GramE",
        "CorefE",
    ]


def test_category_distribution(session, study):
    categories = study_report(session, study)["categories"]
    assert categories["total"] == 6
    assert categories["overall"] == {
        "CharE": 4,
        "RefE": 1,
        "SceneE": 1,
        "InconE": 0,
        "RepE": 0,
        "GramE": 0,
        "CorefE": 0,
    }
    assert categories["per_source"]["books"]["CharE"] == 4
    assert sum(categories["per_source"]["movies"].values()) == 0
    assert list(categories["per_source"]) == ["books", "movies"]


def test_report_is_json_and_formats_for_a_terminal(session, study):
    report = study_report(session, study)
    assert list(report) == ["study", "progress", "workers", "agreement", "categories"]
    assert report["study"]["slug"] == "demo" and report["study"]["annotators_per_doc"] == 2
    assert json.loads(json.dumps(report)) == report
    text = format_report(report)
    assert "Study demo" in text
    assert "0.67 (2/3)" in text  # A's suggestion recall
    assert "0.64" in text  # CharE token alpha 56/87
    assert "[coherence]" in text and "books" in text
    for worker in ("A", "B", "C"):
        assert f"│ {worker} " in text or f"| {worker} " in text


def test_empty_study(session):
    taxonomy = load_taxonomy(ROOT / "taxonomies" / "snac.yaml")
    study = Study(slug="empty", taxonomy_name="x", taxonomy=taxonomy, taxonomy_hash="h")
    session.add(study)
    session.commit()
    report = study_report(session, study)
    assert report["progress"]["documents"] == 0 and report["workers"] == []
    assert report["agreement"]["all"]["token"]["alpha"] is None
    assert "Study empty" in format_report(report)
