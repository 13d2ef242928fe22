"""The dashboard drawn from the report's digest (app/quality/digest.py): a big study's page,
drawn from the stored digest, is the page a small study gets from the report computed in the
request; the digest's cuts, hand-computed; the Progress card's submitted count, kept per study
state (app/web/admin/progress.py), follows every change to the counted work."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import func, select

from app.db import session_scope
from app.models import Annotation, Assignment
from app.quality.digest import BREAKDOWN_ROWS, digest
from tests.conftest import make_study
from tests.helpers import annotation_body, open_token
from tests.test_served_report import _app, _csrf, run_jobs
from tests.test_served_report import admin as admin  # noqa: F401 - the fixture
from tests.test_served_report import app as app  # noqa: F401 - the fixture
from tests.test_served_report import database_url as database_url  # noqa: F401 - the fixture

TEXT = ["Anna met Paris in the spring.", "Then the two of them left town."]
DOCS = [(f"d-{n:02d}", TEXT) for n in range(BREAKDOWN_ROWS + 2)]


def mark(app, worker: str, document: str, texts: list[str], submit: bool = True) -> None:
    client = app.test_client()  # a worker's own address: the arrival limit is per address
    client.environ_base["REMOTE_ADDR"] = f"10.0.{int(worker[1:])}.{int(document[2:]) + 1}"
    token = open_token(client, worker, document)
    for text in texts:
        body = annotation_body(0, text, "CharE", texts=TEXT)
        assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    if submit:
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200


@pytest.fixture
def big(app, admin):  # noqa: F811 - the fixtures above
    """Fourteen documents, each by three workers who agree on some and not on others."""
    app.config["FIGURES_GAMMA_SECONDS"] = 0  # γ off: this is the report's path (γ: elsewhere)
    make_study(app, documents=DOCS, annotators_per_doc=3)
    for n, (document, _) in enumerate(DOCS):
        mark(app, "w1", document, ["Anna"])
        mark(app, "w2", document, ["Anna"] if n % 3 else ["Paris"])
        mark(app, "w3", document, ["spring", "Anna"][: 1 + n % 2])
    return app


FIGURES = re.compile(r'<p class="report-state".*?</main>', re.S)
CHANGING = [
    (re.compile(r'name="csrf_token" value="[^"]*"'), 'name="csrf_token"'),
    (re.compile(r'data-fingerprint="[^"]*"'), ""),
    (re.compile(r'<p class="report-state".*?</p>', re.S), ""),  # the served state's words
]


def figures_html(client) -> str:
    page = client.get("/admin/studies/demo")
    assert page.status_code == 200
    html = FIGURES.search(page.get_data(as_text=True)).group(0)
    for pattern, replacement in CHANGING:
        html = pattern.sub(replacement, html)
    return html


def test_the_stored_digest_draws_the_page_the_inline_report_draws(big, admin, database_url):  # noqa: F811
    stored_page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert "not computed yet" in stored_page  # REPORT_INLINE_ANNOTATIONS = 0: served, none yet
    assert run_jobs(big) == 1
    # the slow figures asked for: both pages say so (their job as it is now, not as stored)
    answer = admin.post("/admin/studies/demo/figures", data={"csrf_token": _csrf(admin)})
    assert answer.status_code in (302, 303)
    stored = figures_html(admin)
    assert '<span class="flag">queued</span>' in stored
    assert "computed" in admin.get("/admin/studies/demo").get_data(as_text=True)
    inline_app = _app(database_url, 5000)  # the same study, small enough to compute inline
    try:
        from tests.test_admin import login

        client = inline_app.test_client()
        assert login(client).status_code == 302
        page = client.get("/admin/studies/demo").get_data(as_text=True)
        assert "up to date (computed for this page)" in page
        inline = figures_html(client)
    finally:
        inline_app.extensions["db_engine"].dispose()
    assert stored == inline
    # what the page draws: 12 of the 14 documents, lowest α first, and the worker table
    assert "… and 2 more in Report JSON." in stored
    rows = re.search(r'id="agreement-per-document">.*?</table>', stored, re.S).group(0)
    assert rows.count("<tr>") == 1 + BREAKDOWN_ROWS
    assert all(f">{w}<" in stored for w in ("w1", "w2", "w3"))


def test_the_job_stores_the_digest_of_the_report_it_stores(big, admin):  # noqa: F811
    from app.models import FigureJob, Study
    from app.quality.reporting import study_report

    admin.get("/admin/studies/demo")  # queues the first computation
    assert run_jobs(big) == 1
    with big.app_context(), session_scope() as session:
        report = study_report(session, session.scalar(select(Study)))
        stored_report, stored_digest = session.execute(
            select(FigureJob.report, FigureJob.digest)
        ).one()
    assert json.loads(stored_digest) == json.loads(json.dumps(digest(report), default=str))
    assert json.loads(stored_digest) == digest(json.loads(stored_report))
    cut = json.loads(stored_digest)
    assert cut["per_document"]["total"] == len(DOCS) == len(report["agreement"]["per_document"])
    assert len(cut["per_document"]["rows"]) == BREAKDOWN_ROWS
    assert "per_document" not in cut["progress"] and "per_document" not in cut["agreement"]


def agreement_row(name: str, alpha: float | None) -> dict:
    return {"document": name, "workers": 2, "token": {"alpha": alpha, "two_agree": None}}


def test_the_digest_by_hand():
    rows = [agreement_row(f"d{n}", a) for n, a in enumerate([0.5, None, -0.2, 0.9] * 4)]
    report = {
        "progress": {
            "documents": 3,
            "practice_documents": 0,
            "per_document": [
                {"source": "gpt", "segments": 4, "submitted": 2},
                {"source": "gpt", "segments": 3, "submitted": 1},
                {"source": "human", "segments": 5, "submitted": 0},
            ],
        },
        "categories": {"total": 0},
        "workers": [],
        "agreement": {
            "documents": 16,
            "per_document": rows,
            "per_pair": rows[:2],
            "pairs": {
                "workers": ["a", "b"],
                "gamma": [[None, {"gamma": 0.5}], [{"gamma": 0.5}, None]],
                "documents": [[0, 3], [3, 0]],
            },
        },
    }
    cut = digest(report)
    # 4 + 4 + 3 segment-submissions from gpt (4 × 2 + 3 × 1), none from human
    assert cut["segments_per_source"] == {"gpt": 11, "human": 0}
    assert cut["progress"] == {"documents": 3, "practice_documents": 0}
    alphas = [r["token"]["alpha"] for r in cut["per_document"]["rows"]]
    assert alphas == [-0.2] * 4 + [0.5] * 4 + [0.9] * 4  # 12 rows, the lowest first
    assert cut["per_document"]["total"] == 16
    assert [r["token"]["alpha"] for r in cut["per_pair"]["rows"]] == [0.5, None]
    assert cut["agreement"] == {"documents": 16}
    assert cut["heat"]["rows"][0]["cells"][1] == {"value": 0.5, "shade": 2, "documents": 3}
    assert cut["heat"]["more"] == 0


def submitted_count(app) -> int:
    with app.app_context(), session_scope() as session:
        return session.scalar(
            select(func.count())
            .select_from(Annotation)
            .join(Assignment, Assignment.id == Annotation.assignment_id)
            .where(Assignment.status == "submitted", Annotation.removed_at.is_(None))
        )


def test_the_submitted_count_follows_every_change(app, admin):  # noqa: F811
    make_study(app, documents=DOCS[:2], annotators_per_doc=3)

    def polled() -> dict:
        return admin.get("/admin/studies/demo/progress.json").get_json()["annotations"]

    assert polled() == {"in_progress": 0, "submitted": 0}
    mark(app, "w1", "d-00", ["Anna", "Paris"])
    assert polled() == {"in_progress": 0, "submitted": 2}
    mark(app, "w2", "d-00", ["Anna"], submit=False)  # in progress: no change to the count
    assert polled() == {"in_progress": 1, "submitted": 2}
    mark(app, "w3", "d-01", ["spring"])
    assert polled() == {"in_progress": 1, "submitted": 3} and submitted_count(app) == 3
    for action, expected in (("reject", 1), ("approve", 3)):
        data = {"worker": "w1", "action": action, "csrf_token": _csrf(admin)}
        assert admin.post("/admin/studies/demo/workers/action", data=data).status_code == 303
        assert polled()["submitted"] == expected == submitted_count(app), action
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert re.search(r'data-field="annotations.submitted">3<', page)


def test_a_count_is_kept_only_under_a_change_it_saw(app, admin):  # noqa: F811
    """Postgres hands change ids out in insert order: a poll that counted while an older change
    was in flight must not keep its count under a later id (app/models/changes.py)."""
    if app.extensions["db_engine"].dialect.name != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    import threading

    make_study(app, documents=DOCS[:3], annotators_per_doc=3)
    mark(app, "w1", "d-00", ["Anna", "Paris"], submit=False)
    factory = app.extensions["db_sessionmaker"]
    with app.app_context():
        slow = factory()  # a submit in flight: its change's id is taken, not committed
        assignment = slow.scalar(select(Assignment).where(Assignment.worker_id == "w1"))
        assignment.status = "submitted"
        slow.flush()
        try:
            mark(app, "w2", "d-01", ["Anna"])  # a later change, committed first
            seen: list[int] = []
            poll = threading.Thread(
                target=lambda: seen.append(
                    admin.get("/admin/studies/demo/progress.json").get_json()["annotations"][
                        "submitted"
                    ]
                )
            )
            poll.start()
            poll.join(0.5)
            assert poll.is_alive()  # it waits for the change in flight
            slow.commit()
            poll.join(10)
        finally:
            slow.close()
    assert seen == [3]
    polled = admin.get("/admin/studies/demo/progress.json").get_json()["annotations"]
    assert polled["submitted"] == 3 == submitted_count(app)
