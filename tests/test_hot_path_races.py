"""The actions' rules under racing requests, through the worker API (on Postgres an add's
lock and insert go in one round trip, app/annotation/hot_sql.py), on SQLite and Postgres:
two racing adds of one span cannot both pass the duplicate guard, racing
retries of one ``client_id`` store it once, and an add racing the submit is either stored
before the submit (and acknowledged) or refused, never stored after it."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Annotation, Assignment
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, open_token

RACERS = 8


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def token(app, client):
    make_study(app, documents=DOCUMENTS)
    return open_token(client)


def race(app, sends: list) -> list:
    """Each of ``sends`` (a function of a test client) from its own thread, at once."""
    barrier = threading.Barrier(len(sends))
    results: list = [None] * len(sends)

    def run(index: int) -> None:
        client = app.test_client()
        barrier.wait()
        results[index] = sends[index](client)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sends))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def stored(app, token: str) -> list[Annotation]:
    with app.app_context(), session_scope() as session:
        assignment_id = session.scalar(select(Assignment.id).where(Assignment.token == token))
        return list(
            session.scalars(select(Annotation).where(Annotation.assignment_id == assignment_id))
        )


def test_racing_duplicates_store_one(app, token):
    url = f"/api/assignments/{token}/annotations"
    bodies = [annotation_body(0, "Zoë", "CharE", client_id=f"dup-{i}") for i in range(RACERS)]
    answers = race(app, [lambda c, b=b: c.post(url, json=b) for b in bodies])
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [201] + [409] * (RACERS - 1), [a.get_json() for a in answers]
    winner = next(a.get_json()["id"] for a in answers if a.status_code == 201)
    assert {a.get_json()["existing_id"] for a in answers if a.status_code == 409} == {winner}
    assert [a.id for a in stored(app, token)] == [winner]


def test_racing_retries_of_one_client_id_store_it_once(app, token):
    url = f"/api/assignments/{token}/annotations"
    body = annotation_body(1, "brother", "CharE", client_id="same")
    answers = race(app, [lambda c: c.post(url, json=body)] * RACERS)
    assert sorted(a.status_code for a in answers) == [200] * (RACERS - 1) + [201]
    assert len({a.get_json()["id"] for a in answers}) == 1
    assert len(stored(app, token)) == 1


@pytest.mark.parametrize("round_", range(3))
def test_an_add_racing_the_submit_is_stored_before_it_or_refused(app, token, round_):
    base = f"/api/assignments/{token}"
    spans = [(0, "Zoë"), (0, "Paris"), (1, "brother"), (1, "café"), (2, "Pedro"), (2, "Hero")]
    sends = [
        lambda c, s=s, i=i: c.post(
            f"{base}/annotations", json=annotation_body(*s, "CharE", client_id=f"r{round_}-{i}")
        )
        for i, s in enumerate(spans)
    ]
    sends.insert(round_ * 2, lambda c: c.post(f"{base}/submit"))
    answers = race(app, sends)
    submit = answers.pop(round_ * 2)
    assert submit.status_code == 200, submit.get_json()
    acknowledged = {a.get_json()["id"] for a in answers if a.status_code == 201}
    assert all(a.status_code in (201, 409) for a in answers), [a.get_json() for a in answers]
    # Nothing stored that its client was not told about, nothing acknowledged and lost. (The
    # submit locks the assignment's row, which every add holds from its claim to its commit,
    # so the submit's transaction saw every add that was stored.)
    assert {a.id for a in stored(app, token)} == acknowledged


def test_a_remove_racing_the_submit_is_done_before_it_or_refused(app, client, token):
    base = f"/api/assignments/{token}"
    spans = [(0, "Zoë"), (0, "Paris"), (1, "brother"), (2, "Pedro")]
    ids = [
        client.post(
            f"{base}/annotations", json=annotation_body(*s, "CharE", client_id=f"rm-{i}")
        ).get_json()["id"]
        for i, s in enumerate(spans)
    ]
    sends = [lambda c, i=i: c.delete(f"{base}/annotations/{i}") for i in ids]
    sends.insert(2, lambda c: c.post(f"{base}/submit"))
    answers = race(app, sends)
    assert answers.pop(2).status_code == 200
    assert all(a.status_code in (204, 409) for a in answers), [a.get_json() for a in answers]
    done = {i for i, a in zip(ids, answers, strict=True) if a.status_code == 204}
    assert {a.id for a in stored(app, token) if a.removed_at is not None} == done
