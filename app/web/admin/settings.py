"""A study's Settings page: every setting in one place, each section its own form (platform
and assignment, practice and pass mark, attention checks, hints; time on task; instructions;
consent and questionnaires; return codes; the suggestion model). The forms post to their routes here and in
``lifecycle.py`` / ``workers.py``; each comes back to this page, or shows it again with the
error above the section that refused the change."""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, request, url_for

from app.annotation import pausing, session_settings, timing
from app.crowd import platforms
from app.crowd.returns import REASONS, return_codes
from app.db import get_session
from app.detection import learned_models
from app.documents import journey
from app.documents.numbers import MAX_ID, whole_number
from app.errors import InvalidInput
from app.llm.annotators import annotators
from app.models import Study
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, change_study, render_page, study_or_404
from app.web.admin.dashboard import worker_links


def render_settings(study: Study, *, error: str | None = None, section: str = "", status=200):
    db = get_session()
    body = render_page(
        "admin/settings.html",
        study=study,
        settings=platforms.describe(study),
        sessions=session_settings.describe(study),
        time_settings=timing.describe(study),
        instructions=journey.instructions(study),
        questionnaire=(study.settings or {}).get("journey_source", ""),
        journey=journey.definition(study),
        codes=return_codes(study),
        reasons=REASONS,
        links=worker_links(study),
        error=error,
        error_section=section,
        detector_models=learned_models.models_of(db, study),
        chosen_model=learned_models.chosen_model(db, study),
        llm_annotators=annotators(study),
    )
    return body, status


def settings_saved(slug: str, message: str, section: str):
    flash(message, "ok")
    return redirect(url_for("admin.study_settings", slug=slug) + f"#{section}")


@bp.get("/studies/<slug>/settings")
@auth.login_required
def study_settings(slug: str):
    return render_settings(study_or_404(get_session(), slug))


def _training_form(form) -> dict:
    """The training fields of the settings form (absent fields change nothing)."""
    changes = {}
    if "screen_out_url" in form:
        changes["screen_out_url"] = form.get("screen_out_url") or None
    if "min_catch_rate" in form:
        changes["min_catch_rate"] = (form.get("min_catch_rate") or "").strip() or None
    return changes


def _save(slug: str, section: str, message, apply) -> Any:
    """:func:`change_study` from a Settings form: back to its ``section`` with ``message``
    (text, or ``message(db, study, result)`` when the outcome words it), or the page with
    the error there."""
    return change_study(
        slug,
        apply,
        lambda study, exc: render_settings(
            study, error=str(exc), section=section, status=exc.status
        ),
        lambda db, study, result: settings_saved(
            slug, message if isinstance(message, str) else message(db, study, result), section
        ),
    )


@bp.post("/studies/<slug>/settings")
@auth.login_required
def update_settings(slug: str):
    form = request.form

    def apply(_db, study: Study) -> None:
        minutes_raw = (form.get("abandon_after_minutes") or "").strip()
        f1_raw = (form.get("qualification_f1") or "").strip()
        attempts_raw = (form.get("qualification_attempts") or "").strip()
        hints_raw = (form.get("max_hints_per_segment") or "").strip()
        score_raw = (form.get("min_hint_score") or "").strip()
        try:
            minutes = float(minutes_raw) if minutes_raw else platforms.UNSET
            f1 = float(f1_raw) if f1_raw else None
            attempts = int(attempts_raw) if attempts_raw else platforms.UNSET
            most_hints = int(hints_raw) if hints_raw else platforms.UNSET
            lowest_score = float(score_raw) if score_raw else platforms.UNSET
        except ValueError:
            raise InvalidInput("timeout, F1, attempts and hint limits must be numbers") from None
        platforms.configure_study(
            study,
            platform=form.get("platform") or study.platform,
            completion_url=form.get("completion_url") or None,
            abandon_after_minutes=minutes,
            randomise_conditions=form.get("randomise_conditions") == "1",
            qualification_f1=f1,
            qualification_attempts=attempts,
            max_hints_per_segment=most_hints,
            min_hint_score=lowest_score,
            **({"hints": form["hints"]} if form.get("hints") else {}),
            **_training_form(form),
        )

    return _save(slug, "platform", "Settings saved.", apply)


@bp.post("/studies/<slug>/settings/pause")
@auth.login_required
def pause_settings(slug: str):
    """The pause rule (app/annotation/pausing.py): both bars empty remove it."""
    form = request.form
    return _save(
        slug,
        "pause",
        lambda _db, study, _: (
            "Pause rule saved." if pausing.pause_rule(study) else "No pause rule."
        ),
        lambda _db, study: pausing.configure_pause(
            study,
            after=form.get("after", ""),
            min_expected_f1=form.get("min_expected_f1"),
            min_gold_f1=form.get("min_gold_f1"),
        ),
    )


@bp.post("/studies/<slug>/settings/sessions")
@auth.login_required
def session_settings_form(slug: str):
    """Documents per session, a shorter session, the reward per session
    (app/annotation/session_settings.py): an empty reward removes it."""
    form = request.form
    return _save(
        slug,
        "sessions",
        "Sessions and pay saved.",
        lambda _db, study: session_settings.configure_sessions(
            study,
            documents=form.get("documents_per_session", ""),
            shorter=form.get("allow_shorter_session") == "1",
            reward=form.get("reward") or None,
            **({"currency": form["currency"]} if (form.get("reward") or "").strip() else {}),
        ),
    )


@bp.post("/studies/<slug>/settings/detector")
@auth.login_required
def choose_detector(slug: str):
    """The suggestion model: the worker's own detector, or one of the study's stored learned
    models (``marginalia study detector``); its documents are queued for detection again."""
    raw = (request.form.get("model") or "").strip()

    def apply(db, study: Study) -> int:
        model = whole_number(raw, "the model", 1, MAX_ID) if raw else None
        return learned_models.use_model(db, study, model)

    def message(db, study: Study, queued: int) -> str:
        chosen = learned_models.chosen_model(db, study)
        name = (
            "the shipped detector" if chosen is None else f"model {chosen.name} ({chosen.version})"
        )
        return f"Suggestions come from {name}; {queued} documents queued for detection."

    return _save(slug, "detector", message, apply)
