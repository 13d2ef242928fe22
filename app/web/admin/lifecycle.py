"""A study's management page: status (pause, close, reopen, archive), delete, removing
documents nobody worked on, instructions, consent and questionnaires, platform return codes,
the preview as a worker and the questionnaire answers download.

Every route looks the study up through :func:`study_or_404` (outsiders get the 404 of a
missing study); every change is a CSRF-checked POST.
"""

from __future__ import annotations

from typing import Any

from flask import Response, flash, redirect, request, url_for
from sqlalchemy import func, select

from app.crowd.returns import REASONS, return_codes, set_return_code
from app.db import get_session
from app.documents import journey, lifecycle
from app.errors import InvalidInput
from app.formats.answers import iter_answers
from app.models import Assignment, Document, GoldError, Study
from app.researchers import accounts as auth
from app.rules.work import TRAINING_ROLES, has_pass_mark, role
from app.web.admin.blueprint import (
    bp,
    change_study,
    render_page,
    session_and_study,
    study_or_404,
)
from app.web.markdown import render_markdown

MAX_LISTED_DOCUMENTS = 500


# How the Manage page names a document's role (app/rules/work.py's, one place to read it):
ROLE_LABELS = {
    "practice": "practice (answers shown, never graded)",
    "qualification": "qualification",
    "check": "real work with attention checks",
    "real": "real work",
}


def role_label(role_name: str, is_gold: bool, checks: int) -> str:
    """A document's role as the Manage page shows it: the role, the planted checks' count,
    and "scores workers" for a gold document that is real work (no pass mark)."""
    label = ROLE_LABELS[role_name]
    if checks:
        label += f" ({checks})"
    if is_gold and role_name not in TRAINING_ROLES:
        label += ", gold: scores workers"
    return label


def _documents(db, study: Study) -> list[dict]:
    """The study's documents with their role (:func:`app.rules.work.role`) and what stops
    their removal (first MAX_LISTED_DOCUMENTS)."""
    checks = dict(
        db.execute(
            select(GoldError.document_id, func.count())
            .join(Document, Document.id == GoldError.document_id)
            .where(Document.study_id == study.id, GoldError.is_check.is_(True))
            .group_by(GoldError.document_id)
        ).all()
    )
    submitted = (
        select(Assignment.document_id, func.count().label("n"))
        .where(Assignment.study_id == study.id, Assignment.status == "submitted")
        .group_by(Assignment.document_id)
        .subquery()
    )
    rows = db.execute(
        select(Document, role(study), func.coalesce(submitted.c.n, 0))
        .outerjoin(submitted, submitted.c.document_id == Document.id)
        .where(Document.study_id == study.id)
        .order_by(Document.position, Document.id)
        .limit(MAX_LISTED_DOCUMENTS)
    ).all()
    return [
        {
            "id": d.external_id,
            "source": d.source,
            "role": role_name,
            "label": role_label(role_name, bool(d.is_gold), checks.get(d.id, 0)),
            "submitted": n,
        }
        for d, role_name, n in rows
    ]


def render_manage(study: Study, *, error: str | None = None, section: str = "", status=200):
    db = get_session()
    counts = db.scalar(select(func.count()).where(Document.study_id == study.id)) or 0
    body = render_page(
        "admin/manage.html",
        study=study,
        documents=_documents(db, study),
        document_count=counts,
        instructions=journey.instructions(study),
        questionnaire=(study.settings or {}).get("journey_source", ""),
        journey=journey.definition(study),
        codes=return_codes(study),
        reasons=REASONS,
        actions=lifecycle.ACTIONS,
        error=error,
        error_section=section,
    )
    return body, status


def _done(slug: str, message: str, anchor: str):
    flash(message, "ok")
    return redirect(url_for("admin.manage", slug=slug) + anchor)


def _change(slug: str, section: str, apply, message: str, *, on_settings: bool = False):
    """Run ``apply(db, study)`` in one write transaction; the page (Manage, or Settings with
    ``on_settings``) with the error if refused."""
    from app.web.admin.settings import render_settings, settings_saved

    page = render_settings if on_settings else render_manage
    return change_study(
        slug,
        apply,
        lambda study, exc: page(study, error=str(exc), section=section, status=exc.status),
        lambda *_: (
            settings_saved(slug, message, section)
            if on_settings
            else _done(slug, message, f"#{section}")
        ),
    )


@bp.get("/studies/<slug>/manage")
@auth.login_required
def manage(slug: str):
    return render_manage(study_or_404(get_session(), slug))


@bp.post("/studies/<slug>/status")
@auth.login_required
def change_status(slug: str):
    action = request.form.get("action", "")

    def apply(db, study: Study) -> None:
        if action == "archive" and request.form.get("confirm") != "yes":
            raise InvalidInput("tick the box to confirm archiving the study")
        lifecycle.change_status(study, action)

    return _change(slug, "status", apply, f"Study {slug}: {action} done.")


@bp.post("/studies/<slug>/delete")
@auth.login_required
def delete(slug: str):
    def deleted(_db, _study, counts: dict) -> Any:
        flash(
            f"Study {slug} deleted ({counts['documents']} documents, "
            f"{counts['assignments']} assignments).",
            "ok",
        )
        return redirect(url_for("admin.studies"))

    return change_study(
        slug,
        lambda db, study: lifecycle.delete_study(db, study, request.form.get("confirm", "")),
        lambda study, exc: render_manage(
            study, error=str(exc), section="delete", status=exc.status
        ),
        deleted,
    )


@bp.post("/studies/<slug>/documents/remove")
@auth.login_required
def remove_document(slug: str):
    document_id = request.form.get("document_id", "")
    return _change(
        slug,
        "documents",
        lambda db, study: lifecycle.remove_document(db, study, document_id),
        f"Document {document_id[:100]} removed.",
    )


@bp.post("/studies/<slug>/instructions")
@auth.login_required
def save_instructions(slug: str):
    text = request.form.get("instructions", "")
    return _change(
        slug,
        "instructions",
        lambda db, study: journey.set_instructions(study, text),
        "Instructions saved.",
        on_settings=True,
    )


@bp.post("/studies/<slug>/questionnaire")
@auth.login_required
def save_questionnaire(slug: str):
    text = request.form.get("questionnaire", "").replace("\r\n", "\n")

    return _change(
        slug,
        "questionnaire",
        lambda db, study: journey.set_definition(study, text, "questionnaire.yaml"),
        "Consent and questionnaires saved.",
        on_settings=True,
    )


@bp.post("/studies/<slug>/return-codes")
@auth.login_required
def save_return_codes(slug: str):
    def apply(db, study: Study) -> None:
        for reason in REASONS:
            set_return_code(study, reason, request.form.get(reason, ""))

    return _change(slug, "returns", apply, "Return codes saved.", on_settings=True)


def _first(db, study: Study, *, gold: bool, practice: bool = False) -> Document | None:
    return db.scalar(
        select(Document)
        .where(
            Document.study_id == study.id,
            Document.is_gold.is_(gold),
            Document.is_practice.is_(practice),
        )
        .order_by(Document.position, Document.id)
        .limit(1)
    )


@bp.get("/studies/<slug>/preview")
@auth.login_required
def worker_preview(slug: str):
    """What a worker meets, in the order they meet it, read-only: consent, instructions, the
    first practice document (with a pass mark; then the qualification documents, named), the
    first real document, the questionnaires.
    Nothing is stored and no slot is taken."""
    db, study = session_and_study(slug)
    practice = _first(db, study, gold=True, practice=True) if has_pass_mark(study) else None
    graded = _first(db, study, gold=True) if has_pass_mark(study) else None
    document = _first(db, study, gold=False)
    definition = journey.definition(study)
    return render_page(
        "admin/worker_preview.html",
        study=study,
        consent=render_markdown(definition.get("consent")),
        instructions=render_markdown(journey.instructions(study)),
        practice=practice,
        practice_segments=[s.text for s in practice.segments] if practice else [],
        graded=graded,
        rule=(study.settings or {}).get("qualification") or {},
        document=document,
        segments=[s.text for s in document.segments] if document else [],
        journey=definition,
    )


@bp.get("/studies/<slug>/answers.csv")
@auth.login_required
def answers_csv(slug: str):
    db, study = session_and_study(slug)
    body = "".join(iter_answers(db, study, "csv"))
    return Response(
        body,
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{study.slug}-answers.csv"'},
    )
