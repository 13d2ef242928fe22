"""A detector learned from a study's own curated work, end to end: a tiny study of
our own writing (sailing stories with baking sentences marked off topic by the review),
``marginalia detector train --study``, ``marginalia study detector``, the worker, and the
suggestions on a new document in the worker's page payload; SQLite and Postgres."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.db import session_scope
from app.models import AdjudicatedError, DetectorVersion, Document, DocumentReview, Suggestion
from tests.conftest import BACKENDS, make_database_url, make_study

SAILING = [
    "The crew raised the mainsail before the tide turned.",
    "Wind filled the jib and the boat heeled to port.",
    "Mara checked the chart and set a course past the lighthouse.",
    "Waves broke over the bow as they rounded the headland.",
    "The skipper eased the sheet to keep the dinghy upright.",
    "By noon the harbour wall was a thin grey line behind them.",
    "Gulls followed the wake, crying over the foam.",
    "They dropped anchor in a sheltered cove at dusk.",
    "The mast creaked as the swell rolled under the hull.",
    "Tom coiled the wet ropes on the deck.",
    "A squall darkened the water to the west.",
    "They reefed the sail and waited for the gust to pass.",
    "The compass needle swung north as they tacked.",
    "Spray stung their faces at the tiller.",
    "The current pushed them toward the rocks off the point.",
    "At dawn they weighed anchor and sailed for the island.",
]
BAKING = [
    "Knead the dough for ten minutes until it is smooth and elastic.",
    "Preheat the oven to two hundred degrees and grease the tin.",
    "Fold the butter into the flour with a cold knife.",
    "Let the bread rise in a warm kitchen for an hour.",
    "Whisk the eggs with sugar until the batter is pale.",
    "Sprinkle the loaf with sesame seeds before baking it.",
    "The sourdough starter needs feeding with rye flour every day.",
    "Brush the pastry with milk so the crust turns golden.",
]
TAXONOMY = """name: Sailing stories
version: 1
categories:
  - id: off_topic
    label: Off topic
    definition: A sentence that has nothing to do with the story.
  - id: repetition
    label: Repetition
    definition: The same thing said twice.
"""


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def story(n: int) -> tuple[list[str], list[tuple[int, str]]]:
    """Document ``n``: two segments of three sentences, one of them about baking."""
    sail = [SAILING[(n * 3 + k) % len(SAILING)] for k in range(4)]
    bake = [BAKING[(n * 2) % len(BAKING)], BAKING[(n * 2 + 1) % len(BAKING)]]
    segments = [[sail[0], bake[0], sail[1]], [sail[2], sail[3], bake[1]]]
    return [" ".join(s) for s in segments], [(0, bake[0]), (1, bake[1])]


def curate(app, n_docs: int, first: int = 0) -> None:
    """The review of documents ``first`` .. ``n_docs - 1`` done, with its accepted errors:
    every baking sentence off topic, one repetition (in document 0)."""
    with app.app_context(), session_scope() as session:
        docs = session.scalars(select(Document).order_by(Document.position)).all()
        for n, doc in enumerate(docs[:n_docs]):
            if n < first:
                continue
            segments, marked = story(n)
            for k, (segment, text) in enumerate(marked):
                start = segments[segment].index(text)
                session.add(
                    AdjudicatedError(
                        document_id=doc.id,
                        candidate=f"c{n}-{k}",
                        decision="accepted",
                        origin="reviewed",
                        segment=segment,
                        start=start,
                        end=start + len(text),
                        text=text,
                        category="off_topic",
                        decided_by="@ada",
                    )
                )
            if n == 0:
                session.add(
                    AdjudicatedError(
                        document_id=doc.id,
                        candidate="rep",
                        decision="accepted",
                        origin="reviewed",
                        segment=0,
                        start=0,
                        end=9,
                        text=segments[0][:9],
                        category="repetition",
                        decided_by="@ada",
                    )
                )
            session.add(DocumentReview(document_id=doc.id, status="done", updated_by="ada"))


class NotThisOne:
    """The worker's own detector: a study with a learned model must never reach it."""

    name, version = "shipped", "0"

    def detect(self, batch):
        raise AssertionError("the study's learned model was not used")


@pytest.mark.slow  # loads spaCy, torch and the encoder: ~10 s per backend alone, more under load
def test_learned_detector_trains_on_curated_work_and_suggests_to_the_worker(
    app, client, database_url, tmp_path, monkeypatch
):
    from app.cli import main
    from app.detection.worker import work

    taxonomy = tmp_path / "sailing.yaml"
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    curated = 8
    make_study(
        app,
        taxonomy=str(taxonomy),
        documents=[(f"story-{n}", story(n)[0]) for n in range(curated)],
        suggestions="shown",
    )
    curate(app, curated)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runner = CliRunner()
    out = tmp_path / "model"

    trained = runner.invoke(main, ["detector", "train", "--study", "demo", "--out", str(out)])
    import traceback

    assert trained.exit_code == 0, "".join(traceback.format_exception(*trained.exc_info))
    assert "heads: off_topic; skipped: repetition" in trained.output
    head = json.loads((out / "head.json").read_text())
    card = (out / "MODEL_CARD.md").read_text()
    figures = head["card"]["categories"]["off_topic"]
    assert figures["sentences"] == 2 * curated and figures["documents"] == curated
    # 16 of 48 sentences: marking every sentence scores 2 * (1/3) / (1 + 1/3) = 0.5
    assert figures["baseline_f1"] == 0.5
    assert figures["best_f1"]["f1"] > 0.8 and figures["suggested"]
    assert head["card"]["skipped"]["repetition"]["sentences"] == 1
    # any error: 17 sentences (16 off topic, 1 repetition); the off_topic head at its
    # balanced point finds at most the 16, so F1 <= 2 * 16 / (2 * 16 + 1) = 0.9697
    assert 0.8 < head["card"]["any_error"]["f1"] <= 0.9697
    assert "| off_topic |" in card and "repetition (1 sentences in 1 documents" in card

    used = runner.invoke(main, ["study", "detector", "demo", str(out)])
    assert used.exit_code == 0, used.output
    assert (
        used.output.startswith(f"{curated} documents queued") and "learned demo.8d+" in used.output
    )

    new_segments, new_marked = story(curated + 1)
    from app.documents.studies import get_study, import_documents
    from app.formats import DocumentInput

    with app.app_context(), session_scope() as session:
        import_documents(session, get_study(session, "demo"), [DocumentInput("new", new_segments)])
    factory = app.extensions["db_sessionmaker"]
    with app.app_context():
        stats = work(factory, NotThisOne(), once=True, figures=False)
    assert stats["done"] == curated + 1 and stats["failed"] == 0

    opened = client.post(
        "/api/assignments", json={"study": "demo", "document": "new", "worker_id": "w1"}
    )
    token = opened.get_json()["token"]
    shown = client.get(f"/api/assignments/{token}").get_json()["suggestions"]
    assert {(s["segment"], s["text"], s["category"]) for s in shown} == {
        (segment, text, "off_topic") for segment, text in new_marked
    }
    with app.app_context(), session_scope() as session:
        doc = session.scalar(select(Document).where(Document.external_id == "new"))
        stored = session.scalars(select(Suggestion).where(Suggestion.document_id == doc.id)).all()
        assert {s.detector for s in stored} == {"learned"}
        version = stored[0].detector_version
        assert version.startswith("demo.8d+")
        row = session.scalar(select(DetectorVersion).where(DetectorVersion.version == version))
        assert set(row.calibration["categories"]) == {"off_topic"}
    for s in shown:
        assert new_segments[s["segment"]][s["start"] : s["end"]] == s["text"]

    back = runner.invoke(main, ["study", "detector", "demo", "--shipped"])
    assert back.exit_code == 0 and back.output.rstrip().endswith("shipped")


def test_a_model_for_other_categories_is_refused_and_changes_nothing(
    app, database_url, tmp_path, monkeypatch
):
    from app.cli import main

    make_study(app)  # SNaC's taxonomy: no off_topic category
    out = tmp_path / "model"
    out.mkdir()
    head = {"format": "marginalia-learned-detector/1", "model": "x", "heads": {}}
    head["heads"]["off_topic"] = {"w": [0.0], "b": 0.0, "mean": [0.0], "std": [1.0]}
    head["heads"]["off_topic"]["threshold"] = 0.5
    (out / "head.json").write_text(json.dumps(head))
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    result = CliRunner().invoke(main, ["study", "detector", "demo", str(out)])
    assert result.exit_code == 1
    assert "does not have: off_topic" in result.output
    head["heads"]["off_topic"]["w"] = [0.0, 1.0]  # a head that could never score a sentence
    (out / "head.json").write_text(json.dumps(head))
    result = CliRunner().invoke(main, ["study", "detector", "demo", str(out)])
    assert result.exit_code == 1 and "unequal sizes" in result.output
    (out / "head.json").write_text("{not json")
    result = CliRunner().invoke(main, ["study", "detector", "demo", str(out)])
    assert result.exit_code == 1 and "not a learned detector" in result.output
    with app.app_context(), session_scope() as session:
        from app.models import DetectorModel, Study

        assert session.scalars(select(DetectorModel)).all() == []
        assert "detector_model" not in (session.scalar(select(Study)).settings or {})
