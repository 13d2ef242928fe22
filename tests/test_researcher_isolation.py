"""A researcher sees, exports and changes only the studies they own or that
were shared with them; an admin sees all. Every /admin route of a study answers 404 to
anyone else (the same answer as for a study that does not exist), on SQLite and Postgres."""

from __future__ import annotations

import io
import json
import re

import pytest
from sqlalchemy import func, select

from app.db import session_scope
from app.models import Document, Study
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import annotation_body, api_add, open_token, run_import_worker
from tests.llm_annotating import add_annotator
from tests.routes import requests

PASSWORD = "a long enough password"
ALICE, BOB, ADA = "alice@example.org", "bob@example.org", "ada@example.org"
TOKEN_PATTERN = re.compile(r'name="csrf_token" value="([^"]+)"')
PHISHING = "https://evil.example.net/complete"


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def create_researcher(app, email: str, *, admin: bool = False) -> None:
    from app.researchers.accounts import create_researcher as create

    with app.app_context(), session_scope() as session:
        researcher = create(session, email, PASSWORD)
        if admin:
            researcher.role = "admin"


def csrf(client) -> str:
    page = client.get("/admin/login").get_data(as_text=True)
    return TOKEN_PATTERN.search(page).group(1)


def logged_in(app, email: str):
    client = app.test_client()
    answer = client.post(
        "/admin/login", data={"email": email, "password": PASSWORD, "csrf_token": csrf(client)}
    )
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return client


def study_row(app, slug: str) -> tuple[str, str | None, int]:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        documents = session.scalar(
            select(func.count()).select_from(Document).where(Document.study_id == study.id)
        )
        return study.platform, study.completion_url, documents


@pytest.fixture
def alice_study(app):
    """Alice (a plain researcher) creates study `alpha` on the admin page; Bob exists too."""
    create_researcher(app, ALICE)
    create_researcher(app, BOB)
    alice = logged_in(app, ALICE)
    answer = alice.post(
        "/admin/studies/new",
        data={"csrf_token": csrf(alice), "slug": "alpha", "taxonomy": "snac.yaml"},
    )
    assert answer.status_code == 302
    paragraphs = {"secret-doc": ["Alice's unpublished text.", "More of it."]}
    answer = alice.post(
        "/admin/studies/alpha/documents",
        data={
            "csrf_token": csrf(alice),
            "file": (io.BytesIO(json.dumps(paragraphs).encode()), "docs.json"),
            "format": "auto",
        },
        content_type="multipart/form-data",
    )
    assert answer.status_code == 302
    run_import_worker(app)  # uploads are imported by the worker
    return alice


STUDY_READS = [
    "/admin/studies/{slug}",
    "/admin/studies/{slug}/progress.json",
    "/admin/studies/{slug}/report.json",
    "/admin/studies/{slug}/export.csv",
    "/admin/studies/{slug}/export.jsonl",
    "/admin/studies/{slug}/export.snac",
    "/admin/studies/{slug}/export.assignments-csv",
    "/admin/studies/{slug}/export.assignments-jsonl",
    "/admin/studies/{slug}/workers",
]


def attack(app, client, slug: str) -> list[tuple[str, int]]:
    """Everything a researcher might try on a study: the status of each answer."""
    answers = [(url, client.get(url.format(slug=slug)).status_code) for url in STUDY_READS]
    token = csrf(client)
    settings = client.post(
        f"/admin/studies/{slug}/settings",
        data={"csrf_token": token, "platform": "generic", "completion_url": PHISHING},
    )
    answers.append(("settings", settings.status_code))
    upload = client.post(
        f"/admin/studies/{slug}/documents",
        data={
            "csrf_token": token,
            "file": (io.BytesIO(b'{"planted": ["Bob was here."]}'), "planted.json"),
            "format": "auto",
        },
        content_type="multipart/form-data",
    )
    answers.append(("documents", upload.status_code))
    share = client.post(
        f"/admin/studies/{slug}/collaborators", data={"csrf_token": token, "email": BOB}
    )
    answers.append(("share", share.status_code))
    for action in ("reject", "block", "note"):
        managed = client.post(
            f"/admin/studies/{slug}/workers/action",
            data={"csrf_token": token, "worker": "any", "action": action, "note": "x"},
        )
        answers.append((f"worker {action}", managed.status_code))
    timing = client.post(
        f"/admin/studies/{slug}/workers/settings",
        data={"csrf_token": token, "min_seconds_per_segment": "1"},
    )
    answers.append(("time settings", timing.status_code))
    answers.append(("worker page", client.get(f"/admin/studies/{slug}/worker?id=any").status_code))
    return answers


def test_another_researcher_cannot_list_read_export_or_change_a_study(app, alice_study):
    bob = logged_in(app, BOB)
    listing = bob.get("/admin/").get_data(as_text=True)
    assert "alpha" not in listing
    before = study_row(app, "alpha")
    answers = attack(app, bob, "alpha")
    assert answers == [(url, 404) for url, _ in answers], answers
    run_import_worker(app)  # a queued upload of Bob's would be stored now
    # nothing changed: no phishing completion URL, no planted document, no collaborator
    assert study_row(app, "alpha") == before == ("generic", None, 1)
    assert bob.get("/admin/studies/alpha").status_code == 404
    # the same answer as for a study that does not exist: existence does not leak
    missing = bob.get("/admin/studies/no-such-study")
    taken = bob.get("/admin/studies/alpha")
    assert (missing.status_code, missing.data) == (taken.status_code, taken.data)
    # Alice still has it all
    assert "alpha" in alice_study.get("/admin/").get_data(as_text=True)
    for url in STUDY_READS:
        assert alice_study.get(url.format(slug="alpha")).status_code == 200, url
    csv_text = alice_study.get("/admin/studies/alpha/export.csv").get_data(as_text=True)
    assert csv_text.startswith("study,") or "document" in csv_text


def test_sharing_gives_and_takes_back_access(app, alice_study):
    bob = logged_in(app, BOB)
    assert bob.get("/admin/studies/alpha").status_code == 404
    answer = alice_study.post(
        "/admin/studies/alpha/collaborators", data={"csrf_token": csrf(alice_study), "email": BOB}
    )
    assert answer.status_code == 302
    page = alice_study.get("/admin/studies/alpha").get_data(as_text=True)
    assert BOB in page
    assert "alpha" in bob.get("/admin/").get_data(as_text=True)
    for url in STUDY_READS:
        assert bob.get(url.format(slug="alpha")).status_code == 200, url
    answer = bob.post(
        "/admin/studies/alpha/settings",
        data={"csrf_token": csrf(bob), "platform": "generic", "abandon_after_minutes": "20"},
    )
    assert answer.status_code == 302  # a collaborator may change the study...
    # ...but not share it further or take it from its owner
    carol = "carol@example.org"
    create_researcher(app, carol)
    answer = bob.post(
        "/admin/studies/alpha/collaborators", data={"csrf_token": csrf(bob), "email": carol}
    )
    assert answer.status_code == 403
    assert logged_in(app, carol).get("/admin/studies/alpha").status_code == 404
    # sharing with nobody known is a readable form error that changes nothing
    answer = alice_study.post(
        "/admin/studies/alpha/collaborators",
        data={"csrf_token": csrf(alice_study), "email": "nobody@example.org"},
    )
    assert answer.status_code == 400
    assert "no researcher" in answer.get_data(as_text=True)
    for hostile in ("bob\x00@example.org", "x" * 5000):
        answer = alice_study.post(
            "/admin/studies/alpha/collaborators",
            data={"csrf_token": csrf(alice_study), "email": hostile},
        )
        assert answer.status_code == 400, hostile[:20]
    answer = alice_study.post(
        "/admin/studies/alpha/collaborators/remove",
        data={"csrf_token": csrf(alice_study), "email": BOB},
    )
    assert answer.status_code == 302
    assert bob.get("/admin/studies/alpha").status_code == 404
    assert "alpha" not in bob.get("/admin/").get_data(as_text=True)


def test_admin_sees_every_study_and_unowned_studies_only_admins(app, alice_study):
    make_study(app, slug="cli-made")  # created by the CLI or fixtures: no owner
    create_researcher(app, ADA, admin=True)
    ada = logged_in(app, ADA)
    listing = ada.get("/admin/").get_data(as_text=True)
    assert "alpha" in listing and "cli-made" in listing
    for slug in ("alpha", "cli-made"):
        for url in STUDY_READS:
            assert ada.get(url.format(slug=slug)).status_code == 200, (slug, url)
    assert "cli-made" not in alice_study.get("/admin/").get_data(as_text=True)
    assert alice_study.get("/admin/studies/cli-made").status_code == 404
    bob = logged_in(app, BOB)
    assert all(status == 404 for _, status in attack(app, bob, "cli-made"))


# What a study's routes read besides the slug: a real document of alpha (the review pages and
# their writes look it up before anything else; the removal of one a worker annotated is
# refused, not done), a real worker (the worker page), a format the export knows.
STUDY_SAMPLES = {"slug": "alpha", "fmt": "csv", "name": "gpt"}  # name: the LLM annotator
STUDY_QUERY = {"document": "secret-doc", "id": "w-alpha"}
STUDY_FORM = {"document_id": "secret-doc"}


def test_every_study_route_answers_404_to_a_researcher_without_access(app, alice_study):
    """Every /admin rule with a study slug, present and future, methods included, each
    argument of its converter's type (tests/routes.py). Each request is shown to reach its
    view's work: the owner's same request is not a 404 (their own form, the same values), so
    Bob's 404 can only come from the access check; and nothing of the study changed."""
    worker = app.test_client()
    token = open_token(worker, "w-alpha", "secret-doc", "alpha")
    body = annotation_body(0, "unpublished", "CharE", texts=["Alice's unpublished text."])
    assert api_add(worker, token, body).status_code == 201
    # an LLM annotator of the study, so that its pages' rules reach their view for Alice
    add_annotator(app, "alpha", "http://127.0.0.1:9/v1", name=STUDY_SAMPLES["name"])
    routes = requests(app, "/admin", STUDY_SAMPLES, needs="slug")
    assert len(routes) >= 39, [url for _, _, url in routes]
    bob = logged_in(app, BOB)
    form = {**STUDY_FORM, "csrf_token": csrf(bob)}
    before = study_row(app, "alpha")
    for _, method, url in routes:
        answer = bob.open(url, method=method, data=form, query_string=STUDY_QUERY)
        assert answer.status_code == 404, (method, url, answer.status_code)
        assert b"Alice's unpublished" not in answer.data
    assert study_row(app, "alpha") == before
    form = {**STUDY_FORM, "csrf_token": csrf(alice_study)}
    reached = [
        (method, url, alice_study.open(url, method=method, data=form, query_string=STUDY_QUERY))
        for _, method, url in routes
    ]
    assert [(m, u) for m, u, answer in reached if answer.status_code == 404] == []


def test_the_route_walk_refuses_to_skip_a_route():
    """tests/routes.py: a sample its converter refuses, or a converter it has no value for,
    stops the walk instead of sending a request that reaches no route."""
    from flask import Flask
    from werkzeug.routing import BaseConverter

    class Year(BaseConverter):
        regex = r"\d{4}"

    site = Flask(__name__)
    site.url_map.converters["year"] = Year
    site.add_url_rule("/rows/<int:row_id>", "row", lambda row_id: "")
    assert [url for _, _, url in requests(site, "/rows")] == ["/rows/1"]
    with pytest.raises(ValueError, match="csv"):  # not a number: the int converter refuses it
        requests(site, "/rows", {"row_id": "csv"})
    with pytest.raises(AssertionError, match="!="):  # a number as text is not the value routed
        requests(site, "/rows", {"row_id": "1"})
    site.add_url_rule("/years/<year:year>", "year", lambda year: "")
    with pytest.raises(LookupError, match="no sample value for the converter Year"):
        requests(site, "/years")
