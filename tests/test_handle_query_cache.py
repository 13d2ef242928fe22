"""The actions' handle compiles a Core statement once per shape (``query()``): the cached
SQL run with another call's values must answer what SQLAlchemy's own execution answers, for
every value, and a statement whose SQL holds its values (a list for ``IN``) must never be
served another call's SQL. On SQLite the handle runs statements through SQLAlchemy's own
connection, whose cache is SQLAlchemy's: the same answers there."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.annotation.connect import open_handle
from app.db import session_scope
from app.models import Assignment, Document
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import open_token


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def fewest(study_id: int, worker: str, cap: int):
    """A shape like the arrival's choice: a subquery, NOT IN, a cap, an order and a limit."""
    had = select(Assignment.document_id).where(
        Assignment.study_id == study_id, Assignment.worker_id == worker
    )
    taken = (
        select(Assignment.document_id, func.count().label("n"))
        .where(Assignment.study_id == study_id)
        .group_by(Assignment.document_id)
        .subquery()
    )
    return (
        select(Document.external_id, func.coalesce(taken.c.n, 0))
        .outerjoin(taken, taken.c.document_id == Document.id)
        .where(
            Document.study_id == study_id,
            Document.id.not_in(had),
            func.coalesce(taken.c.n, 0) < cap,
        )
        .order_by(func.coalesce(taken.c.n, 0), Document.position, Document.id)
    )


def test_one_shape_many_values_answer_as_sqlalchemy_does(app, client):
    make_study(app, documents=[("doc-1", ["A b."]), ("doc-2", ["C d."]), ("doc-3", ["E f."])])
    for worker, document in (("w1", "doc-1"), ("w2", "doc-1"), ("w1", "doc-2")):
        token = open_token(client, worker=worker, document=document)
        assert client.post(f"/api/assignments/{token}/submit", json={}).status_code == 200
    engine = app.extensions["db_engine"]
    with app.app_context(), session_scope() as session:
        study_id = session.scalar(select(Assignment.study_id).limit(1))
        cases = [(study_id, w, cap) for w in ("w1", "w2", "w3") for cap in (1, 2, 3)]
        cases.append((study_id + 1, "w1", 3))  # another study: nothing
        expected = [session.execute(fewest(*case)).all() for case in cases]
    handle = open_handle(engine)
    try:
        for _round in range(2):  # the second round runs every shape from the cache
            answers = [[tuple(row) for row in handle.query(fewest(*case)).all()] for case in cases]
            assert answers == [[tuple(row) for row in rows] for rows in expected]
        assert answers[0] == [("doc-3", 0)]  # w1, cap 1: had doc-1 and doc-2
        assert answers[7] == [("doc-3", 0), ("doc-2", 1)]  # w3, cap 2: doc-1 is full
        assert answers[8] == [("doc-3", 0), ("doc-2", 1), ("doc-1", 2)]  # w3, cap 3
        # A list for IN is part of the SQL: lists of other lengths and values, each its own.
        for ids in (["doc-1"], ["doc-2", "doc-3"], ["doc-3", "doc-1", "doc-2"], ["doc-2"]):
            rows = handle.query(
                select(Document.external_id)
                .where(Document.external_id.in_(ids))
                .order_by(Document.external_id)
            ).all()
            assert [row[0] for row in rows] == sorted(ids)
    finally:
        handle.rollback()
        handle.close()
