"""The bulk store (app/documents/storing.py) on SQLite and Postgres: the rows it writes are
the rows the one-object-at-a-time store wrote (positions, segments in order, gold offsets,
entities and their mentions, detection jobs), and a refused import writes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.db import session_scope
from app.documents.records import DocumentInput, GoldSpan
from app.documents.studies import get_study, import_documents
from app.entities.results import DocumentEntities, FoundEntity, FoundMention
from app.errors import InvalidInput
from app.models import DetectionJob, Document, Entity, EntityMention, GoldError, Segment
from tests.conftest import BACKENDS, make_database_url, make_study


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def stored(app):
    with app.app_context(), session_scope() as session:
        documents = session.execute(
            select(Document.external_id, Document.position, Document.is_gold).order_by(
                Document.position
            )
        ).all()
        segments = session.execute(
            select(Document.external_id, Segment.index, Segment.text)
            .join(Document)
            .order_by(Document.position, Segment.index)
        ).all()
        mentions = session.execute(
            select(Document.external_id, Entity.name, EntityMention.segment, EntityMention.start)
            .join(Entity, EntityMention.entity_id == Entity.id)
            .join(Document, EntityMention.document_id == Document.id)
            .order_by(EntityMention.id)
        ).all()
        jobs = session.scalar(select(func.count()).select_from(DetectionJob))
        gold = session.execute(
            select(GoldError.segment, GoldError.start, GoldError.end, GoldError.antecedents)
        ).all()
    return documents, segments, mentions, jobs, gold


def test_bulk_store_writes_every_row(app):
    make_study(app, documents=[("doc-0", ["Existing."])], suggestions="hidden")
    long_key = "k"
    entities = DocumentEntities(
        entities=[
            FoundEntity(long_key + "-anna", "Anna Karenina", "PERSON", 0),
            FoundEntity(long_key + "-bob", "Bob", "PERSON", 1),
        ],
        mentions=[
            FoundMention(long_key + "-anna", 0, 0, 4, "PERSON"),
            FoundMention(long_key + "-bob", 1, 4, 7, "PERSON"),
            FoundMention(long_key + "-anna", 1, 0, 3, "PERSON"),
        ],
    )
    documents = [
        DocumentInput("a", ["Anna met Bob.", "She saw Bob."]),
        DocumentInput("b", ["One.", "Two.", "Three."]),
    ]
    with app.app_context():
        with session_scope() as session:
            study = get_study(session, "demo")
        with session_scope() as session:
            result = import_documents(
                session, study, documents, entities=[entities, DocumentEntities()]
            )
    assert (result.documents, result.segments, result.entities, result.detection_jobs) == (
        2,
        5,
        2,
        2,
    )
    docs, segments, mentions, jobs, _ = stored(app)
    assert docs == [("doc-0", 0, False), ("a", 1, False), ("b", 2, False)]
    assert [s for s in segments if s[0] != "doc-0"] == [
        ("a", 0, "Anna met Bob."),
        ("a", 1, "She saw Bob."),
        ("b", 0, "One."),
        ("b", 1, "Two."),
        ("b", 2, "Three."),
    ]
    # Each mention points at its own entity (ids come back in insert order).
    assert mentions == [
        ("a", "Anna Karenina", 0, 0),
        ("a", "Bob", 1, 4),
        ("a", "Anna Karenina", 1, 0),
    ]
    assert jobs == 1 + 2  # doc-0's and the two new documents'


def test_gold_rows_and_a_refused_import_stores_nothing(app):
    make_study(app, documents=[("doc-0", ["Existing."])], suggestions="off")
    gold = DocumentInput(
        "g",
        ["Anna met Bob there.", "Then ANNA left."],
        gold=[
            GoldSpan(0, "Bob", "CharE", 2),
            GoldSpan(1, "anna", "CharE", 1, ["Anna"]),
        ],
    )
    with app.app_context():
        with session_scope() as session:
            study = get_study(session, "demo")
        with session_scope() as session:
            result = import_documents(session, study, [gold], gold=True)
    assert (result.gold_errors, result.unlocated_gold, result.detection_jobs) == (2, 0, 0)
    docs, _, _, jobs, rows = stored(app)
    assert docs[-1] == ("g", 1, True)
    assert sorted(rows) == [(0, 9, 12, []), (1, 5, 9, ["Anna"])]
    before = stored(app)
    clash = [DocumentInput("new", ["Fine."]), DocumentInput("g", ["Clashes."])]
    refused = pytest.raises(InvalidInput, match="already has document 'g'")
    with app.app_context(), refused, session_scope() as session:
        import_documents(session, study, clash)
    assert stored(app) == before
