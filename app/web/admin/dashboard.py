"""A study's dashboard: progress, per-worker scores, charts, worker links, settings form."""

from __future__ import annotations

from typing import Any

from flask import (
    current_app,
    flash,
    jsonify,
    redirect,
    request,
    url_for,
)

from app.crowd import platforms
from app.db import begin_write, get_session
from app.formats import DOWNLOADS, IMPORT_FORMATS
from app.models import Researcher, Study
from app.quality.report_text import fixed
from app.researchers import access
from app.researchers import accounts as auth
from app.web import charts
from app.web.admin.blueprint import (
    MAX_GRID_DOCUMENTS,
    bp,
    render_page,
    session_and_study,
    study_or_404,
)
from app.web.admin.progress import live_progress

# numbers on the researchers' pages: ``value|fixed(2)``, never "-0.00" (report_text.fixed)
bp.add_app_template_filter(fixed, "fixed")


def include_practice() -> bool:
    """``?include_practice=1``: the figures count a training phase's practice documents."""
    return request.args.get("include_practice") == "1"


def condition_summary(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Assisted vs unassisted: workers, documents, annotations per segment, suggestion recall."""
    rows: dict[str, dict[str, Any]] = {}
    for worker in workers:
        for condition in worker["conditions"]:
            row = rows.setdefault(
                condition,
                {
                    "condition": condition,
                    "workers": 0,
                    "documents": 0,
                    "annotations": 0,
                    "segments": 0,
                    "caught": 0,
                    "suggestions": 0,
                },
            )
            row["workers"] += 1
            row["documents"] += worker["documents_done"]
            row["annotations"] += worker["annotations"]
            row["segments"] += worker["segments"]
            row["caught"] += worker["suggestion_recall"]["caught"]
            row["suggestions"] += worker["suggestion_recall"]["total"]
    for row in rows.values():
        row["per_segment"] = row["annotations"] / row["segments"] if row["segments"] else None
        row["recall"] = row["caught"] / row["suggestions"] if row["suggestions"] else None
    return [rows[c] for c in sorted(rows)]


def worker_links(study: Study) -> list[tuple[str, str]]:
    base = url_for("pages.start", slug=study.slug, _external=True)
    if study.platform == "prolific":
        return [
            (
                "Prolific study URL",
                base + "?PROLIFIC_PID={{%PROLIFIC_PID%}}"
                "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
            )
        ]
    if study.platform == "mturk":
        return [("ExternalQuestion URL (marginalia mturk create-hits)", base)]
    return [("Worker link", base + "?worker_id=WORKER-ID"), ("Ask for an ID", base)]


def sharing_summary(db, study: Study) -> dict[str, Any]:
    """The study's owner and collaborators, and whether the viewer may change them."""
    owner = db.get(Researcher, study.owner_id) if study.owner_id is not None else None
    researcher = auth.current_researcher()
    return {
        "owner": owner.email if owner is not None else None,
        "collaborators": [r.email for r in access.collaborators(db, study)],
        "can_share": researcher is not None and access.can_share(researcher, study),
    }


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 0):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


JOB_WORDS = {"queued": "recomputation queued", "running": "recomputing", "failed": "failed"}


def served_words(served: dict[str, Any]) -> str:
    """The served report's state in plain words: "computed 40 s ago · recomputing"."""
    if served["mode"] == "inline":
        return "up to date (computed for this page)"
    job = JOB_WORDS.get(served.get("job") or "")
    if served["state"] == "none":
        found = {"running": "computing", "failed": "failed"}.get(served.get("job") or "", "queued")
        return f"not computed yet · {found}"
    age = f"computed {_age(served['age_seconds'] or 0.0)} ago"
    if served["state"] == "current":
        return f"{age} · up to date"
    if job == "failed":
        return f"{age} · recomputation failed: {served.get('error') or 'see the worker log'}"
    return f"{age} · {job or 'out of date'}"


def _charts(report: dict[str, Any] | None, categories: list[dict[str, Any]]) -> dict[str, Any]:
    """The dashboard's charts, drawn from the report's digest (app/quality/digest.py)."""
    if report is None:
        return {}
    return {
        "categories": charts.category_bars(report["categories"]["overall"], categories),
        "sources": charts.source_distribution(
            report["categories"]["per_source"], report["segments_per_source"], categories
        ),
        "recall": charts.worker_recall(report["workers"]),
        "has_recall": charts.has_recall(report["workers"]),
        "legend": charts.legend(categories),
    }


def render_dashboard(
    study: Study,
    *,
    upload_error: str | None = None,
    sharing_error: str | None = None,
    status: int = 200,
):
    from app.quality.pay import time_and_pay
    from app.quality.served import served_digest

    db = get_session()
    practice = include_practice()
    report, served = served_digest(db, study, include_practice=practice)
    study = study_or_404(db, study.slug)  # the queueing may have committed: fresh attributes
    live = live_progress(db, study, include_practice=practice)
    categories = study.taxonomy.get("categories", [])
    chart_svgs = _charts(report, categories)
    labels = {c["id"]: c["label"] for c in categories}
    body = render_page(
        "admin/dashboard.html",
        study=study,
        report=report,
        served=served,
        served_words=served_words(served),
        live=live,
        charts=chart_svgs,
        labels=labels,
        settings=platforms.describe(study),
        links=worker_links(study),
        conditions=condition_summary((report or {}).get("workers") or []),
        per_document=(report or {}).get("per_document") or {"rows": [], "total": 0},
        per_pair=(report or {}).get("per_pair") or {"rows": [], "total": 0},
        heat=(report or {}).get("heat"),
        grid=live["per_document"][:MAX_GRID_DOCUMENTS],
        formats=IMPORT_FORMATS,
        upload_error=upload_error,
        sharing_error=sharing_error,
        sharing=sharing_summary(db, study),
        downloads=DOWNLOADS,
        include_practice=practice,
        pay=time_and_pay(db, study),
    )
    return body, status


@bp.get("/studies/<slug>")
@auth.login_required
def dashboard(slug: str):
    return render_dashboard(study_or_404(get_session(), slug))


@bp.get("/studies/<slug>/progress.json")
@auth.login_required
def progress_json(slug: str):
    db, study = session_and_study(slug)
    return jsonify(live_progress(db, study, include_practice=include_practice()))


@bp.get("/studies/<slug>/report.json")
@auth.login_required
def report_json(slug: str):
    from app.quality.served import is_small, served_report, stored_text

    db, study = session_and_study(slug)
    if is_small(db, study):
        report, served = served_report(db, study, include_practice=include_practice())
        return jsonify({**report, "served": served})
    text, served = stored_text(db, study, include_practice=include_practice())
    if text is None:  # a big study whose report is being computed for the first time
        return jsonify({"served": served}), 202
    return current_app.response_class(text, mimetype="application/json")


@bp.post("/studies/<slug>/figures")
@auth.login_required
def queue_figures(slug: str):
    """Queue the study's γ, unitizing α and worker models for the worker (a no-op while
    a job is queued or running)."""
    from app.quality.figures import enqueue

    db = begin_write(get_session())
    study = study_or_404(db, slug)
    enqueue(db, study, include_practice())
    db.commit()
    flash(
        "γ, unitizing α and the worker models are queued: the worker brings them up to date.", "ok"
    )
    return redirect(url_for("admin.dashboard", slug=slug, _anchor="unitized"))
