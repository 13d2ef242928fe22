"""Submit: the worker ends their assignment (``POST /api/assignments/<token>/submit``); every
submit, whatever the study's rules, is this one function.

1. ``hot_sql.SUBMIT_FACTS``: what the rules and the scoring read of the assignment, its study
   and its document, one row, no lock (404 for an unknown token). A submitted or screened-out
   assignment answers its stored code (a submit is idempotent); any other not active is
   refused (409, :func:`app.annotation.assignments.require_active`).
2. The all-segments-seen rule when the study sets it (:func:`app.annotation.timing.require_seen`).
3. When the study scores suggestions (``hidden`` or ``shown``, the default): the worker's
   recall over the document's suggestions
   (:func:`app.annotation.assignment_scores.score_against_suggestions`: one read, with how often
   the live annotations changed).
4. The guarded write (:func:`app.annotation.hot_sql.submit_statements`, one pair): status,
   times, the code kept or given (:func:`_code`: none for a qualification attempt, none yet
   while the session goes on or a required question is pending), the score, and the study's
   change-log row (``work_changes``, under its shared lock on Postgres: the served report goes
   stale), only while the row is still active and, scored, its annotations are those scored.
   When it writes nothing (a submit, an abandon or a change of the annotations committed since
   the reads), the submit starts again from step 1, which then answers or refuses.
5. The rules that read the worker's other work, through the ORM on the same transaction
   (:meth:`~app.annotation.handle.Handle.session`): the session's code given to its earlier
   documents when this one ends it (:func:`app.annotation.sessions.release_code`), the
   pause rule
   (:func:`app.annotation.pausing.check`) and, for a qualification attempt, the screen-out
   (:func:`app.annotation.qualification.screen_out`: out of attempts, every training
   assignment ``screened_out``, no code).

A plain submit (no segments to have seen, no pause rule, no qualification attempt, no session
of several documents, no ``after_study`` questions to read the answers of) runs each
step ``alone``: on Postgres two round trips, three when scored, each committed by the server
as it runs, no ``BEGIN``/``COMMIT``; any other runs in one transaction from step 2 on. The
answer (:func:`answer`, CONTRACT.md): the code, where the browser goes next, and
``screened_out`` when the worker was.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from app.annotation import assignments, hot_sql, timing
from app.annotation.assignment_scores import score_against_suggestions
from app.annotation.assignments import (
    NO_SUCH_TOKEN,
    TOKEN_PATTERN,
    new_completion_code,
    require_active,
)
from app.annotation.cache import texts_of
from app.annotation.handle import Handle
from app.annotation.qualification import qualifying, screen_out
from app.annotation.refusals import TryAgain
from app.annotation.sessions import code_withheld, facts, release_code
from app.crowd.platforms import completion_url
from app.documents.journey import asks_after_study, has_questions
from app.errors import NotFound
from app.models import Assignment, Document, Study

ATTEMPTS = 5  # writes lost to a concurrent change before the client is asked to retry


def submit(db: Handle, token: str) -> dict[str, Any]:
    """Submit the token's assignment (see the module); its answer."""
    if not TOKEN_PATTERN.match(token):
        raise NotFound(NO_SUCH_TOKEN)
    for _attempt in range(ATTEMPTS):
        assignment, session = _read(db, token)
        if assignment.status in ("submitted", "screened_out"):
            return answer(assignment, assignment.completion_code)
        require_active(assignment.status)
        study = assignment.study
        plain = _plain(assignment, session)
        timing.require_seen(db, assignment, partial(_segments, db, assignment.document))
        scored = score_against_suggestions(db, assignment) if _scores(study) else None
        code = _code(db, assignment, session, plain)
        params: dict[str, Any] = {
            "assignment_id": assignment.id,
            "token": token,
            "now": assignments.now(),
            "code": code,
        }
        if scored is not None:
            params["scores"] = {**(assignment.scores or {}), "suggestions": scored.score}
            params["changes"] = scored.changes
        lock, write = hot_sql.submit_statements(db.dialect, scored is not None)
        written = db.pair(lock, write, params, alone=plain)
        if not written.rows:  # changed since the reads: read again
            continue
        assignment.status, assignment.completion_code = "submitted", written.scalar()
        if code is not None and session.documents > 1:  # the session's earlier documents
            release_code(db, study, assignment.id, assignment.session_id)
        if not plain:
            _rules_on_other_work(db, assignment)
        return answer(assignment, assignment.completion_code)
    raise TryAgain()


def answer(assignment: Assignment, code: str | None) -> dict[str, Any]:
    """The submit's answer (``docs/CONTRACT.md``) once ``assignment`` is submitted with
    ``code``: without one (the session goes on, a question is pending, a training document)
    the browser goes to the done page."""
    redirect = after_submit_redirect(assignment) if code is not None else None
    out = {"completion_code": code, "redirect_url": redirect}
    if assignment.status == "screened_out":  # the done page gives the screen-out return
        out["screened_out"] = True
    return out


def _segments(db: Handle, document: Document) -> int:
    return len(texts_of(db, document.id, document.created_at))


def _scores(study: Study) -> bool:
    """Whether a submit scores the worker against the document's suggestions."""
    return study.suggestions != "off"


def _pauses(study: Study) -> bool:
    """Whether a submit applies the study's pause rule (:mod:`app.annotation.pausing`)."""
    return "pause" in (study.settings or {})


def _plain(assignment: Assignment, session: _Session) -> bool:
    """Whether the submit reads and writes nothing but its own row and score (see the
    module): each step may then commit on its own."""
    return not (
        timing.requires_all_seen(assignment.study)
        or _pauses(assignment.study)
        or qualifying(assignment)
        or session.documents > 1
        or asks_after_study(assignment.study)
    )


def _code(db: Handle, assignment: Assignment, session: _Session, plain: bool) -> str | None:
    """The code the write stores: the session's (a new one outside any session) when this
    submit ends the session and no required question is then pending; else None, given out
    later (:func:`app.annotation.sessions.give_code_when_due`); none for a qualification
    attempt."""
    if qualifying(assignment):
        return None
    ends = True
    if session.documents > 1:
        found = facts(db, assignment.study, session.id)
        ends = found is not None and (found.ended_early or found.submitted + 1 >= found.documents)
    if code_withheld(None if plain else db.session(), assignment, ends_session=ends):
        return None
    return session.code or new_completion_code()


@dataclass(frozen=True)
class _Session:
    """What the submit reads of the assignment's session (``id`` None: in no session)."""

    id: int | None
    documents: int
    code: str | None


def _rules_on_other_work(db: Handle, assignment: Assignment) -> None:
    """The pause rule and a qualification attempt's screen-out, after the write, in its
    transaction (they read the worker's other assignments through the ORM)."""
    session = db.session()
    study = session.get(Study, assignment.study_id)
    if study is None:  # deleted meanwhile: the write found no live row, never here
        raise NotFound(NO_SUCH_TOKEN)
    if _pauses(study):
        from app.annotation import pausing

        pausing.check(session, study, [assignment.worker_id])
    if qualifying(assignment) and screen_out(session, study, assignment.worker_id):
        assignment.status, assignment.completion_code = "screened_out", None


def _read(db: Handle, token: str) -> tuple[Assignment, _Session]:
    """Step 1: the token's assignment with its study and document, as transient objects
    (never added to a session) holding the columns the rules and the scoring read, and its
    session's."""
    row = db.run(hot_sql.SUBMIT_FACTS, {"token": token}, alone=True).first()
    if row is None:
        raise NotFound(NO_SUCH_TOKEN)
    study = Study(
        id=row.study_id,
        suggestions=row.suggestions,
        settings=row.settings or {},
        completion_url=row.completion_url,
        taxonomy_hash=row.taxonomy_hash,
    )
    document = Document(
        id=row.document_id,
        external_id=row.external_id,
        is_gold=row.is_gold,
        created_at=row.document_created_at,
    )
    session = _Session(row.session_id, row.session_documents or 1, row.session_code)
    return Assignment(
        id=row.id,
        token=token,
        study_id=row.study_id,
        document_id=row.document_id,
        session_id=row.session_id,
        worker_id=row.worker_id,
        status=row.status,
        completion_code=row.completion_code,
        platform=row.platform,
        platform_data=row.platform_data or {},
        scores=row.scores,
        current_segment=row.current_segment,
        study=study,
        document=document,
    ), session


def after_submit_redirect(assignment: Assignment) -> str | None:
    """Where the browser goes right after submitting (the API's ``redirect_url``).

    None sends it to ``/a/<token>/done``: MTurk work (the done page posts the form back)
    and qualification documents (the done page scores them and lets the worker go on).
    Else the study's completion URL, if any.
    """
    if qualifying(assignment):
        return None
    if has_questions(assignment.study):  # the done page asks them first
        return None
    return completion_url(assignment)
