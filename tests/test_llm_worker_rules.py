"""An LLM annotator is a worker of the study but no crowd worker, on SQLite and Postgres: its
worker ID (``llm:NAME``) is one rule in two forms that agree (app/rules/work.py); nobody
else opens it, neither an arrival nor a researcher's key; it takes no human's slot on
either way an arrival takes one (the fewest-taken choice, a named document); the pass mark
and the pause rule, which judge crowd workers, leave it alone while still judging the
humans; its work keeps a document from removal as a human's does; and the HTTP export of its
layer is named for it."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import literal, select

from app.db import session_scope
from app.models import Assignment, Study, WorkerAction, WorkerReview
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.llm_annotating import add_annotator, run_annotator
from tests.llm_standin import errors, standin
from tests.test_admin import EMAIL, admin, csrf, researcher  # noqa: F401 (fixtures)

SEGMENTS = ["Mira met the wrong person at the station.", "Then she went home."]
OTHER = ["The cat sat on the mat.", "The dog ran off."]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def annotate_nothing(app, slug: str = "demo", documents: list[str] | None = None) -> None:
    """The annotator ``gpt`` over ``documents``, answering that nothing is wrong."""
    with standin(lambda segment, n: errors()) as server:
        add_annotator(app, slug, server.url)
        run_annotator(app, slug, documents=documents)


def statuses(app, worker: str) -> dict[str, str]:
    from app.models import Document

    with app.app_context(), session_scope() as session:
        return dict(
            session.execute(
                select(Document.external_id, Assignment.status)
                .join(Assignment, Assignment.document_id == Document.id)
                .where(Assignment.worker_id == worker)
            ).all()
        )


# the ID's rule: Python and SQL ----------------------------------------------------------

TRICKY = [
    "llm:gpt",
    "llm:",
    "llm",
    "LLM:gpt",
    "Llm:gpt",
    " llm:gpt",
    "xllm:gpt",
    "llm：gpt",
    "ｌlm:gpt",
    "llm:ǅ",
    "w1",
    "",
]
IDS = st.one_of(
    st.sampled_from(TRICKY),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12),
    st.builds(lambda tail: "llm:" + tail, st.text(max_size=6)).filter(lambda s: "\x00" not in s),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(worker_ids=st.lists(IDS, min_size=1, max_size=8))
def test_the_python_and_sql_forms_of_the_llm_rule_agree(app, worker_ids):
    from app.rules.work import human_worker, is_llm, llm_worker

    with app.app_context(), session_scope() as session:
        for worker_id in [*TRICKY, *worker_ids]:
            value = literal(worker_id)
            sql = session.execute(select(llm_worker(value), human_worker(value))).one()
            assert (bool(sql[0]), bool(sql[1])) == (is_llm(worker_id), not is_llm(worker_id))


# nobody else opens an llm: worker ID -----------------------------------------------------


def test_a_researchers_key_cannot_open_an_llm_worker_id(app, client, researcher):  # noqa: F811
    from app.researchers.keys import create_key

    make_study(app, documents=[("d1", SEGMENTS)])
    with app.app_context(), session_scope() as session:
        _, key = create_key(session, EMAIL)
    headers = {"Authorization": f"Bearer {key}"}
    body = {"study": "demo", "document": "d1", "worker_id": " llm:gpt"}
    refused = client.post("/api/assignments", json=body, headers=headers)
    assert refused.status_code == 400
    assert "kept for LLM annotators" in refused.get_json()["error"]
    assert statuses(app, "llm:gpt") == {}
    # the prefix is exact: another ID is a human's, and the key opens it
    opened = client.post("/api/assignments", json={**body, "worker_id": "LLM:gpt"}, headers=headers)
    assert opened.status_code == 201
    # and the annotator's own run opens its work
    annotate_nothing(app, documents=["d1"])
    assert statuses(app, "llm:gpt") == {"d1": "submitted"}


# slots --------------------------------------------------------------------------------------


def test_the_models_work_takes_no_slot_on_either_way_in(app, client):
    make_study(app, documents=[("d1", SEGMENTS), ("d2", OTHER)], annotators_per_doc=1)
    annotate_nothing(app)
    assert statuses(app, "llm:gpt") == {"d1": "submitted", "d2": "submitted"}
    chosen = client.post("/api/assignments", json={"study": "demo", "worker_id": "w1"})
    assert chosen.status_code == 201  # the fewest-taken choice: d1 has no human
    named = client.post(
        "/api/assignments", json={"study": "demo", "document": "d2", "worker_id": "w2"}
    )
    assert named.status_code == 201  # the named document's conditional insert
    for opened in (chosen, named):  # engaged: their slots cannot be taken over
        token = opened.get_json()["token"]
        assert client.post(f"/api/assignments/{token}/heartbeat", json={}).status_code == 204
    full = client.post("/api/assignments", json={"study": "demo", "worker_id": "w3"})
    assert full.status_code == 409  # one human each: now the study is full
    assert statuses(app, "w1") == {"d1": "active"} and statuses(app, "w2") == {"d2": "active"}


# the crowd's rules ------------------------------------------------------------------------


def gold_study(app, study_settings: dict) -> None:
    """Study ``demo``: a gold document ``g1`` (one gold error) and a real one ``d1``."""
    from app.documents.records import DocumentInput, GoldSpan
    from app.documents.studies import import_documents

    make_study(app, documents=[("d1", OTHER)], annotators_per_doc=3)
    gold = DocumentInput(
        "g1",
        SEGMENTS,
        gold=[GoldSpan(segment=0, text="the wrong person", category="CharE", votes=3)],
    )
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        import_documents(session, study, [gold], gold=True)
        study.settings = {**(study.settings or {}), **study_settings}


def submit_empty(client, worker: str, document: str) -> dict:
    opened = client.post(
        "/api/assignments", json={"study": "demo", "document": document, "worker_id": worker}
    )
    assert opened.status_code == 201, opened.get_json()
    submitted = client.post(f"/api/assignments/{opened.get_json()['token']}/submit")
    assert submitted.status_code == 200
    return submitted.get_json()


def test_the_pass_mark_does_not_judge_the_model(app, client):
    gold_study(app, {"qualification": {"min_f1": 0.9, "attempts": 1}})
    annotate_nothing(app, documents=["g1", "d1"])  # gold F1 0 on its one gold document
    assert statuses(app, "llm:gpt") == {"g1": "submitted", "d1": "submitted"}
    # a human with the same work is screened out: the rule is on
    assert submit_empty(client, "w1", "g1")["screened_out"] is True
    assert statuses(app, "w1") == {"g1": "screened_out"}


def test_the_pause_rule_does_not_pause_the_model(app, client):
    from app.annotation import pausing

    gold_study(app, {"pause": {"after": 1, "min_gold_f1": 0.9}})
    annotate_nothing(app)  # two documents submitted, gold F1 0
    assert statuses(app, "llm:gpt") == {"g1": "submitted", "d1": "submitted"}
    with app.app_context(), session_scope() as session:
        # the figure job's call, over every worker with submitted work
        assert pausing.check(session, session.scalar(select(Study))) == []
        session.commit()
    submit_empty(client, "w1", "g1")  # a human with the same work is paused: the rule is on
    with app.app_context(), session_scope() as session:
        paused = session.scalars(select(WorkerAction.worker_id)).all()
        blocked = session.scalars(select(WorkerReview.worker_id)).all()
    assert paused == ["w1"] and blocked == ["w1"]


# the HTTP export -------------------------------------------------------------------------


def test_the_http_export_of_the_models_layer_is_named_for_it(app, client, admin):  # noqa: F811
    make_study(app, documents=[("d1", SEGMENTS)])
    with standin(
        lambda segment, n: errors({"category": "CharE", "span": "wrong", "reason": "x"})
    ) as server:
        add_annotator(app, "demo", server.url)
        run_annotator(app, "demo")
    submit_empty(client, "w1", "d1")

    def export(query: str) -> tuple[int, str, list[str]]:
        answer = admin.get(f"/admin/studies/demo/export.csv?{query}")
        rows = list(csv.DictReader(io.StringIO(answer.get_data(as_text=True))))
        workers = sorted({row["worker_id"] for row in rows}) if answer.status_code == 200 else []
        return answer.status_code, answer.headers.get("Content-Disposition", ""), workers

    assert export("") == (200, 'attachment; filename="demo.csv"', ["w1"])
    assert export("layer=llm:gpt") == (200, 'attachment; filename="demo.llm-gpt.csv"', ["llm:gpt"])
    assert export("include_llm=1") == (
        200,
        'attachment; filename="demo.with-llm.csv"',
        ["llm:gpt", "w1"],
    )
    for bad in (
        "layer=llm:",
        "layer=llm:a%22b",
        "layer=llm:a%0d%0ab",
        "layer=adjudicated&include_llm=1",
    ):
        status, disposition, _ = export(bad)
        assert status == 400 and disposition == ""
    refused = admin.get("/admin/studies/demo/export.assignments-csv?include_llm=1")
    assert refused.status_code == 400


def test_the_models_work_keeps_a_document_as_a_humans_does(app):
    from app.documents.lifecycle import remove_document
    from app.errors import Conflict

    make_study(app, documents=[("d1", SEGMENTS), ("d2", OTHER)])
    annotate_nothing(app, documents=["d1"])
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        with pytest.raises(Conflict):
            remove_document(session, study, "d1")
        remove_document(session, study, "d2")  # nobody worked on it
