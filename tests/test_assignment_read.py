"""``GET /api/assignments/<token>`` (app/annotation/read.py, with the document and taxonomy
cached per process by app/annotation/cache.py, spliced by app/web/worker_api.py) answers byte
for byte what the ORM-built reference (tests/payload_reference.py) answers on the same data,
on SQLite and Postgres: active
and submitted assignments, suggestions shown, hidden, off and the unassisted condition,
practice documents with checked segments, entities and mentions, Thresh sources, unusual text;
twice (the second answer from the cache), and again after the detector replaced the
suggestions (which are never cached)."""

from __future__ import annotations

import pytest
from flask import jsonify
from sqlalchemy import delete, select

from app.annotation.assignments import get_assignment, open_assignment
from app.annotation.cache import Bounded
from app.crowd import platforms
from app.db import session_scope
from app.models import (
    Annotation,
    Assignment,
    Document,
    Entity,
    EntityMention,
    PracticeCheck,
    Study,
    Suggestion,
)
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.payload_reference import assignment_payload

TEXTS = [
    "Anna is an only child. She lives in Zoë's old flat in Paris.",
    'Her brother "Pedro" visits — the café 🙂 and <b>talk</b>.',
    "At the party, Pedro takes Hero aside.\u2028Line separator.",
]
DOCS = [("doc-1", TEXTS), ("doc-2", ["Another document.", "Its second segment."])]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def reference(app, token: str) -> bytes:
    """The former route's answer for ``token``."""
    with app.test_request_context(), session_scope() as session:
        assignment = get_assignment(session, token)
        return jsonify(assignment_payload(session, assignment)).get_data()


def suggestion(document_id: int, segment: int, start: int, end: int, score: float, **extra):
    return Suggestion(
        document_id=document_id,
        segment=segment,
        start=start,
        end=end,
        text=TEXTS[segment][start:end],
        category=extra.pop("category", "CharE"),
        score=score,
        detector="test",
        detector_version="1",
        **extra,
    )


def enrich(app, slug: str) -> dict[str, str]:
    """Entities, sources, suggestions and assignments of every kind; their tokens by name."""
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        doc1, doc2 = session.scalars(
            select(Document).where(Document.study_id == study.id).order_by(Document.position)
        ).all()
        doc1.meta = {"thresh": {"context": "Where it came from ✓", "source": "  "}}
        anna = Entity(document_id=doc1.id, key="anna", name="Anna", label="PERSON", first_segment=0)
        pedro = Entity(
            document_id=doc1.id, key="pedro", name="Pedro", label="PERSON", first_segment=1
        )
        session.add_all([anna, pedro])
        session.flush()
        session.add_all(
            [
                EntityMention(
                    document_id=doc1.id, entity_id=anna.id, segment=0, start=0, end=4, label="P"
                ),
                EntityMention(
                    document_id=doc1.id, entity_id=pedro.id, segment=1, start=13, end=20, label="P"
                ),
                EntityMention(
                    document_id=doc1.id, entity_id=pedro.id, segment=2, start=14, end=19, label="P"
                ),
            ]
        )
        session.add_all(
            [
                suggestion(doc1.id, 0, 0, 4, 0.9, reason="a name"),
                suggestion(doc1.id, 0, 5, 7, 0.95),
                suggestion(doc1.id, 0, 36, 40, 0.5, category="RefE"),
                suggestion(doc1.id, 0, 11, 15, 0.01),  # under the lowest score shown
                suggestion(
                    doc1.id,
                    2,
                    14,
                    19,
                    0.7,
                    paired_segment=1,
                    paired_start=13,
                    paired_end=20,
                    paired_text='"Pedro"',
                ),
            ]
        )
        tokens: dict[str, str] = {}
        for name, document in (
            ("active", doc1),
            ("submitted", doc1),
            ("unassisted", doc1),
            ("other", doc2),
            ("practice", doc2),
        ):
            assignment, _ = open_assignment(session, study, document, f"worker-{name}")
            tokens[name] = assignment.token
            session.flush()
            if name == "submitted":
                assignment.status = "submitted"
                assignment.completion_code = "MG-ABCDE-FGHJK"
            if name == "unassisted":
                assignment.condition = "unassisted"
            assignment.current_segment = 1
            for n, (segment, start, end, paired) in enumerate(
                [(0, 0, 4, None), (1, 13, 20, (0, 0, 4, None)), (2, 14, 19, (0, 36, 41, 1))]
            ):
                texts = TEXTS if document is doc1 else DOCS[1][1]
                if end > len(texts[min(segment, len(texts) - 1)]):
                    continue
                values = {}
                if paired is not None:
                    values = {
                        "paired_segment": paired[0],
                        "paired_start": paired[1],
                        "paired_end": paired[2],
                        "paired_text": "x",
                        "paired_end_segment": paired[3],
                    }
                session.add(
                    Annotation(
                        assignment_id=assignment.id,
                        client_id=f"c{n}",
                        segment=segment,
                        start=start,
                        end=end,
                        text=TEXTS[segment][start:end],
                        category="CharE",
                        comment="ünïcode\n" if n == 1 else "",
                        suggestion_id=None,
                        removed_at=assignment.created_at if n == 2 and name == "other" else None,
                        **values,
                    )
                )
        if slug == "shown":
            doc2.is_gold = doc2.is_practice = True
            practice = session.scalar(
                select(Assignment).where(Assignment.token == tokens["practice"])
            )
            session.add(
                PracticeCheck(
                    assignment_id=practice.id,
                    segment=0,
                    feedback={"segment": 0, "found": [], "missed": [{"text": "é"}], "gold": 1},
                )
            )
            platforms.configure_study(study, qualification_f1=0.5, max_hints_per_segment=2)
        return tokens


@pytest.mark.parametrize("mode", ["shown", "hidden", "off"])
def test_payload_is_byte_identical_to_the_former_route(app, client, mode):
    make_study(app, slug=mode, documents=DOCS, suggestions=mode)
    tokens = enrich(app, mode)
    for name, token in tokens.items():
        for attempt in ("first", "cached"):
            answer = client.get(f"/api/assignments/{token}")
            assert answer.status_code == 200
            assert answer.headers["Content-Type"] == "application/json"
            assert answer.headers["Cache-Control"] == "no-store"
            assert answer.data == reference(app, token), (mode, name, attempt)
    payload = client.get(f"/api/assignments/{tokens['active']}").get_json()
    assert payload["entities"] and payload["mentions"]
    assert payload["document"]["sources"] == [{"label": "Context", "text": "Where it came from ✓"}]
    assert bool(payload["suggestions"]) == (mode == "shown")
    if mode == "shown":
        practice = client.get(f"/api/assignments/{tokens['practice']}").get_json()
        assert practice["practice"]["checked"]["0"]["missed"] == [{"text": "é"}]
        assert (
            client.get(f"/api/assignments/{tokens['unassisted']}").get_json()["suggestions"] == []
        )
        assert client.get(f"/api/assignments/{tokens['submitted']}").get_json()["read_only"]


def test_new_suggestions_show_at_once(app, client):
    """The detector replaces a document's suggestions when it finishes: never cached."""
    make_study(app, slug="shown", documents=DOCS, suggestions="shown")
    token = enrich(app, "shown")["active"]
    before = client.get(f"/api/assignments/{token}").get_json()["suggestions"]
    with app.app_context(), session_scope() as session:
        document_id = session.scalar(
            select(Assignment.document_id).where(Assignment.token == token)
        )
        session.execute(delete(Suggestion).where(Suggestion.document_id == document_id))
        session.add(suggestion(document_id, 1, 0, 3, 0.8, category="GramE"))
    after = client.get(f"/api/assignments/{token}")
    assert after.data == reference(app, token)
    assert len(before) == 3 and [s["category"] for s in after.get_json()["suggestions"]] == [
        "GramE"
    ]


def test_the_worker_part_is_read_every_time(app, client):
    make_study(app, documents=DOCS)
    token = enrich(app, "demo")["active"]
    first = client.get(f"/api/assignments/{token}").get_json()
    client.post(f"/api/assignments/{token}/position", json={"segment": 2})
    client.post(f"/api/assignments/{token}/submit")
    second = client.get(f"/api/assignments/{token}")
    assert second.data == reference(app, token)
    payload = second.get_json()
    assert (first["current_segment"], first["status"]) == (1, "active")
    assert (payload["current_segment"], payload["status"], payload["read_only"]) == (
        2,
        "submitted",
        True,
    )


def test_unknown_tokens_are_404_as_before(app, client):
    make_study(app, documents=DOCS)
    for token in ("x" * 24, "a'b;--", "-" * 65):
        answer = client.get(f"/api/assignments/{token}")
        assert answer.status_code == 404
        assert answer.get_json() == {"error": "no assignment with this token"}


def test_debug_mode_answers_the_same_values(app, client):
    """Flask's debug mode indents its JSON; the worker API answers compact JSON always, the
    same values."""
    import json

    make_study(app, slug="shown", documents=DOCS, suggestions="shown")
    token = enrich(app, "shown")["active"]
    app.json.compact = False
    try:
        answer = client.get(f"/api/assignments/{token}")
        assert answer.get_json() == json.loads(reference(app, token))
    finally:
        app.json.compact = None


def test_the_cache_is_bounded():
    cache: Bounded[str] = Bounded(2, 5_000)
    for n in range(5):
        cache.put(n, "x" * 100, 100)
    assert len(cache) == 2 and cache.get(4) == "x" * 100
    cache.put("big", "y" * 2000, 2000)
    cache.put("bigger", "z" * 3100, 3100)  # over the bytes: the oldest go
    assert cache.get("big") is None and cache.get("bigger")
    cache.put("huge", "h", 6000)  # larger than the bound: never kept
    assert cache.get("huge") is None


def test_a_recreated_document_is_not_served_from_the_cache(app, client):
    """SQLite may give a deleted document's id to a new one: the key has its creation time."""
    from app.documents.studies import import_documents
    from app.formats import DocumentInput
    from app.models import Segment

    make_study(app, documents=[("doc-1", ["Old text."])])
    texts = []
    for text in ("Old text.", "New text."):
        with app.app_context(), session_scope() as session:
            study = session.scalar(select(Study))
            if text == "New text.":
                session.execute(delete(Assignment))
                session.execute(delete(Segment))
                session.execute(delete(Document))
                import_documents(session, study, [DocumentInput("doc-1", [text])])
            document = session.scalar(select(Document))
            token = open_assignment(session, study, document, "w1")[0].token
        answer = client.get(f"/api/assignments/{token}")
        assert answer.data == reference(app, token)
        texts.append(answer.get_json()["document"]["segments"][0]["text"])
    assert texts == ["Old text.", "New text."]


def test_the_read_is_answered_before_flask_gzipped_when_asked(app, client, flask_saw):
    """The worker API answers the GET itself, its headers as every worker answer's, gzipped
    when the client takes it (the same bytes once decompressed); an unknown token is its
    404, also before Flask."""
    import gzip

    make_study(app, slug="shown", documents=DOCS, suggestions="shown")
    tokens = enrich(app, "shown")
    for token in (tokens["active"], tokens["practice"]):
        plain = client.get(f"/api/assignments/{token}", headers={"Accept-Encoding": ""})
        packed = client.get(f"/api/assignments/{token}", headers={"Accept-Encoding": "gzip, br"})
        assert plain.data == reference(app, token)
        assert "Content-Encoding" not in plain.headers
        assert packed.headers["Content-Encoding"] == "gzip"
        assert packed.headers["Vary"] == "Accept-Encoding"
        assert gzip.decompress(packed.data) == plain.data
        for answer in (plain, packed):
            assert answer.headers["Content-Length"] == str(len(answer.data))
            assert answer.headers["Cache-Control"] == "no-store"
            assert answer.headers["X-Content-Type-Options"] == "nosniff"
            assert answer.headers["X-Frame-Options"] == "DENY"
    unknown = client.get(f"/api/assignments/{'x' * 24}", headers={"Accept-Encoding": "gzip"})
    assert unknown.status_code == 404 and "Content-Encoding" not in unknown.headers
    assert flask_saw == []
