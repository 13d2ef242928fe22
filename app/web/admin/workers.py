"""Worker management: the study's workers, one page per worker, and the researcher's
actions on them (approve, reject, block, unblock, note; ``app/annotation/reviews.py``), and
the study's time-on-task settings. Every route looks the study up through the access check;
every POST carries the CSRF token."""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from typing import Any

from flask import Response, abort, flash, redirect, request, url_for
from sqlalchemy import select

from app.annotation import reviews, timing
from app.annotation.assignment_scores import best_gold_f1, gold_documents, gold_f1
from app.annotation.session_list import session_rows
from app.annotation.session_settings import session_rule
from app.db import begin_write, get_session
from app.errors import InvalidInput, MarginaliaError
from app.formats.spreadsheet import safe_row
from app.models import Annotation, Assignment, Document, Segment, Study
from app.quality.attention import WITH_REJECTED, catch_rates
from app.quality.ranking import rank_rows
from app.quality.time_on_task import segment_seconds, worker_times
from app.researchers import accounts as auth
from app.rules.stored_figures import stored_reliability
from app.rules.work import human_worker
from app.web.admin.blueprint import bp, render_page, session_and_study, study_or_404
from app.web.admin.settings import render_settings, settings_saved

DONE_MESSAGES = {
    "approve": "{worker} approved: any work a reject took out is back in the exports.",
    "reject": "{worker} rejected and blocked: their work has left the exports and the "
    "agreement figures, and their slots are open.",
    "block": "{worker} blocked: they get no new document in this study.",
    "unblock": "{worker} unblocked.",
    "note": "Note saved.",
}
CSV_COLUMNS = (
    "worker_id",
    "state",
    "review_status",
    "blocked",
    "platform",
    "prolific_study_id",
    "prolific_session_id",
    "practice_attempts",
    "best_gold_f1",
)
CONTEXT_CHARS = 60


def worker_rows(db, study: Study) -> list[dict[str, Any]]:
    """One row per human worker ID that has an assignment in the study, in rank order (the
    one ranking, :mod:`app.quality.ranking`: by expected F1, then the unranked by ID); an LLM
    annotator is no crowd worker (app/llm/)."""
    assignments = db.scalars(
        select(Assignment).where(Assignment.study_id == study.id, human_worker())
    ).all()
    times = worker_times(db, study)
    verdicts = reviews.reviews(db, study)
    rates = catch_rates(db, study, work=WITH_REJECTED)  # one strict-matching pass
    flagged = {w for w, r in rates.items() if r.flagged}
    gold = set(
        db.scalars(select(Document.id).where(Document.study_id == study.id, Document.is_gold))
    )
    scored = gold_documents(db, study)
    models, _ = stored_reliability(db, study)
    by_worker: dict[str, list[Assignment]] = defaultdict(list)
    for a in assignments:
        by_worker[a.worker_id].append(a)
    rows = []
    for worker_id in sorted(by_worker):
        mine = by_worker[worker_id]
        f1s = [(a.document_id, gold_f1(db, a, scored)) for a in mine]
        verdict = verdicts.get(worker_id)
        time = times.get(worker_id, {})
        data = [a.platform_data or {} for a in mine]
        rows.append(
            {
                "worker_id": worker_id,
                "state": reviews.worker_state(a.status for a in mine),
                "statuses": dict(Counter(a.status for a in mine)),
                "sessions": list(
                    dict.fromkeys(d["session_id"] for d in data if d.get("session_id"))
                ),
                "prolific_studies": list(
                    dict.fromkeys(d["study_id"] for d in data if d.get("study_id"))
                ),
                "practice_attempts": sum(
                    1
                    for a in mine
                    if a.document_id in gold and a.status in ("submitted", "screened_out")
                ),
                "platform": mine[0].platform,
                "median": time.get("median_seconds_per_segment"),
                "active_seconds": time.get("active_seconds"),
                "speeder": bool(time.get("speeder")),
                "gold_f1": best_gold_f1(f1s, scored),
                "catch_rate": rates[worker_id].rate if worker_id in rates else None,
                "model": models.get(worker_id),
                "check_flagged": worker_id in flagged,
                "review": verdict.status if verdict else None,
                "blocked": bool(verdict and verdict.blocked),
                "note": verdict.note if verdict else "",
            }
        )
    rank_rows(rows, lambda row: row["model"])
    return rows


def _state_filter() -> str | None:
    """``?state=``: one of :data:`app.annotation.reviews.STATES`, or None for every worker."""
    state = request.args.get("state") or None
    if state is not None and state not in reviews.STATES:
        abort(400, f"state must be one of {', '.join(reviews.STATES)}")
    return state


@bp.get("/studies/<slug>/workers")
@auth.login_required
def workers(slug: str):
    db, study = session_and_study(slug)
    state = _state_filter()
    rows = worker_rows(db, study)
    by_id = request.args.get("sort") == "id"  # else the default: by rank
    if by_id:
        rows.sort(key=lambda row: row["worker_id"])
    sessions = session_rows(db, study)
    return render_page(
        "admin/workers.html",
        study=study,
        sessions=sessions,
        session_states={
            "counts": Counter(s.state for s in sessions),
            "documents": session_rule(study).documents,
        },
        rows=[r for r in rows if state in (None, r["state"])],
        by_id=by_id,
        states=Counter(r["state"] for r in rows),
        state=state,
        models_at=stored_reliability(db, study)[1],
        time_settings=timing.describe(study),
    )


@bp.get("/studies/<slug>/workers.csv")
@auth.login_required
def workers_csv(slug: str):
    """One row per worker (``?state=screened_out``: the IDs to screen out on Prolific)."""
    db, study = session_and_study(slug)
    state = _state_filter()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in sorted(worker_rows(db, study), key=lambda row: row["worker_id"]):
        if state in (None, r["state"]):
            writer.writerow(
                safe_row(
                    [
                        r["worker_id"],
                        r["state"],
                        r["review"] or "",
                        "true" if r["blocked"] else "false",
                        r["platform"],
                        " ".join(r["prolific_studies"]),
                        " ".join(r["sessions"]),
                        r["practice_attempts"],
                        "" if r["gold_f1"] is None else f"{r['gold_f1']:.4f}",
                    ]
                )
            )
    name = f"{study.slug}-workers{'-' + state if state else ''}.csv"
    return Response(
        out.getvalue(),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def worker_spans(db, assignment_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Each assignment's live spans in reading order, with up to :data:`CONTEXT_CHARS`
    characters of their segment before and after (what a researcher reads before a reject)."""
    rows = db.execute(
        select(Annotation, Segment.text)
        .join(Assignment, Assignment.id == Annotation.assignment_id)
        .join(
            Segment,
            (Segment.document_id == Assignment.document_id) & (Segment.index == Annotation.segment),
        )
        .where(Annotation.assignment_id.in_(assignment_ids), Annotation.removed_at.is_(None))
        .order_by(Annotation.assignment_id, Annotation.segment, Annotation.start, Annotation.id)
    ).all()
    spans: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for annotation, text in rows:
        before = text[max(0, annotation.start - CONTEXT_CHARS) : annotation.start]
        after = text[annotation.end : annotation.end + CONTEXT_CHARS]
        spans[annotation.assignment_id].append(
            {
                "segment": annotation.segment,
                "category": annotation.category,
                "text": annotation.text,
                "comment": annotation.comment,
                "before": ("…" if annotation.start > CONTEXT_CHARS else "") + before,
                "after": after + ("…" if annotation.end + CONTEXT_CHARS < len(text) else ""),
            }
        )
    return spans


@bp.get("/studies/<slug>/worker")
@auth.login_required
def worker(slug: str):
    db, study = session_and_study(slug)
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
    scored = gold_documents(db, study)
    spans = worker_spans(db, [a.id for a, _ in assignments])
    labels = {c["id"]: c.get("label") or c["id"] for c in study.taxonomy.get("categories", [])}
    return render_page(
        "admin/worker.html",
        study=study,
        row=row,
        assignments=[
            {
                "assignment": a,
                "document": external_id,
                "seconds": seconds.get(a.id, {}),
                "gold_f1": gold_f1(db, a, scored),
                "recall": ((a.scores or {}).get("suggestions") or {}).get("recall"),
                "spans": spans.get(a.id, []),
            }
            for a, external_id in assignments
        ],
        labels=labels,
        log=reviews.action_log(db, study, worker_id),
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
        return render_settings(study, error=str(exc), section="time", status=exc.status)
    return settings_saved(slug, "Time settings saved.", "time"), 303
