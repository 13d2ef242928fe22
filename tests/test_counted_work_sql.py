"""The counted-work rule's SQL on its own (app/rules/work.py), on two studies at once, so each
condition has something to exclude: the other study's work and gold documents, a removed
annotation, an LLM annotator's work, the training phase, a submitted assignment. Each answer
is written out by hand from the rows below."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Annotation, Assignment, Document, Segment, Study
from app.rules.work import (
    Work,
    is_practice,
    select_documents,
    select_in_hand,
    select_segments,
)
from tests.conftest import BACKENDS, make_database_url, make_study


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def seed(app) -> dict[str, int]:
    """Study "a" has a pass mark: its gold document "a-gold" is its training phase. Study "b"
    has none: its gold document "b-gold" is a real one. In "a" (on "a-real" unless named):
    w1 active with one live and one removed annotation, "llm:m" active with one live, w2
    active on "a-gold" with one live, w3 submitted with one live; in "b": w1 active on
    "b-real" with one live."""
    make_study(app, "a", documents=[("a-real", ["A one.", "A two."])])
    make_study(app, "b", documents=[("b-real", ["B one."])])
    ids: dict[str, int] = {}
    with app.app_context(), session_scope() as session:
        studies = {s.slug: s for s in session.scalars(select(Study))}
        studies["a"].settings = {**(studies["a"].settings or {}), "qualification": {"min_f1": 0.5}}
        for slug, external in (("a", "a-gold"), ("b", "b-gold")):
            gold = Document(
                study_id=studies[slug].id, external_id=external, is_gold=True, position=9
            )
            session.add(gold)
            session.flush()
            session.add(Segment(document_id=gold.id, index=0, text=f"{external} text."))
        session.flush()
        documents = {d.external_id: d for d in session.scalars(select(Document))}
        for name, slug, document, worker, status, marks in (
            ("w1", "a", "a-real", "w1", "active", ["live", "removed"]),
            ("llm", "a", "a-real", "llm:m", "active", ["live"]),
            ("gold", "a", "a-gold", "w2", "active", ["live"]),
            ("done", "a", "a-real", "w3", "submitted", ["live"]),
            ("b", "b", "b-real", "w1", "active", ["live"]),
        ):
            assignment = Assignment(
                token=f"t-{name}",
                study_id=studies[slug].id,
                document_id=documents[document].id,
                worker_id=worker,
                status=status,
            )
            session.add(assignment)
            session.flush()
            for i, state in enumerate(marks):
                annotation = Annotation(
                    assignment_id=assignment.id,
                    client_id=f"{name}-{i}",
                    segment=0,
                    start=0,
                    end=1,
                    text="A",
                    category="CharE",
                    removed_at=assignment.created_at if state == "removed" else None,
                )
                session.add(annotation)
                session.flush()
                ids[f"{name}-{state}"] = annotation.id
        ids |= {f"doc:{k}": d.id for k, d in documents.items()}
        ids |= {f"study:{k}": s.id for k, s in studies.items()}
    return ids


def run(app, query) -> list[tuple]:
    with app.app_context(), session_scope() as session:
        return [tuple(row) for row in session.execute(query)]


def study(app, slug: str) -> Study:
    with app.app_context(), session_scope() as session:
        found = session.scalar(select(Study).where(Study.slug == slug))
        session.expunge(found)
        return found


def test_work_in_hand_is_the_studys_live_human_marks_on_counted_documents(app):
    ids = seed(app)
    a = study(app, "a")
    # w1's live mark only: not its removed one, not the LLM's, not w2's on the training
    # document, not w3's submitted one, not study b's.
    assert run(app, select_in_hand(a, Work(), Annotation.id)) == [(ids["w1-live"],)]
    everyone = Work(workers="everyone", include_practice=True)
    assert sorted(run(app, select_in_hand(a, everyone, Annotation.id))) == sorted(
        [(ids["w1-live"],), (ids["llm-live"],), (ids["gold-live"],)]
    )


def test_the_documents_and_segments_that_count(app):
    ids = seed(app)
    a, b = study(app, "a"), study(app, "b")
    assert run(app, select_documents(a, Work(), Document.external_id)) == [("a-real",)]
    practice = Work(include_practice=True)
    assert run(app, select_documents(a, practice, Document.external_id)) == [
        ("a-real",),
        ("a-gold",),
    ]
    # b has no pass mark: its gold document is real work
    assert run(app, select_documents(b, Work(), Document.external_id)) == [("b-real",), ("b-gold",)]
    assert run(app, select_segments(a, Work())) == [
        (ids["doc:a-real"], "A one."),
        (ids["doc:a-real"], "A two."),
    ]
    assert run(app, select_segments(a, practice))[-1] == (ids["doc:a-gold"], "a-gold text.")


def test_the_training_phase_is_a_gold_document_of_a_study_with_a_pass_mark(app):
    seed(app)
    a, b = study(app, "a"), study(app, "b")
    query = select(Document.external_id).where(is_practice([a, b])).order_by(Document.id)
    assert run(app, query) == [("a-gold",)]
    assert run(app, select(Document.external_id).where(is_practice([b]))) == []
