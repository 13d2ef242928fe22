"""MiniLM v5: the import's entity clusters as whole-document evidence for CharE
(``model_server.clusters``), hand-checked on small documents; the fallback heads for inputs
without clusters; and the worker passing a stored document's clusters to the detector."""

from __future__ import annotations

import math

import pytest

from model_server.clusters import (
    CLUSTER_FEATURES,
    Cluster,
    Mention,
    candidate_features,
    document_evidence,
    sentence_evidence,
)
from model_server.interface import DetectionInput
from model_server.pipeline import document_inputs

SEGMENTS = [
    "Anna met Bob, a baker. Rome was far.",
    "Later Bob left. Anna smiled at Bob.",
]
# Anna: 2 mentions (segment 0 at 0, segment 1 at 16); Bob: 3 (0:9, 1:6, 1:31)
ANNA = Cluster("PERSON", (Mention(1, 16, 20), Mention(0, 0, 4)))  # out of order on purpose
BOB = Cluster("PERSON", (Mention(0, 9, 12), Mention(1, 6, 9), Mention(1, 31, 34)))
ROME = Cluster("GPE", (Mention(0, 23, 27),))


def log20(n: int) -> float:
    return math.log1p(n) / math.log(20)


def test_the_offsets_of_the_example_are_right():
    assert SEGMENTS[0][0:4] == "Anna" and SEGMENTS[1][16:20] == "Anna"
    assert SEGMENTS[0][9:12] == SEGMENTS[1][6:9] == SEGMENTS[1][31:34] == "Bob"
    assert SEGMENTS[0][23:27] == "Rome"


def test_document_evidence_counts_mentions_before_and_after_in_reading_order():
    evidence = document_evidence(SEGMENTS, [ANNA, BOB, ROME])
    by_place = {(seg, m.start): feats for seg, items in evidence.items() for m, feats in items}
    assert (0, 23) not in by_place  # a place cluster is no person evidence
    anna_first, anna_later = by_place[(0, 0)], by_place[(1, 16)]
    assert anna_first == {
        "cl_person": 1.0,
        "cl_first": 1.0,
        "cl_earlier": 0.0,
        "cl_later": pytest.approx(log20(1)),
        "cl_first_introduced": 0.0,  # "Anna met": no descriptor
        "cl_first_earlier_segment": 0.0,
        "cl_segments": 1.0,  # named in both segments
    }
    assert anna_later["cl_first"] == 0.0
    assert anna_later["cl_earlier"] == pytest.approx(log20(1))
    assert anna_later["cl_later"] == 0.0
    assert anna_later["cl_first_earlier_segment"] == 1.0
    bob_last = by_place[(1, 31)]
    assert bob_last["cl_earlier"] == pytest.approx(log20(2))
    assert bob_last["cl_first_introduced"] == 1.0  # "Bob, a baker"
    assert by_place[(0, 9)]["cl_first"] == 1.0 and by_place[(0, 9)]["cl_later"] == pytest.approx(
        log20(2)
    )


def test_sentence_evidence_is_in_sentence_offsets_and_candidates_pick_theirs():
    evidence = document_evidence(SEGMENTS, [ANNA, BOB])
    # the second sentence of segment 1, "Anna smiled at Bob.", starts at 16
    people = sentence_evidence(evidence, 1, 16, 35)
    assert sorted((p.start, p.end) for p in people) == [(0, 4), (15, 18)]
    sentence = SEGMENTS[1][16:35]
    assert sentence[0:4] == "Anna" and sentence[15:18] == "Bob"
    assert candidate_features(people, 15, 18)["cl_earlier"] == pytest.approx(log20(2))
    assert candidate_features(people, 0, 11)["cl_first"] == 0.0  # "Anna smiled" overlaps Anna
    nobody = candidate_features(people, 5, 11)  # "smiled": no person mention
    assert nobody == dict.fromkeys(CLUSTER_FEATURES, 0.0)
    assert candidate_features(None, 0, 4) == nobody


def test_document_inputs_carry_people_only_with_clusters():
    plain = document_inputs(SEGMENTS)
    assert all(inp.people is None for _, _, inp in plain)
    items = document_inputs(SEGMENTS, [ANNA, BOB])
    assert [(seg, start) for seg, start, _ in items] == [(0, 0), (0, 23), (1, 0), (1, 16)]
    assert [len(inp.people) for _, _, inp in items] == [2, 0, 1, 2]
    first = items[0][2]
    assert {first.sentence[p.start : p.end] for p in first.people} == {"Anna", "Bob"}


def test_name_candidates_get_the_cluster_features_only_when_clusters_are_given():
    from model_server.features import analyse, parse_inputs

    items = document_inputs(SEGMENTS, [ANNA, BOB])
    inputs = [inp for _, _, inp in items] + [DetectionInput("", SEGMENTS[0].split(".")[0] + ".")]
    analysed = analyse(zip(parse_inputs(inputs), inputs, strict=True))
    bob = next(c for c in analysed[0].candidates if c.label == "character" and c.text == "Bob")
    assert bob.feats["cl_person"] == 1.0 and bob.feats["cl_first"] == 1.0
    assert bob.feats["cl_first_introduced"] == 1.0
    plain = [c for c in analysed[-1].candidates if c.label == "character"]
    assert plain and not any(k.startswith("cl_") for c in plain for k in c.feats)
    events = [c for sc in analysed for c in sc.candidates if c.label in ("event", "scene")]
    assert not any(k.startswith("cl_") for c in events for k in c.feats)


def test_the_shipped_head_reads_clusters_and_falls_back_without_them():
    from model_server.minilm import MiniLMDetector
    from model_server.minilm_train import without_clusters

    detector = MiniLMDetector.load("model_server/models/minilm")
    assert detector.reads_clusters
    fallback = detector.fallback
    for label in ("character", "role"):
        inputs, plain_inputs = (d.heads[label]["mean"].shape[0] for d in (detector, fallback))
        assert inputs == plain_inputs + len(CLUSTER_FEATURES)
    assert fallback.heads["event"] is not None
    for label in ("character", "role"):  # CharE: 5 averaged networks, the fallback logistic
        assert len(detector.heads[label]["mlp"]) == 5 and fallback.heads[label]["mlp"] is None
    items = document_inputs(SEGMENTS, [ANNA, BOB])
    with_people = [inp for _, _, inp in items]
    without = [inp._replace(people=None) for inp in with_people]
    assert detector.for_inputs(with_people) is detector
    assert detector.for_inputs(without) is fallback
    # each input is scored by its own group's heads, in input order
    mixed = [with_people[0], without[0]]
    scored = detector.probabilities(mixed)
    assert {k for k, *_ in scored} == {0, 1}
    first = {(c.text, lab): p for k, c, lab, p in scored if k == 0}
    second = {(c.text, lab): p for k, c, lab, p in scored if k == 1}
    assert first[("Bob", "character")] == pytest.approx(
        {(c.text, lab): p for k, c, lab, p in detector.probabilities(with_people[:1])}[
            ("Bob", "character")
        ]
    )
    assert second[("Bob", "character")] == pytest.approx(
        {(c.text, lab): p for k, c, lab, p in fallback.probabilities(without[:1])}[
            ("Bob", "character")
        ]
    )
    assert without_clusters([]) == []


def test_an_mlp_head_averages_its_networks_and_a_logistic_head_is_unchanged():
    import numpy as np

    from model_server.minilm import _networks, head_probability

    x = np.asarray([math.atanh(0.5), 0.0], dtype=np.float32)
    one = {"w1": [[1.0, 0.0], [0.0, 1.0]], "b1": [0.0, 0.0], "w2": [1.0, -1.0], "b2": 0.5}
    # hidden = tanh(x) = [0.5, 0]; z = 0.5 + 0.5 = 1
    assert head_probability({"mlp": _networks([one])}, x) == pytest.approx(
        1 / (1 + math.exp(-1.0)), abs=1e-6
    )
    other = {**one, "b2": -1.0}  # z = 0.5 - 1 = -0.5
    assert head_probability({"mlp": _networks([one, other])}, x) == pytest.approx(
        (1 / (1 + math.exp(-1.0)) + 1 / (1 + math.exp(0.5))) / 2, abs=1e-6
    )
    logistic = {"w": np.asarray([2.0, 1.0], np.float32), "b": -1.0, "mlp": None}
    assert head_probability(logistic, np.asarray([0.5, 1.0], np.float32)) == pytest.approx(
        1 / (1 + math.exp(-1.0)), abs=1e-6
    )


@pytest.fixture
def database_url(request, tmp_path):
    from tests.conftest import make_database_url

    return make_database_url("postgres", request, tmp_path)


@pytest.mark.postgres
def test_the_worker_gives_the_detector_the_stored_clusters_of_a_real_document(app):
    """A SNaC train summary imported with spaCy (Entity / EntityMention rows), detected by
    the worker on Postgres: the detector's inputs carry the stored person mentions."""
    from sqlalchemy import select

    from app.db import session_scope
    from app.detection.clusters import stored_clusters
    from app.detection.worker import work
    from app.documents.studies import create_study, import_documents
    from app.entities import load_pipeline
    from app.formats import parse_documents
    from app.models import Document, EntityMention, Suggestion
    from model_server.minilm import MiniLMDetector
    from tests.conftest import REPO, shared_file

    document = parse_documents(shared_file("snac", "train.json"), "snac")[0]
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session, "clusters", REPO / "taxonomies/snac.yaml", suggestions="shown"
        )
        import_documents(session, study, [document], nlp=load_pipeline(None))
    minilm = MiniLMDetector.load("model_server/models/minilm")
    seen: list[DetectionInput] = []

    class Recording:
        name, version = minilm.name, minilm.version
        operating_points = minilm.operating_points

        def detect(self, batch):
            seen.extend(batch)
            return minilm.detect(batch)

    stats = work(app.extensions["db_sessionmaker"], Recording(), once=True)
    assert stats["done"] == 1 and stats["failed"] == 0
    with app.app_context(), session_scope() as session:
        doc_id = session.scalar(select(Document.id))
        stored = session.scalars(
            select(EntityMention).where(EntityMention.document_id == doc_id)
        ).all()
        clusters = stored_clusters(session, doc_id)
        suggestions = session.scalars(select(Suggestion)).all()
    assert stored and clusters and sum(len(c.mentions) for c in clusters) == len(stored)
    assert all(inp.people is not None for inp in seen)
    given = sum(len(inp.people) for inp in seen)
    assert given == len(stored)  # every stored mention reached its sentence
    named = {inp.sentence[p.start : p.end] for inp in seen for p in inp.people}
    assert named <= {document.segments[m.segment][m.start : m.end] for m in stored}
    assert any(s.category == "CharE" for s in suggestions)


def test_minilm_training_without_a_cluster_finder_is_a_one_line_error(tmp_path):
    from click.testing import CliRunner

    from model_server import clusters
    from model_server.cli import detector
    from tests.conftest import shared_file

    registered = clusters.cluster_finder()
    clusters.set_cluster_finder(None)
    try:
        out = tmp_path / "head"
        train = str(shared_file("snac", "dev.json"))
        result = CliRunner().invoke(
            detector, ["train", "--backend", "minilm", "--train-file", train, "--out", str(out)]
        )
    finally:
        clusters.set_cluster_finder(registered)
    assert result.exit_code == 1
    assert "needs the entity clusters of the import" in result.output
    assert not out.exists()
