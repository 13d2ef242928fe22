"""The counted-work rule's SQL on its own (app/rules/work.py), on two studies at once, so each
condition has something to exclude: the other study's work and gold documents, a removed
annotation, an LLM annotator's work, the training phase, a submitted assignment. Each answer
is written out by hand from the rows below."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import (
    AdjudicatedError,
    Annotation,
    Assignment,
    ConsensusUnit,
    Document,
    DocumentReview,
    Segment,
    Study,
)
from app.rules.work import (
    Work,
    columns,
    is_practice,
    select_documents,
    select_in_hand,
    select_segments,
    select_work,
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


MARKED, SUBMITTED, DECIDED, COMPUTED = (datetime(2026, 1, 2, 3, 4, s, tzinfo=UTC) for s in range(4))


def plain(value):
    """A time as naive UTC (SQLite gives it back naive, Postgres aware)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def every_column(app, slug: str, work: Work, **options) -> list[dict]:
    """Each row of the work with every column of :func:`columns` by its name."""
    with app.app_context(), session_scope() as session:
        found = session.scalar(select(Study).where(Study.slug == slug))
        sql = columns(found, work)
        labelled = (column.label(name) for name, column in sql.items())
        rows = session.execute(select_work(found, work, *labelled, **options)).all()
        return [{name: plain(value) for name, value in zip(sql, row, strict=True)} for row in rows]


def seed_layers(app) -> dict[str, int]:
    """Study "c": "d1" ("Anna sings." | "Bob dances now.") and "d2" ("Cleo sleeps." |
    "Dan eats."), each row added out of its export order. Workers: w2 submitted on d2
    without a mark, then w1 submitted on d1 with a paired, commented mark of "dances"
    (segment 1), then one of "sings" (segment 0), then the "dances" mark's second
    category (SceneE, one multi-label mark); w3 submitted on d2 with a mark of "sleeps"
    (segment 0, as "sings"). Adjudicated: d1 reviewed done, "sings"
    and "Anna" accepted, "Bob" rejected; d2 in review, nothing accepted. Consensus units
    (posterior): d1 "dances" CharE (0.4), "Bob" SceneE (1.0), "Bob" CharE (0.6); d2 "Dan
    eats" CharE (0.95), "sleeps" CharE (0.5)."""
    make_study(
        app,
        "c",
        documents=[
            ("d1", ["Anna sings.", "Bob dances now."]),
            ("d2", ["Cleo sleeps.", "Dan eats."]),
        ],
    )
    ids: dict[str, int] = {}
    with app.app_context(), session_scope() as session:
        study_id = session.scalar(select(Study.id).where(Study.slug == "c"))
        docs = {d.external_id: d.id for d in session.scalars(select(Document))}
        for worker, doc in (("w2", "d2"), ("w1", "d1"), ("w3", "d2")):
            assignment = Assignment(
                token=f"t-{worker}",
                study_id=study_id,
                document_id=docs[doc],
                worker_id=worker,
                status="submitted",
                completion_code=f"C-{worker}",
                submitted_at=SUBMITTED,
            )
            session.add(assignment)
            session.flush()
            ids[worker] = assignment.id
        for name, segment, start, text, category in (
            ("dances", 1, 4, "dances", "CharE"),
            ("sings", 0, 5, "sings", "CharE"),
            ("dances-scene", 1, 4, "dances", "SceneE"),
            ("sleeps", 0, 5, "sleeps", "CharE"),
        ):
            mark = Annotation(
                assignment_id=ids["w3" if name == "sleeps" else "w1"],
                client_id=name,
                # a multi-label mark's second row: the first row's id
                mark=ids["mark:dances"] if name == "dances-scene" else None,
                segment=segment,
                start=start,
                end=start + len(text),
                text=text,
                category=category,
                comment="slow",
                attributes={"severity": "high"},
                paired_segment=0,
                paired_start=0,
                paired_end=4,
                paired_text="Anna",
                created_at=MARKED,
            )
            session.add(mark)
            session.flush()
            ids[f"mark:{name}"] = mark.id
        session.add(DocumentReview(document_id=docs["d1"], status="done", updated_by="r"))
        session.add(DocumentReview(document_id=docs["d2"], status="in_review", updated_by="r"))
        for text, segment, start, decision in (
            ("sings", 0, 5, "accepted"),
            ("Anna", 0, 0, "accepted"),
            ("Bob", 1, 0, "rejected"),
        ):
            row = AdjudicatedError(
                document_id=docs["d1"],
                segment=segment,
                start=start,
                end=start + len(text),
                text=text,
                category="CharE",
                decision=decision,
                origin="reviewed",
                decided_by="r",
                decided_at=DECIDED,
            )
            session.add(row)
            session.flush()
            ids[f"adjudicated:{text}"] = row.id
        for name, doc, segment, start, end, category, posterior in (
            ("dances", "d1", 1, 4, 10, "CharE", 0.4),
            ("bob", "d1", 1, 0, 3, "SceneE", 1.0),
            ("bob-char", "d1", 1, 0, 3, "CharE", 0.6),
            ("dan", "d2", 1, 0, 8, "CharE", 0.95),
            ("sleeps", "d2", 0, 5, 11, "CharE", 0.5),
        ):
            unit = ConsensusUnit(
                study_id=study_id,
                document_id=docs[doc],
                segment=segment,
                start=start,
                end=end,
                category=category,
                posterior=posterior,
                marked=1,
                created_at=COMPUTED,
            )
            session.add(unit)
            session.flush()
            ids[name] = unit.id
        ids |= {f"doc:{k}": v for k, v in docs.items()}
    return ids


NO_PAIR = {f"paired_{n}": None for n in ("segment", "start", "end", "text", "end_segment")}
NO_MARK = dict.fromkeys(
    ("id", "segment", "start", "end", "text", "category", "comment", "attributes", "mark"), None
)


def test_every_column_of_the_workers_layer_by_name(app):
    """w1's marks by segment (a multi-label mark's rows share its first row's id), then
    w2's submitted assignment without a mark: one row of NULLs but its assignment's
    columns, created when submitted. ``marks_only`` drops that row, ``document_id`` keeps
    one document's."""
    ids = seed_layers(app)
    w1 = {
        "document_id": ids["doc:d1"],
        "document": "d1",
        "role": "real",
        "review_status": "done",
        "worker_id": "w1",
        "assignment": "t-w1",
        "assignment_id": ids["w1"],
        "completion_code": "C-w1",
        "status": "submitted",
        "category": "CharE",
        "comment": "slow",
        "attributes": {"severity": "high"},
        "paired_segment": 0,
        "paired_start": 0,
        "paired_end": 4,
        "paired_text": "Anna",
        "paired_end_segment": None,
        "created_at": plain(MARKED),
    }
    sings = {
        **w1,
        "id": ids["mark:sings"],
        "mark": ids["mark:sings"],
        "segment": 0,
        "start": 5,
        "end": 10,
        "text": "sings",
        "segment_text": "Anna sings.",
    }
    dances = {
        **w1,
        "id": ids["mark:dances"],
        "mark": ids["mark:dances"],
        "segment": 1,
        "start": 4,
        "end": 10,
        "text": "dances",
        "segment_text": "Bob dances now.",
    }
    empty = {
        **NO_PAIR,
        **NO_MARK,
        "document_id": ids["doc:d2"],
        "document": "d2",
        "role": "real",
        "review_status": "in_review",
        "worker_id": "w2",
        "assignment": "t-w2",
        "assignment_id": ids["w2"],
        "completion_code": "C-w2",
        "status": "submitted",
        "created_at": plain(SUBMITTED),
        "segment_text": None,
    }
    scene = {**dances, "id": ids["mark:dances-scene"], "category": "SceneE"}
    sleeps = {
        **sings,
        "document_id": ids["doc:d2"],
        "document": "d2",
        "review_status": "in_review",
        "worker_id": "w3",
        "assignment": "t-w3",
        "assignment_id": ids["w3"],
        "completion_code": "C-w3",
        "id": ids["mark:sleeps"],
        "mark": ids["mark:sleeps"],
        "end": 11,
        "text": "sleeps",
        "segment_text": "Cleo sleeps.",
    }
    assert every_column(app, "c", Work()) == [sings, dances, scene, empty, sleeps]
    assert every_column(app, "c", Work(), marks_only=True) == [sings, dances, scene, sleeps]
    assert every_column(app, "c", Work(), document_id=ids["doc:d2"]) == [empty, sleeps]


def test_every_column_of_the_adjudicated_layer_by_name(app):
    """The accepted rows of the document reviewed done, by start; no assignment; when
    decided. ``review_status="any"`` adds the document in review: one empty row."""
    ids = seed_layers(app)

    def accepted(text, start):
        return {
            **NO_PAIR,
            "document_id": ids["doc:d1"],
            "document": "d1",
            "role": "real",
            "review_status": "done",
            "worker_id": "adjudicated",
            "assignment": None,
            "assignment_id": None,
            "completion_code": None,
            "id": ids[f"adjudicated:{text}"],
            "segment": 0,
            "start": start,
            "end": start + len(text),
            "text": text,
            "category": "CharE",
            "comment": "",
            "attributes": None,
            "mark": ids[f"adjudicated:{text}"],
            "created_at": plain(DECIDED),
            "segment_text": "Anna sings.",
        }

    done = [accepted("Anna", 0), accepted("sings", 5)]
    in_review = {
        **done[0],
        **NO_MARK,
        "document_id": ids["doc:d2"],
        "document": "d2",
        "review_status": "in_review",
        "created_at": None,
        "segment_text": None,
    }
    assert every_column(app, "c", Work(layer="adjudicated")) == done
    anything = Work(layer="adjudicated", review_status="any")
    assert every_column(app, "c", anything) == [*done, in_review]
    assert every_column(app, "c", anything, marks_only=True) == done


def test_every_column_of_the_consensus_layer_by_name(app):
    """The units at or above the posterior, by document, segment, start and category; the
    text is the unit's stretch of its own document's segment; no assignment, pair or
    comment."""
    ids = seed_layers(app)

    def unit(name, doc, segment, start, end, category, posterior, text, whole):
        return {
            **NO_PAIR,
            "document_id": ids[f"doc:{doc}"],
            "document": doc,
            "role": "real",
            "review_status": "done" if doc == "d1" else "in_review",
            "worker_id": "consensus",
            "assignment": None,
            "assignment_id": None,
            "completion_code": None,
            "id": ids[name],
            "segment": segment,
            "start": start,
            "end": end,
            "text": text,
            "category": category,
            "comment": None,
            "attributes": None,
            "mark": ids[name],
            "created_at": plain(COMPUTED),
            "segment_text": whole,
            "posterior": posterior,
        }

    bob_char = unit("bob-char", "d1", 1, 0, 3, "CharE", 0.6, "Bob", "Bob dances now.")
    bob = unit("bob", "d1", 1, 0, 3, "SceneE", 1.0, "Bob", "Bob dances now.")
    dances = unit("dances", "d1", 1, 4, 10, "CharE", 0.4, "dances", "Bob dances now.")
    sleeps = unit("sleeps", "d2", 0, 5, 11, "CharE", 0.5, "sleeps", "Cleo sleeps.")
    dan = unit("dan", "d2", 1, 0, 8, "CharE", 0.95, "Dan eats", "Dan eats.")
    half = Work(layer="consensus", min_posterior=0.5)
    assert every_column(app, "c", half) == [bob_char, bob, sleeps, dan]
    assert every_column(app, "c", Work(layer="consensus")) == [bob, dan]
    assert every_column(app, "c", Work(layer="consensus", min_posterior=0.0)) == [
        bob_char,
        bob,
        dances,
        sleeps,
        dan,
    ]
    assert every_column(app, "c", half, document_id=ids["doc:d2"]) == [sleeps, dan]


def test_documents_and_segments_come_by_position_then_id_then_index(app):
    """Study "o" has no document of its own at first: "late" (position 2) is added first,
    then "tie-1" and "tie-2" (position 1, in that order of id), each with its segments
    added last index first. The order is by position, the id breaking the tie, then the
    segment's index (the work: then its assignment), never the order the rows were added
    in."""
    make_study(app, "o", documents=[("seed", ["S."])])
    with app.app_context(), session_scope() as session:
        study_o = session.scalar(select(Study).where(Study.slug == "o"))
        seed_doc = session.scalar(select(Document).where(Document.external_id == "seed"))
        session.delete(seed_doc)
        session.flush()
        for external, position in (("late", 2), ("tie-1", 1), ("tie-2", 1)):
            document = Document(study_id=study_o.id, external_id=external, position=position)
            session.add(document)
            session.flush()
            for index in (1, 0):
                session.add(
                    Segment(document_id=document.id, index=index, text=f"{external}#{index}")
                )
        documents = {d.external_id: d.id for d in session.scalars(select(Document))}
        for external in ("late", "tie-2", "tie-1"):  # the work, added out of order too
            session.add(
                Assignment(
                    token=f"t-{external}",
                    study_id=study_o.id,
                    document_id=documents[external],
                    worker_id="w",
                    status="submitted",
                )
            )
    o = study(app, "o")
    assert run(app, select_documents(o, Work(), Document.external_id)) == [
        ("tie-1",),
        ("tie-2",),
        ("late",),
    ]
    assert run(app, select_work(o, Work(), Document.external_id)) == [
        ("tie-1",),
        ("tie-2",),
        ("late",),
    ]
    assert [text for _, text in run(app, select_segments(o, Work()))] == [
        "tie-1#0",
        "tie-1#1",
        "tie-2#0",
        "tie-2#1",
        "late#0",
        "late#1",
    ]
