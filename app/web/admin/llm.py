"""The LLM annotators' researcher pages: the Settings page's button that queues a run (the
worker annotates; nothing slow runs in the request) and the calibration view, which shows
the figures the run's worker stored (app/llm/calibration.py): one table per section, the
annotator's column beside the humans pooled and each human's, and the quotes it gave that
named no single place (counted, shown, never guessed). Text from the documents and the
model is rendered as text."""

from __future__ import annotations

from typing import Any

from flask import abort, flash, redirect, render_template, url_for
from sqlalchemy import select

from app.db import begin_write, get_session
from app.errors import MarginaliaError
from app.llm import ALL
from app.llm.annotators import annotators
from app.llm.runs import latest_calibration, queue_run, recent_runs
from app.models import Document, LlmJob, LlmRun, Study
from app.quality.report_text import fixed
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, study_or_404
from app.web.admin.settings import render_settings

MAX_PROBLEMS = 200


def ci(entry: dict[str, Any] | None, digits: int = 2) -> tuple[str, str]:
    """(value, "low–high") of an interval, "–" when undefined; never "-0.00" (:func:`fixed`)."""
    if not entry or entry.get("value") is None:
        return "–", ""
    value = fixed(entry["value"], digits)
    if entry.get("low") is None or entry.get("high") is None:
        return value, ""
    return value, f"{fixed(entry['low'], digits)}–{fixed(entry['high'], digits)}"


def columns(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's columns: the annotator, the humans pooled, each human."""
    return [
        {"label": result["worker_id"], "key": "annotator", "human": None, "model": True},
        {"label": "humans (pooled)", "key": "humans", "human": None, "model": False},
        *[{"label": h, "key": "per_human", "human": h, "model": False} for h in result["humans"]],
    ]


def _pick(section: dict[str, Any], column: dict[str, Any]) -> dict[str, Any]:
    found = section.get(column["key"]) or {}
    return (found.get(column["human"]) or {}) if column["human"] is not None else found


def table(result: dict[str, Any], name: str, metric: str | None) -> list[dict[str, Any]]:
    """Rows per category (then all): each column's (value, interval) and its counts."""
    rows = []
    for category in [*result["categories"], ALL]:
        cells = []
        for column in columns(result):
            entry = _pick(result[name], column).get(category) or {}
            value = entry.get(metric) if metric else entry
            cells.append({"ci": ci(value), "count": entry.get("documents")})
        rows.append({"category": category, "cells": cells})
    return rows


def gamma_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    gamma = result["gamma"]
    rows = []
    for category in [*result["categories"], ALL]:
        cells = [(gamma["annotator"].get(category) or {}).get("mean")]
        cells += [None]  # no pooled γ: one per pair
        cells += [(gamma["per_human"][h].get(category) or {}).get("mean") for h in result["humans"]]
        rows.append(
            {"category": category, "cells": ["–" if v is None else f"{v:.2f}" for v in cells]}
        )
    return rows


def problems(db, run: LlmRun | None) -> list[dict[str, Any]]:
    """The run's quotes that gave no mark, per document."""
    if run is None:
        return []
    found = db.execute(
        select(Document.external_id, LlmJob.problems)
        .join(Document, Document.id == LlmJob.document_id)
        .where(LlmJob.run_id == run.id)
        .order_by(Document.position, Document.id)
    ).all()
    rows = [{"document": doc, **p} for doc, listed in found for p in (listed or [])]
    return rows[:MAX_PROBLEMS]


@bp.post("/studies/<slug>/llm/<name>/run")
@auth.login_required
def run_llm(slug: str, name: str):
    """Queue the annotator over the study's documents (the Settings page's button)."""
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    found = annotators(study).get(name)
    if found is None:
        abort(404)
    try:
        researcher = auth.current_researcher()
        run = queue_run(db, study, found, requested_by=researcher.email if researcher else None)
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        return render_settings(study, error=str(exc), section="llm", status=exc.status)
    flash(
        f"Run {run.id} queued: {found.worker_id} annotates {run.documents} documents on the "
        "worker; its progress is on the dashboard.",
        "ok",
    )
    return redirect(url_for("admin.study_settings", slug=slug, _anchor="llm"))


@bp.get("/studies/<slug>/llm/<name>")
@auth.login_required
def llm_calibration(slug: str, name: str):
    db = get_session()
    study: Study = study_or_404(db, slug)
    found = annotators(study).get(name)
    if found is None:
        abort(404)
    calibrated = latest_calibration(db, study.id, name)
    result = calibrated.calibration if calibrated is not None else None
    runs = [r for r in recent_runs(db, study.id, limit=20) if r["annotator"] == name]
    latest = db.get(LlmRun, runs[0]["id"]) if runs else None
    return render_template(
        "admin/llm_calibration.html",
        study=study,
        annotator=found,
        result=result,
        runs=runs[:5],
        problems=problems(db, latest),
        columns=columns(result) if result else [],
        gold=table(result, "gold", "f1") if result else [],
        gold_p=table(result, "gold", "precision") if result else [],
        gold_r=table(result, "gold", "recall") if result else [],
        consensus=table(result, "consensus", "f1") if result else [],
        alpha=table(result, "alpha", None) if result else [],
        gamma=gamma_rows(result) if result else [],
        ci=ci,
    )
