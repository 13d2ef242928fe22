"""The LLM backend through the real queue and worker: an ExtEval study, a stand-in
chat-completions server, suggestions with reasons in the page payload, the recall figure in
the report; bad answers counted, a dead endpoint never stops the worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.detection.worker import work
from app.models import DetectionJob, Document, Study, Suggestion
from app.quality.reporting import study_report
from model_server.llm import LLMDetector
from model_server.llm_client import ClientSettings
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.llm_standin import Reply, errors, standin

REPO = Path(__file__).resolve().parent.parent
GOOD_DOC = ["The minister spoke first.", "However, he resigned. Prices rose."]
BAD_DOC = ["Nothing to see here.", "Garbled answer follows."]
DEAD_DOC = ["This one meets a dead endpoint.", "It stays down."]
REASON = "<b>'he'</b> has no clear antecedent."  # untrusted text, stored as given


def script(segment: str, number: int) -> Reply:
    if segment == GOOD_DOC[1]:
        return errors(
            {"category": "IncomCoref", "span": "he", "reason": REASON},
            {"category": "IncomDisco", "span": "However", "reason": "Contrasts nothing."},
            {"category": "Bogus", "span": "Prices", "reason": "x"},
            {"category": "Misleading", "span": "prices fell", "reason": "not in the text"},
        )
    if segment == BAD_DOC[1]:
        return Reply(content='{"errors": [{"category": "IncomCoref", "span": "Garbled"')
    if segment.startswith("This one") or segment == DEAD_DOC[1]:
        return Reply(status=500)
    return errors()


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def llm(url: str, tmp_path: Path) -> LLMDetector:
    settings = ClientSettings(
        model="stand-in", base_url=url, timeout=2, max_retries=1, backoff=0.01, cache_dir=None
    )
    return LLMDetector(settings, concurrency=2)


def test_worker_stores_reasons_counts_drops_and_survives_a_dead_endpoint(app, client, tmp_path):
    documents = [("good", GOOD_DOC), ("bad", BAD_DOC), ("dead", DEAD_DOC)]
    make_study(app, taxonomy="taxonomies/exteval.yaml", documents=documents, suggestions="shown")
    factory = app.extensions["db_sessionmaker"]
    with standin(script) as server:
        stats = work(factory, llm(server.url, tmp_path), once=True)
    assert (stats["done"], stats["failed"]) == (2, 1)
    assert stats["suggestions"] == 2
    assert stats["dropped"] == 3  # unknown category, unlocatable span, malformed answer
    assert stats["tokens"] > 0

    with app.app_context(), session_scope() as session:
        by_doc = {d.id: d.external_id for d in session.scalars(select(Document))}
        jobs = {by_doc[j.document_id]: j for j in session.scalars(select(DetectionJob))}
        assert jobs["good"].status == jobs["bad"].status == "done"
        assert jobs["dead"].status == "queued" and "HTTP 500" in jobs["dead"].last_error
        stored = session.scalars(select(Suggestion).order_by(Suggestion.start)).all()
    assert [(s.text, s.category, s.detector) for s in stored] == [
        ("However", "IncomDisco", "openai"),
        ("he", "IncomCoref", "openai"),
    ]

    token = client.post(
        "/api/assignments", json={"study": "demo", "document": "good", "worker_id": "w1"}
    ).get_json()["token"]
    shown = client.get(f"/api/assignments/{token}").get_json()["suggestions"]
    assert {s["text"]: s["reason"] for s in shown} == {
        "However": "Contrasts nothing.",
        "he": REASON,
    }
    he = next(s for s in shown if s["text"] == "he")
    added = client.post(
        f"/api/assignments/{token}/annotations",
        json={
            **{k: he[k] for k in ("segment", "start", "end", "text", "category")},
            "client_id": "c1",
            "suggestion_id": he["id"],
        },
    )
    assert added.status_code == 201, added.get_json()
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with app.app_context(), session_scope() as session:
        report = study_report(session, session.scalar(select(Study)))
    (worker,) = report["workers"]
    assert worker["suggestion_recall"]["caught"] == 1
    assert worker["suggestion_recall"]["total"] == 2
    assert worker["suggestion_recall"]["recall"] == pytest.approx(0.5)


def test_marginalia_worker_with_openai_detector_model(app, database_url, tmp_path):
    make_study(app, taxonomy="taxonomies/exteval.yaml", documents=[("good", GOOD_DOC)])
    with standin(script) as server:
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "DATABASE_URL": database_url,
            "DETECTOR_MODEL": "openai:stand-in",
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-test",
            "DETECTOR_CACHE_DIR": str(tmp_path / "cache"),
        }
        result = subprocess.run(
            [sys.executable, "-m", "app.cli", "worker", "--once"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert "worker started (all): detector openai stand-in" in result.stderr
    assert "1 document, 0 failures, 2 suggestions" in result.stderr
    assert "2 answers or items dropped" in result.stderr
    assert "tokens (" in result.stderr  # the per-document cost line
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2
