"""Worker management: the study's workers, one page per worker, and the researcher's
actions on them (approve, reject, block, unblock, note; ``app/annotation/reviews.py``), and
the study's time-on-task settings. Every route looks the study up through the access check;
every POST carries the CSRF token."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from flask import abort, flash, redirect, render_template, request, url_for
from sqlalchemy import select

from app.annotation import reviews, timing
from app.db import begin_write, get_session
from app.errors import InvalidInput, MarginaliaError
from app.models import Assignment, Document, Study
from app.quality.attention import WITH_REJECTED, catch_rates
from app.quality.time_on_task import segment_seconds, worker_times
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, study_or_404

DONE_MESSAGES = {
    "approve": "{worker} approved.",
    "reject": "{worker} rejected: their work has left the exports and their slots are open.",
    "block": "{worker} blocked: they get no new document in this study.",
    "unblock": "{worker} unblocked.",
    "note": "Note saved.",
}


def _gold_f1(assignment: Assignment) -> float | None:
    return (((assignment.scores or {}).get("gold") or {}).get("overall") or {}).get("f1")


def worker_rows(db, study: Study) -> list[dict[str, Any]]:
    """One row per worker ID that has an assignment in the study, sorted by ID."""
    assignments = db.scalars(select(Assignment).where(Assignment.study_id == study.id)).all()
    times = worker_times(db, study)
    verdicts = reviews.reviews(db, study)
    rates = catch_rates(db, study, statuses=WITH_REJECTED)  # one strict-matching pass
    flagged = {w for w, r in rates.items() if r.flagged}
    by_worker: dict[str, list[Assignment]] = defaultdict(list)
    for a in assignments:
        by_worker[a.worker_id].append(a)
    rows = []
    for worker_id in sorted(by_worker):
        mine = by_worker[worker_id]
        f1s = [f for a in mine if (f := _gold_f1(a)) is not None]
        verdict = verdicts.get(worker_id)
        time = times.get(worker_id, {})
        rows.append(
            {
                "worker_id": worker_id,
                "statuses": dict(Counter(a.status for a in mine)),
                "platform": mine[0].platform,
                "median": time.get("median_seconds_per_segment"),
                "active_seconds": time.get("active_seconds"),
                "speeder": bool(time.get("speeder")),
                "gold_f1": max(f1s) if f1s else None,
                "catch_rate": rates[worker_id].rate if worker_id in rates else None,
                "check_flagged": worker_id in flagged,
                "review": verdict.status if verdict else None,
                "blocked": bool(verdict and verdict.blocked),
                "note": verdict.note if verdict else "",
            }
        )
    return rows


@bp.get("/studies/<slug>/workers")
@auth.login_required
def workers(slug: str):
    db = get_session()
    study = study_or_404(db, slug)
    return render_template(
        "admin/workers.html",
        study=study,
        rows=worker_rows(db, study),
        time_settings=timing.describe(study),
        researcher=auth.current_researcher(),
    )


@bp.get("/studies/<slug>/worker")
@auth.login_required
def worker(slug: str):
    db = get_session()
    study = study_or_404(db, slug)
    worker_id = request.args.get("id", "")
    row = next((r for r in worker_rows(db, study) if r["worker_id"] == worker_id), None)
    if row is None:
        abort(404)
    assignments = db.execute(
        select(Assignment, Document.external_id)
        .join(Document, Document.id == Assignment.document_id)
        .where(Assignment.study_id == study.id, Assignment.worker_id == worker_id)
        .order_by(Assignment.id)
    ).all()
    seconds = segment_seconds(db, [a.id for a, _ in assignments])
    return render_template(
        "admin/worker.html",
        study=study,
        row=row,
        assignments=[
            {
                "assignment": a,
                "document": external_id,
                "seconds": seconds.get(a.id, {}),
                "gold_f1": _gold_f1(a),
                "recall": ((a.scores or {}).get("suggestions") or {}).get("recall"),
            }
            for a, external_id in assignments
        ],
        log=reviews.action_log(db, study, worker_id),
        researcher=auth.current_researcher(),
    )


@bp.post("/studies/<slug>/workers/action")
@auth.login_required
def worker_action(slug: str):
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    worker_id = request.form.get("worker", "")
    action = request.form.get("action", "")
    researcher = auth.current_researcher()
    try:
        reviews.act(db, study, worker_id, action, researcher.email, request.form.get("note", ""))
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        if exc.status == 404:
            abort(404)
        flash(str(exc), "error")
        return redirect(url_for("admin.worker", slug=slug, id=worker_id)), 303
    flash(DONE_MESSAGES[action].format(worker=worker_id), "ok")
    return redirect(url_for("admin.worker", slug=slug, id=worker_id)), 303


@bp.post("/studies/<slug>/workers/settings")
@auth.login_required
def time_settings(slug: str):
    db = begin_write(get_session())
    study = study_or_404(db, slug)
    raw = (request.form.get("min_seconds_per_segment") or "").strip()
    try:
        try:
            minimum = float(raw) if raw else None
        except ValueError:
            raise InvalidInput("the minimum seconds per segment must be a number") from None
        timing.apply_settings(
            study,
            min_seconds=minimum,
            clear_min=minimum is None,
            require_seen=request.form.get("require_all_segments_seen") == "1",
        )
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        flash(str(exc), "error")
        return redirect(url_for("admin.workers", slug=slug)), 303
    flash("Time settings saved.", "ok")
    return redirect(url_for("admin.workers", slug=slug)), 303
