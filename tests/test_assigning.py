"""Which document an arriving worker gets: N per document, never twice, abandoned slots
re-offered, randomised conditions, qualification on gold documents (SQLite and Postgres)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from app.annotation.arrive import release_abandoned
from app.annotation.connect import handle_of
from app.crowd import platforms
from app.db import session_scope
from app.formats import DocumentInput, GoldSpan
from app.models import Assignment, Study
from tests.conftest import BACKENDS, make_database_url, make_study

DOCS = [(f"doc-{i}", [f"Segment one of document {i}.", f"Segment two of {i}."]) for i in range(3)]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def arrive(client, worker: str, slug: str = "demo", **extra) -> tuple[int, str | None]:
    """GET /s/<slug> as ``worker``; (status, token or None)."""
    params = {"worker_id": worker, **extra}
    answer = client.get(f"/s/{slug}", query_string=params)
    location = answer.headers.get("Location", "")
    token = location.split("/a/")[1].split("/")[0] if "/a/" in location else None
    return answer.status_code, token


def assignment(app, token: str) -> Assignment:
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment).where(Assignment.token == token))
        session.expunge(row)
        return row


def document_of(app, token: str) -> str:
    with app.app_context(), session_scope() as session:
        row = session.scalar(select(Assignment).where(Assignment.token == token))
        return row.document.external_id


def submit(client, token: str, annotations=()) -> None:
    for body in annotations:
        assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def configure(app, slug: str = "demo", **changes) -> None:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        platforms.configure_study(study, **changes)


def test_n_annotators_per_document_and_never_twice(app, client):
    make_study(app, documents=DOCS, annotators_per_doc=2)
    seen: dict[str, list[str]] = {}
    for worker in ("w1", "w2", "w3"):
        for _ in range(3):
            status, token = arrive(client, worker)
            if status != 302:
                assert status == 409
                break
            seen.setdefault(worker, []).append(document_of(app, token))
            submit(client, token)
    per_doc = Counter(doc for docs in seen.values() for doc in docs)
    assert per_doc == {"doc-0": 2, "doc-1": 2, "doc-2": 2}
    for worker, docs in seen.items():
        assert len(docs) == len(set(docs)), f"{worker} got a document twice: {docs}"
    # the two first workers took every slot; the third got nothing
    assert len(seen["w1"]) == 3 and len(seen["w2"]) == 3 and "w3" not in seen
    status, _ = arrive(client, "w4")
    assert status == 409


def test_returning_worker_resumes_the_unfinished_assignment(app, client):
    # Resuming needs the token the browser kept (?resume=), not the worker ID alone.
    make_study(app, documents=DOCS, annotators_per_doc=1)
    _, first = arrive(client, "w1")
    assert arrive(client, "w1") == (409, None)
    _, again = arrive(client, "w1", resume=first)
    assert again == first
    _, other = arrive(client, "w2")
    assert document_of(app, other) != document_of(app, first)


def test_least_covered_document_first(app, client):
    make_study(app, documents=DOCS, annotators_per_doc=3)
    docs = [document_of(app, arrive(client, f"w{i}")[1]) for i in range(3)]
    assert sorted(docs) == ["doc-0", "doc-1", "doc-2"]


def _age(app, token: str, minutes: float) -> None:
    with app.app_context(), session_scope() as session:
        session.execute(
            update(Assignment)
            .where(Assignment.token == token)
            .values(last_seen_at=datetime.now(UTC) - timedelta(minutes=minutes))
        )


def test_abandoned_assignment_is_reoffered_and_keeps_its_annotations(app, client):
    make_study(app, documents=DOCS[:1], annotators_per_doc=1)
    _, slow = arrive(client, "slow")
    body = {"segment": 0, "start": 0, "end": 7, "text": "Segment", "category": "CharE"}
    assert client.post(f"/api/assignments/{slow}/annotations", json=body).status_code == 201
    status, _ = arrive(client, "fast")
    assert status == 409  # the only slot is taken and still fresh
    _age(app, slow, 44)
    assert arrive(client, "fast")[0] == 409  # 44 minutes: not yet abandoned (default 45)
    _age(app, slow, 46)
    status, fast = arrive(client, "fast")
    assert status == 302 and document_of(app, fast) == "doc-0"
    old = assignment(app, slow)
    assert old.status == "abandoned"
    # the abandoned worker's annotation is still stored, but the assignment is closed
    payload = client.get(f"/api/assignments/{slow}").get_json()
    assert payload["read_only"] is True and len(payload["annotations"]) == 1
    assert client.post(f"/api/assignments/{slow}/annotations", json=body).status_code == 409


def test_abandon_timeout_is_configurable(app, client):
    make_study(app, documents=DOCS[:1], annotators_per_doc=1)
    configure(app, abandon_after_minutes=5)
    _, slow = arrive(client, "slow")
    _age(app, slow, 6)
    status, _ = arrive(client, "fast")
    assert status == 302
    assert assignment(app, slow).status == "abandoned"


def test_abandoned_worker_coming_back_gets_their_document_again_if_free(app, client):
    make_study(app, documents=DOCS[:2], annotators_per_doc=1)
    _, token = arrive(client, "w1")
    _age(app, token, 120)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        assert release_abandoned(handle_of(session), study) == 1
    assert assignment(app, token).status == "abandoned"
    status, again = arrive(client, "w1", resume=token)
    assert status == 302 and again == token
    assert assignment(app, token).status == "active"


def test_randomised_conditions_are_balanced_sticky_and_hide_suggestions(app, client):
    make_study(app, documents=DOCS, annotators_per_doc=10, suggestions="shown")
    configure(app, randomise_conditions=True)
    conditions = {}
    for i in range(6):
        _, token = arrive(client, f"w{i}")
        conditions[f"w{i}"] = assignment(app, token).condition
        submit(client, token)
    assert Counter(conditions.values()) == {"assisted": 3, "unassisted": 3}
    _, token = arrive(client, "w0")  # the worker's second document keeps their condition
    assert assignment(app, token).condition == conditions["w0"]
    # the API shows suggestions only to assisted workers
    with app.app_context(), session_scope() as session:
        from app.models import Document, Suggestion

        doc = session.scalar(select(Document).where(Document.external_id == "doc-0"))
        session.add(
            Suggestion(
                document_id=doc.id,
                segment=0,
                start=0,
                end=7,
                text="Segment",
                category="CharE",
                score=0.9,
                detector="test",
                detector_version="1",
            )
        )
    seen = {}
    for worker, condition in conditions.items():
        row = None
        with app.app_context(), session_scope() as session:
            row = session.scalar(
                select(Assignment).where(Assignment.worker_id == worker).order_by(Assignment.id)
            )
            token, doc = row.token, row.document.external_id
        if doc == "doc-0":
            seen[condition] = len(client.get(f"/api/assignments/{token}").get_json()["suggestions"])
    assert seen.get("assisted", 1) == 1 and seen.get("unassisted", 0) == 0
    assert seen  # at least one condition met doc-0


def test_without_randomisation_no_condition_is_recorded(app, client):
    make_study(app, documents=DOCS, suggestions="shown")
    _, token = arrive(client, "w1")
    assert assignment(app, token).condition is None


GOLD_TEXT = "Anna met Bob. Bob said hello to the wrong person."


def _qualification_study(app, **rule):
    make_study(app, documents=DOCS, annotators_per_doc=1)
    gold = DocumentInput(
        "gold-1",
        [GOLD_TEXT],
        gold=[GoldSpan(segment=0, text="the wrong person", category="CharE", votes=3)],
    )
    gold2 = DocumentInput(
        "gold-2",
        [GOLD_TEXT],
        gold=[GoldSpan(segment=0, text="the wrong person", category="CharE", votes=3)],
    )
    with app.app_context(), session_scope() as session:
        from app.documents.studies import import_documents

        study = session.scalar(select(Study))
        import_documents(session, study, [gold, gold2], gold=True)
    configure(
        app,
        qualification_f1=rule.get("min_f1", 0.5),
        qualification_attempts=rule.get("attempts", 2),
    )


GOOD = {
    "segment": 0,
    "start": GOLD_TEXT.index("the wrong"),
    "end": len(GOLD_TEXT) - 1,
    "text": "the wrong person",
    "category": "CharE",
}
BAD = {"segment": 0, "start": 0, "end": 4, "text": "Anna", "category": "GramE"}


def test_qualification_gold_first_then_real_documents(app, client):
    _qualification_study(app)
    status, token = arrive(client, "good")
    assert document_of(app, token) in ("gold-1", "gold-2")  # drawn at random
    submit(client, token, [GOOD])
    done = client.get(f"/a/{token}/done")
    assert done.status_code == 200 and b"You qualified" in done.data
    score = assignment(app, token).scores["gold"]["overall"]
    assert score["precision"] == 1.0 and score["recall"] == 1.0 and score["f1"] == 1.0
    _, real = arrive(client, "good")
    assert document_of(app, real).startswith("doc-")
    # gold documents are test items: they do not use up annotator slots, and a second
    # worker also starts on a gold document
    _, second = arrive(client, "other")
    assert document_of(app, second) in ("gold-1", "gold-2")


def test_qualification_failure_gets_another_gold_then_stops(app, client):
    _qualification_study(app, attempts=2)
    _, first = arrive(client, "weak")
    submit(client, first, [BAD])
    page = client.get(f"/a/{first}/done")
    assert b"Not quite yet" in page.data
    assert assignment(app, first).scores["gold"]["overall"]["f1"] == 0.0
    _, second = arrive(client, "weak")
    assert {document_of(app, first), document_of(app, second)} == {"gold-1", "gold-2"}
    submit(client, second)  # nothing marked: F1 0 again
    status, token = arrive(client, "weak")
    assert status == 200 and token is None  # screened out: no new document
    # the final done page is the screen-out page, never the completion code (that would
    # send a failed worker to the platform as having completed the study)
    final = client.get(f"/a/{second}/done")
    assert final.status_code == 200 and b"Thank you for trying" in final.data
    assert b"completion-code" not in final.data
    # and no code anywhere: the practice assignments are screened_out
    assert (assignment(app, second).status, assignment(app, second).completion_code) == (
        "screened_out",
        None,
    )


def test_whole_segment_marks_do_not_qualify(app, client):
    """The old many-to-many any-overlap rule gave a worker who marks the whole segment
    P = R = F1 = 1; one-to-one with token IoU >= 0.5 gives 0 (3 of 13 tokens shared)."""
    _qualification_study(app, attempts=2)
    _, token = arrive(client, "gamer")
    whole = {"segment": 0, "start": 0, "end": len(GOLD_TEXT), "text": GOLD_TEXT}
    submit(client, token, [{**whole, "category": "CharE"}])
    assert b"Not quite yet" in client.get(f"/a/{token}/done").data
    gold = assignment(app, token).scores["gold"]
    assert gold["rule"] == "strict" and gold["overall"]["f1"] == 0.0
    assert gold["lenient"]["overall"]["f1"] == 1.0  # any overlap, one-to-one: 1 of 1


def test_gold_scores_stored_under_the_old_rule_are_redone(app, client):
    _qualification_study(app, attempts=1)
    _, token = arrive(client, "gamer")
    whole = {"segment": 0, "start": 0, "end": len(GOLD_TEXT), "text": GOLD_TEXT}
    submit(client, token, [{**whole, "category": "CharE"}])
    with app.app_context(), session_scope() as session:
        stored = session.scalar(select(Assignment).where(Assignment.token == token))
        old = {"documents": 1, "per_category": {}, "overall": {"f1": 1.0}}  # no "rule"
        stored.scores = {**stored.scores, "gold": old}
    status, again = arrive(client, "gamer")
    # re-scored strictly: not qualified (the old 1.0 let them in), no attempt left: screened out
    assert status == 200 and again is None


def test_qualification_off_gold_documents_are_ordinary(app, client):
    _qualification_study(app)
    configure(app, qualification_f1=None)
    docs = set()
    for i in range(5):
        status, token = arrive(client, f"w{i}")
        docs.add(document_of(app, token))
    assert docs == {"doc-0", "doc-1", "doc-2", "gold-1", "gold-2"}
