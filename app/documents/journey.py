"""A worker's way through a study around the documents: consent first, questionnaires after.

The definitions live in ``study.settings["journey"]`` (:mod:`app.documents.questionnaires`).

* Consent: asked once per session (a participant's visit, :mod:`app.annotation.sessions`)
  before its first document, never remembered for a worker ID; the answer is stored with
  the text's SHA-256, the time and the session it opened (:class:`app.models.Consent`).
* ``after_document`` questions: after every submitted document.
* ``after_study`` questions: once per worker, after the document that ends their first
  session (with one document per session, the first document that sends them back to their
  platform; a qualification document that continues to the next one does not count).
* The completion code reaches the worker once every required question asked so far is
  answered (:func:`withholds_code`).

Every question of a stage gets a row when the worker sends the form (an optional question
left blank stores ``""``), so a stage is done once it has rows; the first answers win.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.documents.questionnaires import STAGE_KEYS, consent_hash, parse_questionnaire
from app.documents.text import text_problem
from app.errors import InvalidInput
from app.models import Assignment, Consent, QuestionnaireAnswer, Study

MAX_INSTRUCTIONS_CHARS = 20_000


def definition(study: Study) -> dict[str, Any]:
    """The study's consent and questionnaires ({} when it has none)."""
    return dict((study.settings or {}).get("journey") or {})


def set_definition(study: Study, text: str | None, source: str = "<questionnaire>") -> dict:
    """Validate and store a questionnaire YAML; None or blank text removes it."""
    settings = dict(study.settings or {})
    if text is None or not text.strip():
        settings.pop("journey", None)
        settings.pop("journey_source", None)
        study.settings = settings
        return {}
    snapshot = parse_questionnaire(text, source)
    settings["journey"] = snapshot
    settings["journey_source"] = text  # the YAML as written, for the dashboard's form
    study.settings = settings
    return snapshot


def set_instructions(study: Study, text: str | None) -> str:
    """Store the study's Markdown instructions (blank removes them); returns what is stored."""
    text = (text or "").replace("\r\n", "\n").strip()
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        raise InvalidInput(f"the instructions are longer than {MAX_INSTRUCTIONS_CHARS} characters")
    problem = text_problem(text)
    if problem:
        raise InvalidInput(f"the instructions {problem}")
    settings = dict(study.settings or {})
    if text:
        settings["instructions"] = text
    else:
        settings.pop("instructions", None)
    study.settings = settings
    return text


def instructions(study: Study) -> str:
    return (study.settings or {}).get("instructions") or ""


def consent_text(study: Study) -> str:
    return definition(study).get("consent") or ""


def record_decline(session: Session, study: Study, worker_id: str) -> Consent:
    """Store that the worker declined the current consent text (a record of the answer,
    never read to let a worker ID in or keep one out: docs/SECURITY.md, "Consent"). An
    agreement is stored by the arrival it let in, with its session
    (:func:`app.annotation.sessions.record_agreement`)."""
    row = Consent(
        study_id=study.id,
        worker_id=worker_id,
        text_hash=consent_hash(consent_text(study)),
        agreed=False,
    )
    session.add(row)
    session.flush()
    return row


def has_questions(study: Study) -> bool:
    journey = definition(study)
    return any(journey.get(stage) for stage in STAGE_KEYS)


def _stage_done(session: Session, assignment_ids, stage: str) -> bool:
    return (
        session.scalar(
            select(QuestionnaireAnswer.id)
            .where(
                QuestionnaireAnswer.assignment_id.in_(assignment_ids),
                QuestionnaireAnswer.stage == stage,
            )
            .limit(1)
        )
        is not None
    )


def pending_stages(
    session: Session | None, assignment: Assignment, *, ends_session: bool
) -> list[tuple[str, list[dict[str, Any]]]]:
    """The questionnaires the worker of ``assignment`` still has to see, in order:
    ``("document", questions)`` after each document, ``("study", questions)`` once per worker
    after the document that ends a session (``ends_session``: the session is finished, or the
    assignment is in none). An assignment not yet submitted has answered nothing (answers are
    taken after the submit only), so the document stage needs no read then, and ``session``
    may be None where the study has no ``after_study`` questions."""
    journey = definition(assignment.study)
    stages: list[tuple[str, list[dict[str, Any]]]] = []
    if journey.get("after_document") and (
        assignment.status == "active"
        or not _stage_done(_reader(session), [assignment.id], "document")
    ):
        stages.append(("document", journey["after_document"]))
    if ends_session and journey.get("after_study"):
        mine = select(Assignment.id).where(
            Assignment.study_id == assignment.study_id,
            Assignment.worker_id == assignment.worker_id,
        )
        if not _stage_done(_reader(session), mine, "study"):
            stages.append(("study", journey["after_study"]))
    return stages


def _reader(session: Session | None) -> Session:
    if session is None:
        raise AssertionError("this read needs a session")
    return session


def pending_stage(
    session: Session, assignment: Assignment, *, ends_session: bool = True
) -> tuple[str, list[dict[str, Any]]] | None:
    """The questionnaire the done page asks next (of a submitted assignment), or None."""
    if assignment.status != "submitted":
        return None
    stages = pending_stages(session, assignment, ends_session=ends_session)
    return stages[0] if stages else None


def withholds_code(stages: list[tuple[str, list[dict[str, Any]]]]) -> bool:
    """Whether a pending stage has a required question: the completion code reaches the
    worker only once every required answer is stored (docs/SECURITY.md, "Completion
    codes")."""
    return any(question.get("required", True) for _, questions in stages for question in questions)


def asks_after_study(study: Study) -> bool:
    """Whether the study has ``after_study`` questions (a submit that ends a session then
    reads whether the worker answered them before)."""
    return bool(definition(study).get("after_study"))


def save_answers(
    session: Session,
    assignment: Assignment,
    stage: str,
    questions: list[dict[str, Any]],
    answers: dict[str, str],
) -> bool:
    """Store one row per question (blank for a skipped optional one); False when this
    stage of this assignment was answered before (the first answers are kept)."""
    if _stage_done(session, [assignment.id], stage):
        return False
    for question in questions:
        session.add(
            QuestionnaireAnswer(
                assignment_id=assignment.id,
                stage=stage,
                question=question["id"],
                answer=answers.get(question["id"], ""),
            )
        )
    session.flush()
    return True


def answers_by_assignment(session: Session, study: Study) -> dict[int, dict[str, str]]:
    """Every stored answer of the study: assignment id -> {"document.ID" | "study.ID": text}.

    The hook for the assignment-level export; answers are untrusted text (write them
    through :func:`app.formats.spreadsheet.spreadsheet_safe` in CSV).
    """
    rows = session.execute(
        select(
            QuestionnaireAnswer.assignment_id,
            QuestionnaireAnswer.stage,
            QuestionnaireAnswer.question,
            QuestionnaireAnswer.answer,
        )
        .join(Assignment, Assignment.id == QuestionnaireAnswer.assignment_id)
        .where(Assignment.study_id == study.id)
        .order_by(QuestionnaireAnswer.assignment_id, QuestionnaireAnswer.id)
    )
    result: dict[int, dict[str, str]] = {}
    for assignment_id, stage, question, answer in rows:
        result.setdefault(assignment_id, {})[f"{stage}.{question}"] = answer
    return result


def answer_columns(study: Study) -> list[str]:
    """The ``stage.question`` keys of the study's current questionnaires, in order."""
    journey = definition(study)
    return [
        f"{key}.{q['id']}" for stage, key in STAGE_KEYS.items() for q in journey.get(stage) or []
    ]
