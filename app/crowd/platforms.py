"""Crowd platforms: how a worker arrives (Prolific, Mechanical Turk, anything else) and leaves.

* **Prolific** sends ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``. The worker is the
  ``PROLIFIC_PID``; opening the link again with the same ``SESSION_ID`` resumes the same
  assignment; after submitting, the browser goes to the study's completion URL
  (``https://app.prolific.com/submissions/complete?cc=CODE``; ``{code}`` in it is replaced
  by the assignment's own completion code).
* **Mechanical Turk** (ExternalQuestion) loads the page in an iframe with ``assignmentId``,
  ``hitId``, ``workerId`` and ``turkSubmitTo``. Before a worker accepts, ``assignmentId`` is
  ``ASSIGNMENT_ID_NOT_AVAILABLE``: the page is a read-only preview and nothing is stored.
  After submitting, the done page posts a real HTML form to
  ``turkSubmitTo + "/mturk/externalSubmit"`` with ``assignmentId`` and the completion code.
  Worker pages of MTurk studies may be framed by the MTurk origins only.
* **generic**: a ``worker_id`` parameter, and the completion code shown on the done page.

Workers are identified by the assignment token in the URL, never by a cookie.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.documents.text import identifier_problem, text_problem
from app.errors import InvalidInput
from app.models import Assignment, Study

PLATFORMS = ("generic", "prolific", "mturk")
MTURK_ORIGINS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
MTURK_PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_SUBMIT_PATH = "/mturk/externalSubmit"
MAX_PARAM_CHARS = 200
# which detector operating point a study's hints use (model_server/operating_points.py)
HINT_LEVELS = ("precise", "balanced", "thorough")
DEFAULT_HINTS = "balanced"


@dataclass(frozen=True)
class Arrival:
    """Who arrived at ``/s/<slug>`` and from where.

    ``resume_key`` names the ``platform_data`` field that identifies this visit
    (Prolific ``session_id``, MTurk ``assignment_id``); ``preview`` is MTurk's
    not-yet-accepted view, which creates nothing.
    """

    platform: str
    worker_id: str
    platform_data: dict[str, str] = field(default_factory=dict)
    resume_key: str | None = None
    preview: bool = False

    def start_params(self) -> dict[str, str]:
        """The query parameters that bring this worker back to ``/s/<slug>``."""
        data = self.platform_data
        if self.platform == "prolific":
            return {
                "PROLIFIC_PID": self.worker_id,
                "STUDY_ID": data.get("study_id", ""),
                "SESSION_ID": data.get("session_id", ""),
            }
        if self.platform == "mturk":
            return {
                "workerId": self.worker_id,
                "assignmentId": data.get("assignment_id", ""),
                "hitId": data.get("hit_id", ""),
                "turkSubmitTo": data.get("turk_submit_to", ""),
            }
        return {"worker_id": self.worker_id}


def _param(args: Mapping[str, str], name: str, *, required: bool = True) -> str:
    value = (args.get(name) or "").strip()
    if required and not value:
        raise InvalidInput(f"the link is missing the {name} parameter")
    if len(value) > MAX_PARAM_CHARS:
        raise InvalidInput(f"{name} is longer than {MAX_PARAM_CHARS} characters")
    problem = identifier_problem(value)
    if problem:
        raise InvalidInput(f"{name} {problem}")
    return value


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def check_submit_to(url: str, allowed: Iterable[str]) -> str:
    """``turkSubmitTo`` if it is one of the allowed MTurk origins (else InvalidInput)."""
    url = url.rstrip("/")
    parts = urlsplit(url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.netloc
        or origin(url) not in {o.lower().rstrip("/") for o in allowed}
    ):
        raise InvalidInput(f"turkSubmitTo {url!r} is not a Mechanical Turk address")
    return url


def read_arrival(
    args: Mapping[str, str], *, mturk_origins: Iterable[str] = MTURK_ORIGINS
) -> Arrival | None:
    """Parse the arrival parameters; None when there is no worker identity at all yet."""
    if "PROLIFIC_PID" in args:
        return Arrival(
            platform="prolific",
            worker_id=_param(args, "PROLIFIC_PID"),
            platform_data={
                "study_id": _param(args, "STUDY_ID", required=False),
                "session_id": _param(args, "SESSION_ID", required=False),
            },
            resume_key="session_id" if args.get("SESSION_ID") else None,
        )
    if any(name in args for name in ("assignmentId", "hitId", "workerId", "turkSubmitTo")):
        assignment_id = _param(args, "assignmentId")
        hit_id = _param(args, "hitId", required=False)
        if assignment_id == MTURK_PREVIEW_ID:
            return Arrival("mturk", "", {"hit_id": hit_id}, preview=True)
        return Arrival(
            platform="mturk",
            worker_id=_param(args, "workerId"),
            platform_data={
                "assignment_id": assignment_id,
                "hit_id": hit_id,
                "turk_submit_to": check_submit_to(_param(args, "turkSubmitTo"), mturk_origins),
            },
            resume_key="assignment_id",
        )
    worker_id = (args.get("worker_id") or "").strip()
    if not worker_id:
        return None
    return Arrival("generic", _param(args, "worker_id"))


def find_visit(session: Session, study: Study, arrival: Arrival) -> Assignment | None:
    """The latest assignment this worker opened on this very visit (same resume key)."""
    if arrival.resume_key is None:
        return None
    wanted = arrival.platform_data.get(arrival.resume_key)
    if not wanted:
        return None
    rows = session.scalars(
        select(Assignment)
        .where(
            Assignment.study_id == study.id,
            Assignment.worker_id == arrival.worker_id,
            Assignment.platform == arrival.platform,
        )
        .order_by(Assignment.id.desc())
    )
    for assignment in rows:
        if (assignment.platform_data or {}).get(arrival.resume_key) == wanted:
            return assignment
    return None


def arrival_of(assignment: Assignment) -> Arrival:
    """The arrival an assignment was opened with (to send its worker on to the next one)."""
    return Arrival(assignment.platform, assignment.worker_id, dict(assignment.platform_data or {}))


def completion_url(assignment: Assignment) -> str | None:
    """The study's completion URL with ``{code}`` filled in; None for MTurk (form post)."""
    if assignment.platform == "mturk":
        return None
    url = assignment.study.completion_url
    if not url:
        return None
    return url.replace("{code}", assignment.completion_code or "")


def screen_out_url(study: Study) -> str | None:
    """Where a worker screened out by the training phase is sent: the study's screen-out URL
    (on Prolific a completion URL whose code has the *screened out* action, e.g.
    ``https://app.prolific.com/submissions/complete?cc=SCREENOUT``); None: the page asks
    them to return the task on their platform."""
    return (study.settings or {}).get("screen_out_url") or None


def mturk_submit_form(assignment: Assignment) -> tuple[str, dict[str, str]] | None:
    """The (action, fields) of the form that reports an MTurk assignment as done."""
    data = assignment.platform_data or {}
    if assignment.platform != "mturk" or not data.get("turk_submit_to"):
        return None
    action = data["turk_submit_to"].rstrip("/") + MTURK_SUBMIT_PATH
    return action, {
        "assignmentId": data.get("assignment_id", ""),
        "completion_code": assignment.completion_code or "",
    }


def frame_ancestors(study: Study | None, assignment: Assignment | None = None) -> str:
    """Who may frame a worker page: the MTurk origins for MTurk work, nobody otherwise."""
    mturk = (study is not None and study.platform == "mturk") or (
        assignment is not None and assignment.platform == "mturk"
    )
    return " ".join(MTURK_ORIGINS) if mturk else "'none'"


# --- study settings ------------------------------------------------------------------------

UNSET: Any = object()
DEFAULT_MAX_HINTS_PER_SEGMENT = 3
DEFAULT_MIN_HINT_SCORE = 0.0
MAX_HINTS_LIMIT = 50
# The defaults of the settings written here and read by the worker's actions
# (app/annotation/assigning.py, qualification.py): they live where the settings do.
DEFAULT_ABANDON_MINUTES = 45
DEFAULT_HOLD_MINUTES = 5
DEFAULT_QUALIFICATION_ATTEMPTS = 2


def _check_url(url: str, what: str = "completion URL") -> str:
    problem = text_problem(url, allow="")
    if problem:
        raise InvalidInput(f"{what} {problem}")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise InvalidInput(f"{what} {url!r} cannot be read: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidInput(f"{what} {url!r} must be an http(s) address")
    if len(url) > 2000:
        raise InvalidInput(f"{what} is longer than 2000 characters")
    return url


def configure_study(
    study: Study,
    *,
    platform: str = UNSET,
    completion_url: str | None = UNSET,
    abandon_after_minutes: float = UNSET,
    hold_minutes: float = UNSET,
    randomise_conditions: bool = UNSET,
    qualification_f1: float | None = UNSET,
    qualification_attempts: int = UNSET,
    max_hints_per_segment: int = UNSET,
    min_hint_score: float = UNSET,
    hints: str = UNSET,
    screen_out_url: str | None = UNSET,
    min_catch_rate: float | None = UNSET,
) -> dict[str, Any]:
    """Validate and apply platform and assignment settings; returns :func:`describe`.

    ``qualification_f1=None`` turns qualification mode off; any value in (0, 1] turns it on.
    Raises :class:`InvalidInput` (changing nothing) on a bad value.
    """
    settings = dict(study.settings or {})
    new_platform = study.platform if platform is UNSET else platform
    if new_platform not in PLATFORMS:
        raise InvalidInput(f"platform must be one of {', '.join(PLATFORMS)}")
    new_url = study.completion_url if completion_url is UNSET else completion_url
    if new_url is not None:
        new_url = new_url.strip() or None
    if new_url is not None:
        _check_url(new_url)
        if new_platform == "mturk":
            raise InvalidInput(
                "MTurk studies report back to Mechanical Turk: leave the completion URL empty"
            )
    if abandon_after_minutes is not UNSET:
        minutes = float(abandon_after_minutes)
        if not 1 <= minutes <= 7 * 24 * 60:
            raise InvalidInput("the abandon timeout must be between 1 minute and 7 days")
        settings["abandon_after_minutes"] = minutes if minutes % 1 else int(minutes)
    if hold_minutes is not UNSET:
        minutes = float(hold_minutes)
        if not 1 <= minutes <= 60:
            raise InvalidInput("the slot hold must be between 1 and 60 minutes")
        settings["hold_minutes"] = minutes if minutes % 1 else int(minutes)
    if randomise_conditions is not UNSET:
        settings["randomise_conditions"] = bool(randomise_conditions)
    settings.update(_training_settings(settings, screen_out_url, min_catch_rate))
    if hints is not UNSET:
        if hints not in HINT_LEVELS:
            raise InvalidInput(f"hints must be one of {', '.join(HINT_LEVELS)}")
        settings["hints"] = hints
    rule = dict(settings.get("qualification") or {})
    if qualification_f1 is not UNSET:
        if qualification_f1 is None:
            rule = {}
        else:
            f1 = float(qualification_f1)
            if not 0 < f1 <= 1:
                raise InvalidInput("the qualification F1 must be more than 0 and at most 1")
            rule["min_f1"] = f1
    if qualification_attempts is not UNSET:
        attempts = int(qualification_attempts)
        if not 1 <= attempts <= 100:
            raise InvalidInput("qualification attempts must be between 1 and 100")
        if rule:
            rule["attempts"] = attempts
    settings.update(_hint_settings(max_hints_per_segment, min_hint_score))
    if rule:
        rule.setdefault("attempts", DEFAULT_QUALIFICATION_ATTEMPTS)
        settings["qualification"] = rule
    else:
        settings.pop("qualification", None)
    study.platform = new_platform
    study.completion_url = new_url
    study.settings = settings
    return describe(study)


def _training_settings(settings: dict[str, Any], url: Any, rate: Any) -> dict[str, Any]:
    """The screen-out URL and the attention checks' flagging threshold given (validated), as
    settings entries; None (or an empty URL) removes one from ``settings``."""
    changes: dict[str, Any] = {}
    if url is not UNSET:
        url = (url or "").strip()
        if url:
            changes["screen_out_url"] = _check_url(url, "screen-out URL")
        else:
            settings.pop("screen_out_url", None)
    if rate is not UNSET:
        if rate is None:
            settings.pop("attention", None)
        else:
            try:
                value = float(rate)
            except (TypeError, ValueError):
                raise InvalidInput("the attention checks' catch rate must be a number") from None
            if not 0 < value <= 1:
                raise InvalidInput(
                    "the attention checks' catch rate must be more than 0 and at most 1"
                )
            changes["attention"] = {"min_catch_rate": value}
    return changes


def _hint_settings(max_hints: Any, min_score: Any) -> dict[str, Any]:
    """The hint limits given (validated), as settings entries."""
    changes: dict[str, Any] = {}
    if max_hints is not UNSET:
        if isinstance(max_hints, bool) or not isinstance(max_hints, int):
            raise InvalidInput("the most hints per segment must be a whole number")
        if not 0 <= max_hints <= MAX_HINTS_LIMIT:
            raise InvalidInput(
                f"the most hints per segment must be between 0 and {MAX_HINTS_LIMIT}"
            )
        changes["max_hints_per_segment"] = max_hints
    if min_score is not UNSET:
        try:
            score = float(min_score)
        except (TypeError, ValueError):
            raise InvalidInput("the minimum hint score must be a number") from None
        if not 0 <= score <= 1:
            raise InvalidInput("the minimum hint score must be between 0 and 1")
        changes["min_hint_score"] = score
    return changes


def hint_limits(study: Study) -> tuple[int, float]:
    """(most hints shown per segment, lowest score shown) for a study's workers."""
    settings = study.settings or {}
    return (
        int(settings.get("max_hints_per_segment", DEFAULT_MAX_HINTS_PER_SEGMENT)),
        float(settings.get("min_hint_score", DEFAULT_MIN_HINT_SCORE)),
    )


def describe(study: Study) -> dict[str, Any]:
    """The study's platform and assignment settings with their defaults filled in."""
    settings = study.settings or {}
    return {
        "platform": study.platform,
        "completion_url": study.completion_url,
        "annotators_per_doc": study.annotators_per_doc,
        "suggestions": study.suggestions,
        "abandon_after_minutes": settings.get("abandon_after_minutes", DEFAULT_ABANDON_MINUTES),
        "hold_minutes": settings.get("hold_minutes", DEFAULT_HOLD_MINUTES),
        "randomise_conditions": bool(settings.get("randomise_conditions")),
        "qualification": settings.get("qualification") or None,
        "max_hints_per_segment": hint_limits(study)[0],
        "min_hint_score": hint_limits(study)[1],
        "hints": settings.get("hints", DEFAULT_HINTS),
        "screen_out_url": settings.get("screen_out_url"),
        "min_catch_rate": (settings.get("attention") or {}).get("min_catch_rate"),
        "pause": settings.get("pause") or None,
    }
