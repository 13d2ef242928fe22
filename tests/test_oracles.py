"""What a worker could learn by asking, replayed on SQLite and Postgres: which suggestion
ids a document hides from them (an add's ``suggestion_id`` answered 201 for a hidden id of
the document and 400 for any other: 52 of 52 hidden ids found in 399 requests), and a
qualification document's score (the done page printed its F1: each throwaway worker ID asked
again). Each test is named for the attack it replays; the answers are compared whole
(status and body), never timed."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select, update

from app.db import session_scope
from app.models import Annotation, Assignment, Document, Study, Suggestion
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, SEGMENTS, api_add, open_token, span
from tests.test_training import TEST, TEST_KEY, add, arrive, do_practice, training_study
from tests.test_training import span as training_span


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def add_suggestion(app, external_id: str, segment: int = 0, score: float = 0.9) -> int:
    with app.app_context(), session_scope() as session:
        document = session.scalar(select(Document).where(Document.external_id == external_id))
        suggestion = Suggestion(
            document_id=document.id,
            segment=segment,
            start=0,
            end=4,
            text="Anna",
            category="CharE",
            score=score,
            detector="test",
            detector_version="1",
        )
        session.add(suggestion)
        session.flush()
        return suggestion.id


def stored_links(app) -> dict[str, int | None]:
    """Each live mark's client_id and the suggestion it is stored as coming from."""
    with app.app_context(), session_scope() as session:
        rows = session.execute(select(Annotation.client_id, Annotation.suggestion_id)).all()
    return dict(rows)


# The fields an add's answer repeats from its own request, and the row's own id and time:
# what is left must be the same, whatever suggestion_id the request gave.
OWN = ("id", "created_at", "client_id", "segment", "start", "end", "text", "category")


def probe(client, token: str, n: int, suggestion_id: int | None) -> tuple[int, dict]:
    """An add on its own span (the ``n``-th word of segment 0) with ``suggestion_id``: the
    answer's status and its body without the fields the request chose."""
    word = SEGMENTS[0].split()[n].strip(".'s")
    body = {**span(0, word), "category": "CharE", "client_id": f"probe-{n}"}
    if suggestion_id is not None:
        body["suggestion_id"] = suggestion_id
    answer = api_add(client, token, body)
    kept = {key: value for key, value in answer.get_json().items() if key not in OWN}
    return answer.status_code, kept


def hidden_ids(app) -> dict[str, int]:
    """A suggestion on doc-1 (the worker's document) and one on doc-2, and an id that no
    suggestion has."""
    mine, other = add_suggestion(app, "doc-1"), add_suggestion(app, "doc-2")
    return {"this document's": mine, "another document's": other, "no one's": other + 1000}


def test_an_adds_suggestion_id_does_not_tell_which_ids_a_hidden_study_has(app, client):
    """The probe: in a study whose suggestions are hidden, an add naming a hidden id of the
    document was a 201 and any other id a 400. Now every id the worker was not shown gets
    the answer of an add without one, and is stored as no suggestion."""
    make_study(app, documents=DOCUMENTS, suggestions="hidden", annotators_per_doc=10)
    ids = hidden_ids(app)
    token = open_token(client)
    plain = probe(client, token, 0, None)
    answers = {name: probe(client, token, n, id_) for n, (name, id_) in enumerate(ids.items(), 1)}
    assert plain[0] == 201 and plain[1]["suggestion_id"] is None
    assert answers == dict.fromkeys(ids, plain), answers
    assert set(stored_links(app).values()) == {None}  # no mark claims a hidden suggestion


def test_an_unassisted_workers_suggestion_id_does_not_tell_which_ids_exist(app, client):
    """The same probe from the unassisted condition of a study that shows suggestions: the
    ids an assisted worker sees are hidden from this one."""
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    ids = hidden_ids(app)
    token = open_token(client)
    with app.app_context(), session_scope() as session:
        session.execute(update(Assignment).values(condition="unassisted"))
    plain = probe(client, token, 0, None)
    answers = {name: probe(client, token, n, id_) for n, (name, id_) in enumerate(ids.items(), 1)}
    assert answers == dict.fromkeys(ids, plain), answers
    assert set(stored_links(app).values()) == {None}


def test_a_shown_suggestion_is_stored_and_one_past_the_hint_limit_is_not(app, client):
    """What the worker is shown is what an add may name: the payload's own rule (score at
    least the study's lowest, at most its hints per segment)."""
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    shown = add_suggestion(app, "doc-1", score=0.9)
    below = add_suggestion(app, "doc-1", score=0.1)
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.settings = {**(study.settings or {}), "max_hints_per_segment": 1}
    token = open_token(client)
    payload = client.get(f"/api/assignments/{token}").get_json()
    assert [s["id"] for s in payload["suggestions"]] == [shown]
    assert probe(client, token, 0, shown)[1]["suggestion_id"] == shown
    assert probe(client, token, 1, below)[1]["suggestion_id"] is None
    assert stored_links(app) == {"probe-0": shown, "probe-1": None}


def test_an_edit_keeps_the_suggestion_its_mark_came_from(app, client):
    """An edit is the mark again with new values: the suggestion it was stored from stays,
    even once the study stopped showing it."""
    make_study(app, documents=DOCUMENTS, suggestions="shown", annotators_per_doc=10)
    shown = add_suggestion(app, "doc-1")
    token = open_token(client)
    body = {**span(0, "Anna"), "category": "CharE", "client_id": "m", "suggestion_id": shown}
    mark = api_add(client, token, body).get_json()
    assert mark["suggestion_id"] == shown
    with app.app_context(), session_scope() as session:
        session.scalar(select(Study)).suggestions = "hidden"
    edited = client.post(
        f"/api/assignments/{token}/annotations/{mark['id']}/edit",
        json={"comment": "on second thought", "client_id": "m2"},
    )
    assert edited.status_code == 201, edited.get_json()
    assert edited.get_json()["suggestion_id"] == shown
    assert stored_links(app) == {"m": shown, "m2": shown}


# --- a qualification document's score ------------------------------------------------------

# test_training's study: practice-1 teaches; test-1 and test-2 grade against TEST_KEY (two
# errors) with the pass mark F1 0.6. Marks on a graded document and the F1 they score:
GRADED = {
    "0.00": [],
    "0.40": [(0, "the wrong man", "CharE"), (0, "Tom", "RefE"), (1, "Dan", "RefE")],
    "0.80": [*((s, t, c) for s, t, c in TEST_KEY), (1, "Dan", "RefE")],
    "1.00": list(TEST_KEY),
}


def graded_attempt(client, worker: str, marks: list) -> str:
    """The worker's practice document submitted untouched, then a graded one with
    ``marks``, submitted; the graded assignment's token."""
    do_practice(client, worker)
    _, token, _ = arrive(client, worker)
    for segment, text, category in marks:
        answer = add(client, token, training_span(segment, text, category, TEST))
        assert answer.status_code == 201, answer.get_json()
    submitted = client.post(f"/api/assignments/{token}/submit")
    assert submitted.status_code == 200
    assert set(submitted.get_json()) <= {"completion_code", "redirect_url", "screened_out"}
    return token


def worker_page(client, token: str, worker: str) -> str:
    """The done page's text a worker reads: the main card, its links' targets (which name
    the worker and the token) left out."""
    page = client.get(f"/a/{token}/done").get_data(as_text=True)
    card = re.search(r"<main.*?</main>", page, re.S).group(0)
    return re.sub(r'href="[^"]*"', 'href=""', card).replace(worker, "WORKER")


def keys_of(value) -> set[str]:
    """Every key of a JSON value, however deep."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_of(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_of(v)}
    return set()


def scored_f1(app, token: str) -> str:
    with app.app_context(), session_scope() as session:
        assignment = session.scalar(select(Assignment).where(Assignment.token == token))
        return f"{assignment.scores['gold']['overall']['f1']:.2f}"


@pytest.mark.parametrize(("lower", "higher"), [("0.00", "0.40"), ("0.80", "1.00")])
def test_the_done_page_of_a_qualification_document_says_passed_or_not_never_the_score(
    app, client, lower, higher
):
    """The probe: the done page printed a graded attempt's F1, and each throwaway worker ID
    asked again. Two attempts on the same side of the pass mark now read the same, and no
    score is on the page, in the submit's answer or in the assignment's JSON; the
    researcher's pages still show it."""
    training_study(app, attempts=3)
    pages, tokens = {}, {}
    for score in (lower, higher):
        worker = f"w{score}"
        tokens[score] = graded_attempt(client, worker, GRADED[score])
        assert scored_f1(app, tokens[score]) == score  # the hand-computed F1 of the marks
        pages[score] = worker_page(client, tokens[score], worker)
        assert score not in pages[score] and "F1 0" not in pages[score]
        payload = client.get(f"/api/assignments/{tokens[score]}").get_json()
        assert not keys_of(payload) & {"scores", "gold", "f1", "score", "best_f1"}
    assert pages[lower] == pages[higher]
    passed = lower == "0.80"
    assert ("You qualified" in pages[lower]) is passed
    assert ("Not quite yet" in pages[lower]) is not passed
    from tests.test_researcher_isolation import ADA, create_researcher, logged_in

    create_researcher(app, ADA, admin=True)
    researcher = logged_in(app, ADA)
    seen = researcher.get("/admin/studies/demo/workers").get_data(as_text=True)
    assert lower in seen and higher in seen  # the researcher still sees each best gold F1


def test_the_screen_out_page_never_shows_the_score(app, client):
    """Out of attempts: two workers whose best F1 differ read the same screen-out page, and
    so does a later arrival of either (the page an attacker would ask for again)."""
    training_study(app, attempts=1)
    pages = []
    for score in ("0.00", "0.40"):
        worker = f"w{score}"
        token = graded_attempt(client, worker, GRADED[score])
        page = worker_page(client, token, worker)
        assert "Thank you for trying" in page and score not in page and "F1" not in page
        pages.append(page)
        again = client.get("/s/demo", query_string={"worker_id": worker}).get_data(as_text=True)
        assert "Thank you for trying" in again and score not in again
    assert pages[0] == pages[1]
