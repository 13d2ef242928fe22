"""An arrival over the arrival limit gets a worker page, not werkzeug's bare English "Too
Many Requests": in the worker's language (the study's, else the browser's), saying when to
try again with a ``Retry-After`` header that agrees, 429, never cached, framed by nobody (or
by MTurk's origins for an MTurk study) like every worker page; the consent post's refusal
too. The JSON API's 429 stays JSON."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app.crowd.platforms import MTURK_ORIGINS
from app.db import session_scope
from app.models import Study
from app.web.limit_page import waiting_time
from tests.conftest import make_study

DOCS = [("d1", ["One sentence.", "Two sentences."])]


def limited(app, per_minute: int = 2) -> None:
    make_study(app, documents=DOCS, annotators_per_doc=100)
    app.config["ARRIVAL_RATE_LIMIT"] = f"{per_minute} per minute"


def settings(app, **values) -> None:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        for name, value in values.items():
            setattr(study, name, value)


def over_the_limit(client, path: str = "/s/demo?worker_id=w9", **headers):
    """Two arrivals from one address, then the refused third."""
    for n in range(2):
        assert client.get(f"/s/demo?worker_id=w{n}").status_code == 302
    return client.get(path, headers=headers)


def words_for(seconds: int, language: str) -> str:
    """The page's words for a wait, by hand: up to 59 s in seconds, else whole minutes up."""
    seconds_word, one, two = {
        "en": ("seconds", "1 minute", "2 minutes"),
        "de": ("Sekunden", "1 Minute", "2 Minuten"),
    }[language]
    if seconds < 60:
        return f"in {seconds} {seconds_word}"
    return f"in {one}" if seconds == 60 else f"in {two}"


def text_of(answer) -> str:
    return re.sub(r"\s+", " ", answer.get_data(as_text=True))


@pytest.mark.parametrize(
    ("accept", "language", "heading", "again"),
    [
        ("en", "en", "Please wait a moment", "Try again"),
        ("de-DE,de;q=0.9", "de", "Bitte warten Sie einen Moment", "Erneut versuchen"),
    ],
)
def test_the_refused_arrival_is_a_worker_page_in_the_workers_language(
    app, client, accept, language, heading, again
):
    limited(app)
    answer = over_the_limit(client, **{"Accept-Language": accept})
    page = text_of(answer)
    assert answer.status_code == 429 and answer.mimetype == "text/html"
    assert f'<html lang="{language}" dir="ltr">' in page
    assert f"<h1>{heading}</h1>" in page and "Too Many Requests" not in page
    assert 'class="card narrow returned"' in page  # the other worker pages' card
    assert "/assets/" in page and "marginalia.css" in page  # and their stylesheet
    retry = int(answer.headers["Retry-After"])
    assert 1 <= retry <= 61  # a one-minute window that began with the first arrival
    assert words_for(retry, language) in page
    assert f'id="try-again" href="/s/demo?worker_id=w9">{again}</a>' in page
    # the frame and cache rules of every worker page
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert answer.headers["Cache-Control"] == "no-store"


def test_the_study_language_wins_and_an_mturk_study_keeps_its_frame(app, client):
    limited(app)
    settings(app, settings={"interface_lang": "de"}, platform="mturk", title="Lesestudie")
    answer = over_the_limit(client, **{"Accept-Language": "en"})
    page = text_of(answer)
    assert answer.status_code == 429 and "Bitte warten Sie einen Moment" in page
    assert '<p class="study-name">Lesestudie</p>' in page
    policy = answer.headers["Content-Security-Policy"]
    assert (
        all(origin in policy for origin in MTURK_ORIGINS)
        and "X-Frame-Options" not in answer.headers
    )


def test_an_unknown_study_over_the_limit_gets_the_page_without_a_study(app, client):
    limited(app)
    answer = over_the_limit(client, "/s/no-such-study?worker_id=x")
    assert answer.status_code == 429 and "Please wait a moment" in text_of(answer)
    assert 'class="study-name"' not in text_of(answer)


def test_the_consent_post_over_the_limit_links_back_to_its_arrival(app, client):
    limited(app)
    over_the_limit(client)
    form = {"PROLIFIC_PID": "p1", "STUDY_ID": "s", "SESSION_ID": "x", "decision": "agree"}
    answer = client.post("/s/demo/consent", data=form, headers={"Accept-Language": "de"})
    assert answer.status_code == 429 and "Bitte warten Sie einen Moment" in text_of(answer)
    assert 'href="/s/demo?PROLIFIC_PID=p1&amp;STUDY_ID=s&amp;SESSION_ID=x"' in text_of(answer)


def test_the_api_refusal_stays_json(app, client):
    limited(app)
    over_the_limit(client)
    for body in ({"study": "demo", "worker_id": "x"}, {"study": "demo", "document": "d1"}):
        answer = client.post("/api/assignments", json=body)
        assert answer.status_code == 429 and answer.mimetype == "application/json"
        assert answer.get_json()["error"] == "2 per 1 minute"


@pytest.mark.parametrize(
    ("seconds", "english", "german"),
    [
        (1, "in 1 second", "in 1 Sekunde"),
        (59, "in 59 seconds", "in 59 Sekunden"),
        (60, "in 1 minute", "in 1 Minute"),
        (61, "in 2 minutes", "in 2 Minuten"),
        (3599, "in 1 hour", "in 1 Stunde"),
        (3601, "in 2 hours", "in 2 Stunden"),
    ],
)
def test_the_wait_is_said_rounded_up_never_too_early(app, seconds, english, german):
    for accept, words in (("en", english), ("de", german)):
        with app.test_request_context(headers={"Accept-Language": accept}):
            assert waiting_time(seconds) == words
