"""The study report, from a real SQLite database built with the models' metadata."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from app.annotation.assignment_scores import score_against_gold
from app.documents.taxonomy import load_taxonomy, taxonomy_hash
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
from app.quality.reporting import format_report, study_report
from app.rules.scoring import sentence_bounds
from tests.conftest import shared_file

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
    assert progress["practice_documents"] == 0  # gold without a pass mark: a real document
    assert progress["complete_documents"] == 1
    assert progress["assignments"] == {"total": 5, "active": 1, "submitted": 4}
    assert progress["per_document"] == [
        {
            "document": "b1",
            "source": "books",
            "role": "real",
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
            "role": "real",
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
            "role": "real",
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


def test_assignment_gold_score(session, study):
    by_token = {a.token: a for a in session.query(Assignment)}
    score = score_against_gold(session, by_token["A-g1"])
    workers = {w["worker_id"]: w for w in study_report(session, study)["workers"]}
    assert score == workers["A"]["gold"]
    assert score["overall"]["f1"] == 0.5
    assert score_against_gold(session, by_token["A-b1"]) is None


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
    assert list(report) == [
        "study",
        "progress",
        "workers",
        "agreement",
        "categories",
        "detector",
        "attention",
        "attributes",
        "booookscore",
    ]
    assert report["attention"] == {
        "checks": 0,
        "documents": 0,
        "min_catch_rate": None,
        "workers": {},
    }
    assert "Attention checks" not in format_report(report)  # no table without checks
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


# --- acceptance: SNaC dev, three synthetic workers, report --json vs the CSV export ----

TOKEN = re.compile(r"\w+(?:['\u2019]\w+)*|[^\w\s]")  # the documented token definition
SNAC_CATEGORIES = ["CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE"]
SNAC_GROUPS = {
    "coherence": ["CharE", "RefE", "SceneE", "InconE"],
    "language": ["RepE", "GramE", "CorefE"],
}


def _placed(dev: dict) -> dict[tuple[str, str, int], tuple[int, int] | None]:
    """Where the import places each gold error (document, segment, entry number): the
    shared locate rule, repeated (span, type) entries at successive occurrences."""
    from app.documents.locating import locate

    out = {}
    for doc, segments in dev.items():
        for index, segment in segments.items():
            taken: dict[tuple[str, str], set] = {}
            for n, error in enumerate(segment["errors"]):
                used = taken.setdefault((error["span"].strip(), error["error_type"]), set())
                placed = locate(segment["text"], error["span"], taken=used)
                out[(doc, index, n)] = (placed.start, placed.end) if placed.found else None
                if placed.found:
                    used.add((placed.start, placed.end))
    return out


def _earliest(segments: dict) -> dict:
    """The document's first character as a span (the stand-in antecedent of paired marks)."""
    text = segments["0"]["text"]
    return {"segment": 0, "start": 0, "end": 1, "text": text[0]}


def _merge_overlapping(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each range replaced by the union of everything it overlaps, transitively (naive)."""
    out = list(ranges)
    changed = True
    while changed:
        changed = False
        for i, (s1, e1) in enumerate(out):
            for j, (s2, e2) in enumerate(out):
                if s1 < e2 and s2 < e1 and (s1, e1) != (s2, e2):
                    out[i] = out[j] = (min(s1, s2), max(e1, e2))
                    changed = True
    return out


def _naive_agreement(rows, texts, workers, scopes):
    """Alpha and two-agree per category, group and level, straight from CSV rows."""
    per_place = defaultdict(list)  # (worker, doc, seg, cat) -> [(start, end)]
    for row in rows:
        key = (row["document"], int(row["segment"]))
        start, end = int(row["span_start"]), int(row["span_end"])
        if scopes[row["category"]] == "sentence":  # widen to the sentences it touches
            touched = [(s, e) for s, e in sentence_bounds(texts[key]) if start < e and s < end]
            start, end = min(start, touched[0][0]), max(end, touched[-1][1])
        per_place[(row["worker_id"], *key, row["category"])].append((start, end))
    normalised = defaultdict(list)
    for doc, seg in texts:
        for cat in SNAC_CATEGORIES:
            owners, ranges = [], []
            for worker in workers:
                for r in per_place.get((worker, doc, seg, cat), []):
                    owners.append(worker)
                    ranges.append(r)
            for worker, r in zip(owners, _merge_overlapping(ranges), strict=True):
                normalised[(worker, doc, seg, cat)].append(r)
    units = {
        "token": [(k, m.start(), m.end()) for k in sorted(texts) for m in TOKEN.finditer(texts[k])],
        "sentence": [(k, s, e) for k in sorted(texts) for s, e in sentence_bounds(texts[k])],
        "segment": [(k, 0, len(texts[k])) for k in sorted(texts)],
    }
    units["token_normalised"] = units["token"]
    result = {}
    for name, cats in [
        *((c, [c]) for c in SNAC_CATEGORIES),
        *SNAC_GROUPS.items(),
        ("all", SNAC_CATEGORIES),
    ]:
        result[name] = {}
        for level, level_units in units.items():
            marks = normalised if level == "token_normalised" else per_place
            matrix = np.array(
                [
                    [
                        int(
                            any(
                                level == "segment" or (a < e and s < b)
                                for cat in cats
                                for a, b in marks.get((w, *key, cat), [])
                            )
                        )
                        for key, s, e in level_units
                    ]
                    for w in workers
                ]
            )
            column = matrix.sum(axis=0)
            alpha = None
            if 0 < column.sum() < matrix.size:
                alpha = float(
                    krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
                )
            result[name][level] = {
                "alpha": alpha,
                "two_agree": (column >= 2).sum() / (column >= 1).sum() if column.any() else None,
                "marked_units": int((column >= 1).sum()),
            }
    return result


@pytest.mark.slow
def test_snac_dev_report_json_equals_recomputation_from_csv(tmp_path):
    dev_path = shared_file("snac", "dev.json")
    dev = json.loads(dev_path.read_text(encoding="utf-8"))
    url = f"sqlite:///{tmp_path / 'snac.db'}"
    env = {**os.environ, "DATABASE_URL": url}
    marginalia = str(Path(sys.executable).parent / "marginalia")

    def run(*args: str) -> str:
        done = subprocess.run(
            [marginalia, *args], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("db", "upgrade")
    run(
        "study",
        "create",
        "snac-dev",
        "--taxonomy",
        str(ROOT / "taxonomies" / "snac.yaml"),
        "--annotators-per-doc",
        "3",
        "--suggestions",
        "off",
        "--allow-unseen-submit",  # the synthetic workers submit without moving through segments
    )
    run("import", "snac-dev", str(dev_path), "--format", "snac", "--gold", "--no-ner")

    # three synthetic workers: worker k marks every error that k or more annotators marked
    from app import create_app
    from app.annotation.add import add
    from app.annotation.assignments import open_assignment
    from app.annotation.connect import handle_of
    from app.annotation.submit import submit
    from app.db import session_scope
    from app.documents.studies import find_document, get_study

    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "test"})
    workers = ["w1", "w2", "w3"]
    placed = _placed(dev)
    with app.app_context(), session_scope() as session:
        study = get_study(session, "snac-dev")
        kinds = {c["id"]: c["kind"] for c in study.taxonomy["categories"]}
        for doc_id, segments in dev.items():
            document = find_document(session, study, doc_id)
            for k, worker in enumerate(workers, start=1):
                assignment, _ = open_assignment(session, study, document, worker)
                marked: set[tuple] = set()  # an exact repeat would be refused (409), as in the UI
                for index, segment in segments.items():
                    for n, error in enumerate(segment["errors"]):
                        found = placed[(doc_id, index, n)]
                        if error["votes"] < k or not found:
                            continue
                        mark = (index, *found, error["error_type"])
                        if mark in marked:
                            continue
                        marked.add(mark)
                        span = {
                            "segment": int(index),
                            "start": found[0],
                            "end": found[1],
                            "text": segment["text"][found[0] : found[1]],
                        }
                        add(
                            handle_of(session),
                            assignment.token,
                            {
                                **span,
                                "category": error["error_type"],
                                "client_id": f"{index}-{n}",
                                # a paired span must be strictly earlier: the
                                # document's first character stands in for it
                                "paired": _earliest(segments)
                                if kinds[error["error_type"]] == "paired"
                                else None,
                            },
                        )
                submit(handle_of(session), assignment.token)
        app.extensions["db_engine"].dispose()

    # γ and the worker models are checked against pygamma and by hand elsewhere
    # (test_unitizing_snac, test_reliability); here they would cost a minute of pygamma
    report = json.loads(run("report", "snac-dev", "--json", "--stored-figures"))
    rows = [
        r
        for r in csv.DictReader(io.StringIO(run("export", "snac-dev", "--format", "csv")))
        if r["completion_code"] and r["category"]
    ]
    texts = {(doc, int(i)): seg["text"] for doc, segs in dev.items() for i, seg in segs.items()}
    scopes = {c: "sentence" if c == "SceneE" else "span" for c in SNAC_CATEGORIES}

    # per-worker counts and the category distribution
    by_worker = {w["worker_id"]: w for w in report["workers"]}
    assert sorted(by_worker) == workers
    for worker in workers:
        assert by_worker[worker]["annotations"] == sum(r["worker_id"] == worker for r in rows)
        assert by_worker[worker]["documents_done"] == len(dev)
    assert report["categories"]["total"] == len(rows)
    assert report["categories"]["overall"] == {
        c: sum(r["category"] == c for r in rows) for c in SNAC_CATEGORIES
    }
    assert report["progress"]["complete_documents"] == len(dev)

    # gold P/R/F1: worker k marks exactly the gold errors with >= k votes, where the import
    # placed them, so each of its spans is one gold error's twin (strict P = 1) and recall
    # = those errors / all gold errors (the unplaced empty one counts, never matched)
    total = sum(len(seg["errors"]) for segs in dev.values() for seg in segs.values())
    for k, worker in enumerate(workers, start=1):
        mine = [r for r in rows if r["worker_id"] == worker]
        twins = sum(
            1
            for doc, segs in dev.items()
            for i, seg in segs.items()
            for n, e in enumerate(seg["errors"])
            if e["votes"] >= k and placed[(doc, i, n)]
        )
        overall = by_worker[worker]["gold"]["overall"]
        assert overall["predicted"] == len(mine) == twins and overall["gold"] == total
        assert overall["precision"] == 1.0
        assert overall["recall"] == pytest.approx(twins / total)
        lenient = by_worker[worker]["gold"]["lenient"]["overall"]
        assert lenient["precision"] == 1.0 and lenient["recall"] == overall["recall"]

    # agreement: every category, group and level, recomputed naively from the CSV rows
    expected = _naive_agreement(rows, texts, workers, scopes)
    agreement = report["agreement"]
    assert agreement["documents"] == len(dev) and agreement["workers"] == 3
    assert agreement["units"]["token"] == sum(len(TOKEN.findall(t)) for t in texts.values())
    got = {**agreement["per_category"], **agreement["per_group"], "all": agreement["all"]}
    for name, levels in expected.items():
        for level, stat in levels.items():
            assert got[name][level] == pytest.approx(stat), (name, level)


def test_recall_on_confident_suggestions_hand_computed(session, study):
    """Confident = score at or above the category's stored threshold (dev precision >= 0.9);
    categories without one say n/a and why, never a made-up threshold."""
    from app.models import DetectorVersion

    hero = session.query(Suggestion).filter_by(text="Hero").one()
    hero.score = 0.5  # below the CharE threshold: not confident
    calibration = {
        "version": "1",
        "categories": {
            "CharE": {"label": "character", "threshold": 0.8, "dev_precision": 0.93},
            "SceneE": {"label": "scene", "threshold": None, "reason": "dev precision never 0.9"},
        },
    }
    session.add(DetectorVersion(detector="rules", version="1", calibration=calibration))
    other = Suggestion(
        document_id=hero.document_id,
        segment=0,
        start=22,
        end=31,
        text="the party",
        category="CharE",
        detector="rules",
        detector_version="2",  # another version: the thresholds of version 1 say nothing
    )
    session.add(other)
    session.commit()
    report = study_report(session, study)
    confident = report["detector"]["confident"]
    assert report["detector"]["version"] == "1"
    assert confident["CharE"] == {
        "threshold": 0.8,
        "basis": "operating point",
        "detector_precision": 0.93,
        "detector_version": "1",
    }
    assert confident["SceneE"]["threshold"] is None
    assert confident["SceneE"]["reason"] == "dev precision never 0.9"
    assert "no threshold for label 'event'" in confident["RefE"]["reason"]
    assert confident["GramE"]["reason"] == "the detector does not suggest this category"
    workers = {w["worker_id"]: w for w in report["workers"]}
    # A and B each mark "Claudio" (B as "Claudio meets"): 1 of the 1 confident CharE
    # suggestion (Claudio, counted once over two runs; Hero at 0.5 is not confident).
    for worker in ("A", "B"):
        sure = workers[worker]["confident_recall"]
        assert (sure["recall"], sure["caught"], sure["total"]) == (1.0, 1, 1)
        assert sure["per_category"]["CharE"]["detector_precision"] == 0.93
        assert sure["per_category"]["SceneE"]["recall"] is None
    # the old figure over all suggestions: A caught Claudio and Bob's sentence, 2 of 4
    assert workers["A"]["suggestion_recall"]["recall"] == pytest.approx(2 / 4)
    c = workers["C"]["confident_recall"]  # did only m1, which has no suggestions
    assert c["recall"] is None and c["total"] == 0
    text = format_report(report)
    assert "recall on confident suggestions" in text and "n/a" in text
    assert "1.00 (1/1)" in text


def test_an_uncalibrated_version_reports_the_share_marked_with_its_caveat(session, study):
    """Version 1 stored no thresholds and has no suggestions on gold documents: every one of
    its suggestions counts (basis uncalibrated), in the categories it suggested."""
    report = study_report(session, study)
    confident = report["detector"]["confident"]
    assert confident["CharE"]["basis"] == "uncalibrated"
    assert confident["CharE"]["threshold"] is None
    assert confident["CharE"]["detector_precision"] is None
    assert "uncalibrated" in confident["SceneE"]["note"]
    # never suggested in this study: nothing to estimate
    assert confident["RefE"]["reason"] == "detector version 1 has no stored thresholds"
    workers = {w["worker_id"]: w for w in report["workers"]}
    # b1's distinct suggestions: Claudio, Hero (CharE), "Bob dances." (SceneE). A marked
    # Claudio and "Bob" (a shared sentence): 2 of 3; B marked "Claudio meets": 1 of 3.
    a = workers["A"]["confident_recall"]
    assert (a["basis"], a["recall"], a["caught"], a["total"]) == ("uncalibrated", 2 / 3, 2, 3)
    assert a["per_category"]["CharE"]["recall"] == pytest.approx(1 / 2)
    assert a["per_category"]["SceneE"]["recall"] == 1.0
    assert a["per_category"]["RefE"]["recall"] is None
    b = workers["B"]["confident_recall"]
    assert (b["recall"], b["caught"], b["total"]) == (1 / 3, 1, 3)
    c = workers["C"]["confident_recall"]
    assert c["recall"] is None and c["total"] == 0
    assert "0.67 (2/3) uncalibrated" in format_report(report)


def test_an_uncalibrated_version_imprecise_on_gold_documents_is_na(session, study):
    """Five RefE suggestions of version 1 on the gold document g1; one (the party) is a
    gold error: precision 1/5 = 0.20 < 0.9, so RefE says n/a and why."""
    g1 = session.query(Document).filter_by(external_id="g1").one()
    for start, end in [(0, 7), (8, 13), (14, 18), (19, 21), (22, 31)]:
        session.add(
            Suggestion(
                document_id=g1.id,
                segment=0,
                start=start,
                end=end,
                text=PARTY[start:end],
                category="RefE",
                detector="rules",
                detector_version="1",
            )
        )
    session.commit()
    report = study_report(session, study)
    refe = report["detector"]["confident"]["RefE"]
    assert refe["threshold"] is None and refe["detector_precision"] == pytest.approx(0.2)
    assert refe["reason"] == (
        "its precision on the study's gold documents is 0.20 (1/5), under 0.90"
    )
    a = {w["worker_id"]: w for w in report["workers"]}["A"]["confident_recall"]
    assert a["per_category"]["RefE"]["recall"] is None
    assert (a["caught"], a["total"]) == (2, 3)  # CharE and SceneE stay uncalibrated


def test_gold_documents_calibrate_an_uncalibrated_version_hand_computed():
    """9 of 10 IncomCoref suggestions on gold documents were right (0.90 >= 0.9): all its
    IncomCoref suggestions are confident; IncomDisco had 2 there (< 5): uncalibrated."""
    from app.quality.confident import confident_recall, confident_thresholds
    from app.rules.spans import Span

    taxonomy = {"categories": [{"id": "IncomCoref"}, {"id": "IncomDisco"}, {"id": "Other"}]}
    on_gold = {"IncomCoref": (9, 10), "IncomDisco": (2, 2)}
    thresholds = confident_thresholds(
        taxonomy, "openai:m", {}, on_gold, {"IncomCoref", "IncomDisco"}
    )
    assert thresholds["IncomCoref"]["basis"] == "gold documents"
    assert thresholds["IncomCoref"]["detector_precision"] == pytest.approx(0.9)
    assert thresholds["IncomDisco"]["basis"] == "uncalibrated"
    assert thresholds["Other"]["reason"] == "the detector does not suggest this category"
    llm = [
        Span("d", 0, 0, 3, "IncomCoref", "openai", score=1.0),
        Span("d", 0, 10, 14, "IncomCoref", "openai", score=1.0),
        Span("d", 1, 0, 5, "IncomCoref", "openai", score=1.0),
        Span("d", 1, 20, 30, "IncomDisco", "openai", score=1.0),
    ]
    marked = [Span("d", 0, 1, 2, "IncomCoref", "w"), Span("d", 1, 25, 26, "IncomDisco", "w")]
    got = confident_recall(marked, llm, thresholds)
    assert got["basis"] == "mixed" and (got["caught"], got["total"]) == (2, 4)
    assert got["per_category"]["IncomCoref"]["recall"] == pytest.approx(1 / 3)
    assert got["per_category"]["IncomCoref"]["basis"] == "gold documents"
    assert got["per_category"]["IncomDisco"]["recall"] == 1.0
    assert got["per_category"]["Other"]["recall"] is None


def test_every_reported_figure_is_defined_in_metrics_md(session, study):
    """Each key of the report's figures appears, in backticks, in docs/METRICS.md."""
    metrics = (ROOT / "docs" / "METRICS.md").read_text(encoding="utf-8")
    report = study_report(session, study)
    worker = next(w for w in report["workers"] if w["gold"])
    keys = set(report["progress"]) | set(report["progress"]["per_document"][0])
    keys |= set(worker) | set(worker["suggestion_recall"]) | set(worker["confident_recall"])
    keys |= set(worker["gold"]) | set(worker["gold"]["overall"])
    keys |= set(worker["quality"]) | set(worker["quality"]["consensus"])
    keys |= set(report["agreement"]["all"]) | set(report["agreement"]["all"]["token"])
    keys |= {"per_document", "per_pair"} & set(report["agreement"])
    keys |= set(report["detector"]) | set(report["detector"]["confident"]["CharE"])
    keys -= {"document", "source", "gold", "documents", "worker_id", "version"}  # labels
    missing = sorted(k for k in keys if f"`{k}`" not in metrics)
    assert missing == [], missing
