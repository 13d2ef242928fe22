"""The LLM annotators' researcher pages: the Settings page lists them with a button that
queues a run (nothing slow in the request), the dashboard follows the run, the calibration
view shows the stored figures, the quotes that gave no mark, untrusted text as text; other
researchers' studies and unknown annotators are 404."""

from __future__ import annotations

import re

from sqlalchemy import func, select

from app.db import session_scope
from app.models import LlmJob, LlmRun
from tests.conftest import make_study
from tests.llm_annotating import add_annotator, answers
from tests.llm_standin import standin
from tests.test_admin import admin, csrf, researcher  # noqa: F401 (fixtures)

SEGMENTS = ["Anna met <b>Bob</b>. He smiled.", "Then Carl left. Carl was tired."]


def work_once(app) -> None:
    from app.detection.worker import work

    with app.app_context():
        work(app.extensions["db_sessionmaker"], None, once=True, figures=False, trainings=False)


def test_the_settings_button_queues_a_run_the_worker_does(app, admin):  # noqa: F811
    make_study(app, documents=[("d1", SEGMENTS)])
    app.config["FIGURES_GAMMA_SECONDS"] = 0
    table = {SEGMENTS[1]: [
        {"category": "CharE", "span": "Carl", "context": "", "reason": "x"},
        {"category": "CharE", "span": "Dora <script>", "context": "", "reason": "x"},
    ]}  # fmt: skip
    with standin(answers(table)) as server:
        page = admin.get("/admin/studies/demo/settings").get_data(as_text=True)
        assert 'id="llm-none"' in page
        add_annotator(app, "demo", server.url)
        page = admin.get("/admin/studies/demo/settings").get_data(as_text=True)
        assert 'id="run-llm-gpt"' in page and "llm:gpt" in page
        queued = admin.post("/admin/studies/demo/llm/gpt/run", data={"csrf_token": csrf(admin)})
        assert queued.status_code == 302 and queued.headers["Location"].endswith("settings#llm")
        assert len(server.requests) == 0  # the request only queued it
        with app.app_context(), session_scope() as session:
            assert session.scalar(select(func.count()).select_from(LlmJob)) == 1
            requested = session.scalar(select(LlmRun.requested_by))
        assert requested and "@" in requested
        live = admin.get("/admin/studies/demo/progress.json").get_json()
        assert live["llm_runs"][0]["stage"] == "annotating" and live["documents"] == 1
        dashboard = admin.get("/admin/studies/demo").get_data(as_text=True)
        assert 'id="llm-runs"' in dashboard and "0 / 1 documents" in dashboard
        before = live["fingerprint"]
        work_once(app)
    live = admin.get("/admin/studies/demo/progress.json").get_json()
    assert live["llm_runs"][0]["stage"] == "done" and live["fingerprint"] != before
    assert live["assignments"]["submitted"] == 0  # the humans' counts: the model is not there
    view = admin.get("/admin/studies/demo/llm/gpt").get_data(as_text=True)
    assert 'id="gold-f1"' in view and 'id="cost"' in view and 'id="problems"' in view
    assert "Dora &lt;script&gt;" in view and "<script>" not in view.split("</head>")[1]
    assert re.search(r"<td>absent</td>", view)


def test_unknown_annotators_and_bad_requests(app, admin):  # noqa: F811
    make_study(app, documents=[("d1", SEGMENTS)])
    assert admin.get("/admin/studies/demo/llm/nobody").status_code == 404
    refused = admin.post("/admin/studies/demo/llm/nobody/run", data={"csrf_token": csrf(admin)})
    assert refused.status_code == 404
    no_token = admin.post("/admin/studies/demo/llm/nobody/run")
    assert no_token.status_code in (400, 403)
    add_annotator(app, "demo", "http://127.0.0.1:9/v1")
    view = admin.get("/admin/studies/demo/llm/gpt").get_data(as_text=True)
    assert 'id="no-calibration"' in view


def test_the_calibration_view_never_writes_minus_zero():
    """A figure that rounds to zero from below reads 0.00, as on every researcher's page
    (the view printed "-0.00" for a category's α of -0.001)."""
    from app.web.admin.llm import ci

    assert ci({"value": -0.001, "low": -0.004, "high": 0.002}) == ("0.00", "0.00–0.00")
    assert ci({"value": -0.2, "low": -0.3, "high": -0.1}) == ("-0.20", "-0.30–-0.10")
    assert ci({"value": None}) == ("–", "")
