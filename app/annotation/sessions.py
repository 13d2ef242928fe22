"""A participant's session: one visit from the platform (a Prolific submission, an MTurk
assignment, a generic link), in which they consent once, do the training phase once (practice
and qualification, as a worker always did them), then up to K documents (the study's
documents per session, :mod:`app.annotation.session_settings`), each an assignment of its own
under every rule of the arrival policy, and get one completion code at the end.

The arrival (:func:`app.annotation.arrive.arrive`, the one policy) opens a session or
continues one, through :func:`admit` (which checks the consent proof a new session needs) and
the statements here, in its transaction. What a session is made of:

* its row (``work_sessions``): the K it was opened for, its one code, and when it ended
  early (no document left for the worker before K, where the study allows a shorter
  session);
* its assignments (``assignments.session_id``): a *real* document is one that is not a
  training document (a gold document of a study with a pass mark); a session has room while
  fewer than K real documents are active or done in it (:data:`DONE`: submitted, or rejected
  later), and is *finished* once K are done or it ended early.

The code reaches the worker (``completion_code`` stored on the session's submitted real
assignments) once the session is finished and every required question asked so far is
answered (:func:`release_code`; :func:`app.documents.journey.pending_stages`), never before:
not in the submit's answer, not in ``GET /api/assignments/<token>``.

An API arrival (``POST /api/assignments`` without a key) opens a session only when the study
needs one (more than one document per session, or a consent text): a one-document study's
API arrival stays the one assignment it always was (no session, its own code).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Boolean, DateTime, bindparam, text

from app.annotation.assignments import new_completion_code, now
from app.annotation.consent import ConsentNeeded, Proof, required_hash, vouches
from app.annotation.handle import Handle
from app.annotation.session_settings import session_rule
from app.crowd.platforms import Arrival
from app.documents.journey import pending_stages, withholds_code
from app.errors import Conflict
from app.rules.work import has_pass_mark

TIMESTAMP = DateTime(timezone=True)
# The statuses of a document done in a session: submitted, or rejected later by the
# researcher (the participant did it).
DONE = ("submitted", "rejected")


@dataclass(frozen=True)
class Open:
    """Open a new session. ``consent``: the proof the arrival carried; ``always``: False for an
    API arrival, which opens one only when the study needs it (:func:`needs_session`)."""

    consent: Proof | None = None
    always: bool = True


@dataclass(frozen=True)
class Continue:
    """Continue session ``session_id``, which the caller found through a proof of the
    worker's own visit (an assignment's token, Prolific's session, MTurk's assignment)."""

    session_id: int


class SessionComplete(Conflict):
    """The session has all its documents (or ended): the worker's way on is its done page."""

    def __init__(self) -> None:
        super().__init__("this session has all its documents; see its done page")


@dataclass(frozen=True)
class Facts:
    """A session's row and its real documents taken (active or done) and done (:data:`DONE`)."""

    id: int
    study_id: int
    worker_id: str
    documents: int
    completion_code: str
    ended_early: bool
    taken: int
    submitted: int

    @property
    def finished(self) -> bool:
        return self.ended_early or self.submitted >= self.documents

    @property
    def has_room(self) -> bool:
        return not self.finished and self.taken < self.documents


def needs_session(study: Any) -> bool:
    """Whether every arrival of ``study`` opens a session (an API arrival too): more than one
    document per session, or a consent text (stored with the session)."""
    return session_rule(study).documents > 1 or required_hash(study) is not None


def admit(
    study: Any, worker_id: str, platform: str, data: dict[str, Any], visit: Open | Continue | None
) -> Open | Continue | None:
    """What an arrival does about its session (see the module): the session it continues, a
    new one to open, or None (no session). A new one needs, where the study has a consent
    text, a proof vouching for this very arrival: else :class:`ConsentNeeded`, nothing
    stored."""
    if isinstance(visit, Continue):
        return visit
    visit = visit or Open(always=False)
    digest = required_hash(study)
    if digest is not None:
        params = Arrival(platform, worker_id, dict(data)).start_params()
        if not vouches(visit.consent, study.id, digest, params):
            raise ConsentNeeded(study.slug)
    return visit if visit.always or needs_session(study) else None


# --- statements ---------------------------------------------------------------------------------

OPEN = text(
    "INSERT INTO work_sessions (study_id, worker_id, platform, documents, completion_code, "
    "started_at) VALUES (:study_id, :worker_id, :platform, :documents, :code, :now) "
    "RETURNING id"
).bindparams(bindparam("now", type_=TIMESTAMP))
AGREED = text(
    "INSERT INTO consents (study_id, worker_id, text_hash, agreed, decided_at, session_id) "
    "VALUES (:study_id, :worker_id, :text_hash, :agreed, :now, :session_id)"
).bindparams(bindparam("now", type_=TIMESTAMP), bindparam("agreed", type_=Boolean))
# A real document: not a training document (a gold one while the study has a pass mark).
_REAL = "NOT (documents.is_gold AND :training)"
_IN_SESSION = (
    "SELECT COUNT(*) FROM assignments JOIN documents ON documents.id = assignments.document_id "
    f"WHERE assignments.session_id = work_sessions.id AND {_REAL} AND "
)
FACTS = text(
    "SELECT work_sessions.id, work_sessions.study_id, work_sessions.worker_id, "
    "work_sessions.documents, work_sessions.completion_code, work_sessions.ended_early_at, "
    f"({_IN_SESSION}assignments.status IN ('active', 'submitted', 'rejected')) AS taken, "
    f"({_IN_SESSION}assignments.status IN ('submitted', 'rejected')) AS submitted "
    "FROM work_sessions WHERE work_sessions.id = :session_id"
).bindparams(bindparam("training", type_=Boolean))
END_EARLY = text(
    "UPDATE work_sessions SET ended_early_at = :now WHERE id = :session_id "
    "AND ended_early_at IS NULL"
).bindparams(bindparam("now", type_=TIMESTAMP))
# The code given out: on every submitted real assignment of the session still without one.
RELEASE = text(
    "UPDATE assignments SET completion_code = :code WHERE session_id = :session_id "
    "AND status = 'submitted' AND completion_code IS NULL AND document_id IN "
    f"(SELECT documents.id FROM documents WHERE documents.study_id = :study_id AND {_REAL})"
).bindparams(bindparam("training", type_=Boolean))
# Where a real document stands in its session: its place among the session's real documents
# taken (active or submitted), in the order they were opened.
POSITION = text(
    "SELECT COUNT(*) FROM assignments JOIN documents ON documents.id = assignments.document_id "
    "WHERE assignments.session_id = :session_id AND assignments.id <= :assignment_id AND "
    f"assignments.status IN ('active', 'submitted') AND {_REAL}"
).bindparams(bindparam("training", type_=Boolean))
# A submitted assignment outside any session (an API arrival, work from before sessions).
RELEASE_ONE = text(
    "UPDATE assignments SET completion_code = COALESCE(completion_code, :code) "
    "WHERE id = :assignment_id AND status = 'submitted'"
)


def open_session(db: Handle, study: Any, worker_id: str, platform: str) -> int:
    """A new session's row (in the arrival's transaction: gone with a refusal)."""
    params = {
        "study_id": study.id,
        "worker_id": worker_id,
        "platform": platform,
        "documents": session_rule(study).documents,
        "code": new_completion_code(),
        "now": now(),
    }
    return db.run(OPEN, params).scalar()


def record_agreement(db: Handle, study: Any, worker_id: str, session_id: int) -> None:
    """The agreement the new session's proof vouched for, stored with that session."""
    params = {
        "study_id": study.id,
        "worker_id": worker_id,
        "text_hash": required_hash(study),
        "agreed": True,
        "now": now(),
        "session_id": session_id,
    }
    db.run(AGREED, params)


def facts(db: Handle, study: Any, session_id: int) -> Facts | None:
    """The session's :class:`Facts`, or None for no such session."""
    row = db.run(FACTS, {"session_id": session_id, "training": has_pass_mark(study)}).first()
    if row is None:
        return None
    return Facts(
        row.id,
        row.study_id,
        row.worker_id,
        row.documents,
        row.completion_code,
        row.ended_early_at is not None,
        row.taken or 0,
        row.submitted or 0,
    )


def continued(db: Handle, study: Any, worker_id: str, session_id: int, real: bool) -> Facts:
    """The session an arrival continues, checked after the worker ID's lock: this study's and
    this worker's, not finished, and with room when the next document is a real one (else
    :class:`SessionComplete`)."""
    found = facts(db, study, session_id)
    if found is None or found.study_id != study.id or found.worker_id != worker_id:
        raise Conflict("this session is not this worker's in this study")
    if found.finished or (real and not found.has_room):
        raise SessionComplete()
    return found


def end_early(db: Handle, session_id: int) -> None:
    """No document was left for the worker: the session ends here (a shorter session)."""
    db.run(END_EARLY, {"session_id": session_id, "now": now()})


def position(db: Handle, assignment: Any) -> tuple[int, int] | None:
    """("document n of K") for a real document of a session of several documents, else
    None."""
    if assignment.session_id is None or _is_training(assignment):
        return None
    found = facts(db, assignment.study, assignment.session_id)
    if found is None or found.documents < 2:
        return None
    params = {
        "session_id": assignment.session_id,
        "assignment_id": assignment.id,
        "training": has_pass_mark(assignment.study),
    }
    return db.run(POSITION, params).scalar() or 1, found.documents


def _is_training(assignment: Any) -> bool:
    return assignment.document.is_gold and has_pass_mark(assignment.study)


def code_withheld(session: Any, assignment: Any, *, ends_session: bool) -> bool:
    """Whether a submit or a submitted assignment keeps its worker from the code: the session
    goes on, or a required question asked so far is not answered (``session``: an ORM session
    for the answers' reads, None where the study has no ``after_study`` questions)."""
    if not ends_session:
        return True
    return withholds_code(pending_stages(session, assignment, ends_session=True))


def give_code_when_due(db: Handle, assignment: Any) -> Facts | None:
    """A submitted real assignment's code given out once due (its session finished, or in
    none; nothing required pending); idempotent. Returns the session's facts (None: none)."""
    found = facts(db, assignment.study, assignment.session_id) if assignment.session_id else None
    if assignment.status != "submitted" or _is_training(assignment):
        return found
    ends = found is None or found.finished
    if not code_withheld(db.session(), assignment, ends_session=ends):
        release_code(db, assignment.study, assignment.id, assignment.session_id)
    return found


def release_code(db: Handle, study: Any, assignment_id: int, session_id: int | None) -> None:
    """Give out the code of a finished session (or of a submitted assignment outside any);
    idempotent. The caller decided that it is due (:func:`code_withheld`)."""
    if session_id is None:
        db.run(RELEASE_ONE, {"assignment_id": assignment_id, "code": new_completion_code()})
        return
    found = facts(db, study, session_id)
    if found is None or not found.finished:
        return
    params = {
        "code": found.completion_code,
        "session_id": session_id,
        "study_id": study.id,
        "training": has_pass_mark(study),
    }
    db.run(RELEASE, params)
