"""A worker is never offered a document they already had, even when that document is the one
with the fewest annotators, so that "fewest taken first" would pick it.

Whatever became of the earlier assignment (submitted, abandoned, rejected, returned), the next
arrival of the same worker ID, through the API (``POST /api/assignments``) or the study link
(``/s/<slug>?worker_id=``), gets another document or the "no documents left" answer: in a
plain study, in a study with qualification (a gold document they did, passed or not) and in
the demo study, which never fills up. SQLite and Postgres.

Only HTTP and the database's rows: the set-up arrives workers by HTTP and writes an earlier
assignment's status into its row; the assertions read the answers and the rows. So the test
holds for any implementation of the assignment policy.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from app.db import session_scope
from app.formats import DocumentInput, GoldSpan
from app.models import Assignment, Document, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import cli_in_process

STATUSES = ["submitted", "abandoned", "rejected", "returned"]
ENTRIES = ["api", "page"]
W = "worker-w"


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def texts(name: str) -> list[str]:
    return [f"The first segment of {name}.", f"The second segment of {name}."]


# --- HTTP ------------------------------------------------------------------------------------


def arrive(client, slug: str, worker: str, entry: str) -> tuple[int, str | None, str]:
    """One arrival by ``entry`` ("api" or "page"): (status, token of the new work or None,
    the answer's text)."""
    if entry == "api":
        answer = client.post("/api/assignments", json={"study": slug, "worker_id": worker})
        token = answer.get_json().get("token") if answer.status_code == 201 else None
    else:
        answer = client.get(f"/s/{slug}", query_string={"worker_id": worker})
        location = answer.headers.get("Location", "")
        token = location.split("/a/")[1].split("/")[0] if "/a/" in location else None
    return answer.status_code, token, answer.get_data(as_text=True)


def take(client, slug: str, worker: str, document: str) -> str:
    """``worker`` arrives naming ``document`` (the API's named arrival) and starts work on it
    (a heartbeat: a slot held by someone at work is not taken over)."""
    answer = client.post(
        "/api/assignments", json={"study": slug, "worker_id": worker, "document": document}
    )
    assert answer.status_code == 201, answer.get_json()
    token = answer.get_json()["token"]
    assert client.post(f"/api/assignments/{token}/heartbeat", json={}).status_code == 204
    return token


def submit(client, token: str, marks=()) -> None:
    """Mark ``marks``, see every segment, submit (as the annotate page does)."""
    for body in marks:
        assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    segments = client.get(f"/api/assignments/{token}").get_json()["document"]["segments"]
    for n in range(len(segments)):
        client.post(f"/api/assignments/{token}/position", json={"segment": n})
    answer = client.post(f"/api/assignments/{token}/submit")
    assert answer.status_code == 200, answer.get_json()


def end(app, client, token: str, status: str, marks=()) -> None:
    """The assignment ends ``status``: submitted by HTTP, any other status written into its
    row (as the release of stale work, a researcher's rejection or a platform's return
    leaves it)."""
    if status == "submitted":
        submit(client, token, marks)
        return
    with app.app_context(), session_scope() as session:
        session.execute(update(Assignment).where(Assignment.token == token).values(status=status))


# --- rows ------------------------------------------------------------------------------------


def worker_documents(app, worker: str = W) -> list[str]:
    """The documents of ``worker``'s assignments, oldest first."""
    with app.app_context(), session_scope() as session:
        return list(
            session.scalars(
                select(Document.external_id)
                .join(Assignment, Assignment.document_id == Document.id)
                .where(Assignment.worker_id == worker)
                .order_by(Assignment.id)
            )
        )


def taken_slots(app, slug: str) -> dict[str, int]:
    """Each document's active or submitted assignments."""
    with app.app_context(), session_scope() as session:
        documents = session.scalars(
            select(Document.external_id)
            .join(Study)
            .where(Study.slug == slug)
            .order_by(Document.position)
        ).all()
        taken = dict(
            session.execute(
                select(Document.external_id, func.count(Assignment.id))
                .join(Assignment, Assignment.document_id == Document.id)
                .join(Study)
                .where(Study.slug == slug, Assignment.status.in_(("active", "submitted")))
                .group_by(Document.external_id)
            ).all()
        )
        return {d: taken.get(d, 0) for d in documents}


def set_settings(app, slug: str, **settings) -> None:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        study.settings = {**(study.settings or {}), **settings}


def assert_nothing_left(app, client, slug: str, entry: str, had: list[str]) -> None:
    """The arrival is refused with 409 (nothing left for this worker) and writes no
    assignment. Not the refusal for work in progress: the worker has none, so that one would
    mean the policy chose a document they had and the database's unique (study, document,
    worker) turned it down."""
    status, token, text = arrive(client, slug, W, entry)
    assert (status, token) == (409, None), (worker_documents(app), text[:300])
    assert "work in progress" not in text, text[:300]
    assert worker_documents(app) == had


def arrive_for_new_work(client, slug: str, entry: str) -> str:
    """The worker's arrival gives them new work: its token."""
    status, token, text = arrive(client, slug, W, entry)
    assert status in (201, 302) and token is not None, (status, text[:300])
    return token


# --- a plain study -----------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("status", STATUSES)
def test_the_least_covered_document_they_had_is_never_offered_again(app, client, status, entry):
    """doc-1 is the least covered (the worker's own assignment at most), doc-2 is full,
    doc-3 has one free slot: the worker gets doc-3; then, having had it too, nothing, while
    doc-1 still has free slots."""
    make_study(app, "plain", documents=[(d, texts(d)) for d in ("doc-1", "doc-2", "doc-3")])
    first = take(client, "plain", W, "doc-1")
    end(app, client, first, status)
    for n in range(3):
        take(client, "plain", f"full-{n}", "doc-2")
    for n in range(2):
        take(client, "plain", f"busy-{n}", "doc-3")
    slots = taken_slots(app, "plain")
    assert slots["doc-1"] < slots["doc-3"] < slots["doc-2"] == 3  # doc-1: fewest taken

    token = arrive_for_new_work(client, "plain", entry)
    assert worker_documents(app) == ["doc-1", "doc-3"]

    end(app, client, token, status)
    assert taken_slots(app, "plain")["doc-1"] < 3  # a free slot the worker must not get
    assert_nothing_left(app, client, "plain", entry, ["doc-1", "doc-3"])
    # naming it is refused as well
    named = client.post(
        "/api/assignments", json={"study": "plain", "worker_id": W, "document": "doc-1"}
    )
    assert named.status_code == 409
    assert worker_documents(app) == ["doc-1", "doc-3"]


# --- a study with qualification ------------------------------------------------------------------

GOLD_TEXT = "Anna met Bob. Bob said hello to the wrong person."
GOOD = {
    "segment": 0,
    "start": GOLD_TEXT.index("the wrong"),
    "end": len(GOLD_TEXT) - 1,
    "text": "the wrong person",
    "category": "CharE",
}
BAD = {"segment": 0, "start": 0, "end": 4, "text": "Anna", "category": "GramE"}


def qualification_study(app) -> None:
    """Real documents doc-1 and doc-2 (three workers each), practice document practice-1,
    qualification documents gold-1 and gold-2; the pass mark is an F1 of 0.5, three tries."""
    make_study(app, "qual", documents=[(d, texts(d)) for d in ("doc-1", "doc-2")])
    span = [GoldSpan(segment=0, text="the wrong person", category="CharE", votes=3)]
    with app.app_context(), session_scope() as session:
        from app.documents.studies import import_documents

        study = session.scalar(select(Study).where(Study.slug == "qual"))
        practice = [DocumentInput("practice-1", [GOLD_TEXT], gold=span)]
        import_documents(session, study, practice, gold=True, practice=True)
        golds = [DocumentInput(g, [GOLD_TEXT], gold=span) for g in ("gold-1", "gold-2")]
        import_documents(session, study, golds, gold=True)
    set_settings(app, "qual", qualification={"min_f1": 0.5, "attempts": 3})


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("status", STATUSES)
def test_a_training_document_they_did_is_never_offered_again(app, client, status, entry):
    """Training documents take no slots (they are always the least covered): a worker who
    did the practice document and a qualification document, and failed, gets the other
    qualification document, then nothing; never one of those again."""
    qualification_study(app)
    practice = take(client, "qual", W, "practice-1")
    end(app, client, practice, status)
    gold = take(client, "qual", W, "gold-1")
    end(app, client, gold, status, [BAD])

    token = arrive_for_new_work(client, "qual", entry)
    assert worker_documents(app) == ["practice-1", "gold-1", "gold-2"]

    end(app, client, token, status, [BAD])
    assert_nothing_left(app, client, "qual", entry, ["practice-1", "gold-1", "gold-2"])


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_qualified_worker_never_gets_their_qualification_document_again(app, client, entry):
    """Passed on gold-1: real documents follow; doc-1 is full, so doc-2, then nothing, though
    gold-1 (no slots) and the practice document could always take another worker."""
    qualification_study(app)
    gold = take(client, "qual", W, "gold-1")
    end(app, client, gold, "submitted", [GOOD])
    for n in range(3):  # three others qualify and take doc-1
        end(app, client, take(client, "qual", f"full-{n}", "gold-2"), "submitted", [GOOD])
        take(client, "qual", f"full-{n}", "doc-1")

    token = arrive_for_new_work(client, "qual", entry)
    assert worker_documents(app) == ["gold-1", "doc-2"]

    end(app, client, token, "submitted")
    assert_nothing_left(app, client, "qual", entry, ["gold-1", "doc-2"])


# --- the demo study, which never fills up ----------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("status", STATUSES)
def test_the_demo_never_offers_a_document_twice(app, client, database_url, status, entry):
    """Every slot of the other documents taken, the one the worker had is the only one with
    free slots: the demo's arrival past the slots gives the worker each other document once,
    then tells them they have done them all."""
    result = cli_in_process({"DATABASE_URL": database_url, "SECRET_KEY": "test"}, "demo")
    assert result.returncode == 0, result.stdout + result.stderr
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == "demo"))
        assert study.settings["demo"] is True
        first, *others = [d.external_id for d in sorted(study.documents, key=lambda d: d.position)]
    token = take(client, "demo", W, first)
    end(app, client, token, status)
    for document in others:
        for n in range(3):
            take(client, "demo", f"full-{document}-{n}", document)
    slots = taken_slots(app, "demo")
    assert slots[first] < 3 and all(slots[d] == 3 for d in others)

    had = [first]
    for _ in others:
        token = arrive_for_new_work(client, "demo", entry)
        had = worker_documents(app)
        assert had[-1] in others and len(set(had)) == len(had), had
        end(app, client, token, status)
    assert sorted(had) == sorted([first, *others])
    assert_nothing_left(app, client, "demo", entry, had)
