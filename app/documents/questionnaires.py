"""A study's consent text and questionnaires, from YAML, checked like the taxonomy.

``marginalia study questionnaire STUDY FILE.yaml`` (or the dashboard's upload) stores the
validated snapshot in ``study.settings["journey"]``; errors read ``FILE:LINE: field: problem``.

```yaml
consent: |            # optional Markdown, shown before a worker's first document
  You are invited to ...
consent_button: I agree   # optional
after_document:       # optional: asked after every submitted document
  - id: difficulty
    type: likert      # likert | choice | text
    prompt: The text was easy to follow.
    scale: 5          # likert: 2 to 11 points (default 5)
    low: Strongly disagree   # likert: the end labels (optional)
    high: Strongly agree
    required: true    # default true
after_study:          # optional: asked once, after the worker's last document
  - id: feedback
    type: text
    prompt: Anything we should know?
    required: false
    max_chars: 2000   # text: default 2000, at most 5000
```
"""

from __future__ import annotations

import hashlib
from typing import Any

from app.documents.language import N_
from app.documents.taxonomy import (
    TaxonomyError,
    _check_unknown,
    _id,
    _Located,
    _parse,
    _text,
)
from app.documents.text import text_problem
from app.errors import InvalidInput, translatable

STAGES = ("after_document", "after_study")
STAGE_KEYS = {"after_document": "document", "after_study": "study"}
QUESTION_TYPES = ("likert", "choice", "text")
TOP_FIELDS = {"consent", "consent_button", *STAGES}
QUESTION_FIELDS = {
    "id",
    "type",
    "prompt",
    "required",
    "scale",
    "low",
    "high",
    "options",
    "max_chars",
}
MAX_QUESTIONS = 30
MAX_OPTIONS = 30
MAX_PROMPT_CHARS = 1000
MAX_OPTION_CHARS = 200
MAX_CONSENT_CHARS = 20_000
DEFAULT_ANSWER_CHARS = 2000
MAX_ANSWER_CHARS = 5000


def _whole(value: Any, loc: _Located, path: str, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise loc.fail(path, "must be a whole number")
    if not low <= value <= high:
        raise loc.fail(path, f"must be between {low} and {high}")
    return value


def _question(item: Any, path: str, loc: _Located, seen: set[str]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise loc.fail(path, "must be a mapping with id, type and prompt")
    _check_unknown(item, QUESTION_FIELDS, loc, path)
    qid = _id(item.get("id"), loc, f"{path}.id", limit=100)
    if qid in seen:
        raise loc.fail(f"{path}.id", f"duplicate question id {qid!r}")
    seen.add(qid)
    kind = _text(item.get("type"), loc, f"{path}.type", required=True)
    if kind not in QUESTION_TYPES:
        raise loc.fail(f"{path}.type", f"must be one of {', '.join(QUESTION_TYPES)}")
    required = item.get("required", True)
    if not isinstance(required, bool):
        raise loc.fail(f"{path}.required", "must be true or false")
    question: dict[str, Any] = {
        "id": qid,
        "type": kind,
        "prompt": _text(
            item.get("prompt"), loc, f"{path}.prompt", required=True, limit=MAX_PROMPT_CHARS
        ),
        "required": required,
    }
    allowed = {"likert": {"scale", "low", "high"}, "choice": {"options"}, "text": {"max_chars"}}
    for extra in ("scale", "low", "high", "options", "max_chars"):
        if extra in item and extra not in allowed[kind]:
            raise loc.fail(f"{path}.{extra}", f"does not apply to a {kind} question")
    if kind == "likert":
        question["scale"] = _whole(item.get("scale"), loc, f"{path}.scale", 2, 11, 5)
        for end in ("low", "high"):
            question[end] = _text(
                item.get(end), loc, f"{path}.{end}", required=False, limit=MAX_OPTION_CHARS
            )
    elif kind == "choice":
        options = item.get("options")
        if not isinstance(options, list) or len(options) < 2:
            raise loc.fail(f"{path}.options", "must be a list of at least 2 options")
        if len(options) > MAX_OPTIONS:
            raise loc.fail(f"{path}.options", f"has more than {MAX_OPTIONS} options")
        texts = [
            _text(o, loc, f"{path}.options[{i}]", required=True, limit=MAX_OPTION_CHARS)
            for i, o in enumerate(options)
        ]
        if len(set(texts)) != len(texts):
            raise loc.fail(f"{path}.options", "lists an option twice")
        question["options"] = texts
    else:
        question["max_chars"] = _whole(
            item.get("max_chars"),
            loc,
            f"{path}.max_chars",
            1,
            MAX_ANSWER_CHARS,
            DEFAULT_ANSWER_CHARS,
        )
    return question


def parse_questionnaire(text: str, source: str = "<questionnaire>") -> dict[str, Any]:
    """The validated snapshot of a consent and questionnaire YAML (raises TaxonomyError)."""
    data, loc = _parse(text, source)
    if not isinstance(data, dict):
        raise TaxonomyError(source, 1, "(file)", "must be a mapping (consent, after_document, …)")
    _check_unknown(data, TOP_FIELDS, loc, "")
    snapshot: dict[str, Any] = {
        "consent": _text(
            data.get("consent"), loc, "consent", required=False, limit=MAX_CONSENT_CHARS
        ),
        "consent_button": _text(
            data.get("consent_button"),
            loc,
            "consent_button",
            required=False,
            default="I agree",
            limit=MAX_OPTION_CHARS,
        ),
    }
    for stage in STAGES:
        raw = data.get(stage)
        if raw is None:
            snapshot[stage] = []
            continue
        if not isinstance(raw, list):
            raise loc.fail(stage, "must be a list of questions")
        if len(raw) > MAX_QUESTIONS:
            raise loc.fail(stage, f"has more than {MAX_QUESTIONS} questions")
        seen: set[str] = set()
        snapshot[stage] = [_question(q, f"{stage}[{i}]", loc, seen) for i, q in enumerate(raw)]
    if not snapshot["consent"] and not any(snapshot[s] for s in STAGES):
        raise TaxonomyError(source, 1, "(file)", "has no consent text and no questions")
    return snapshot


def consent_hash(text: str) -> str:
    """SHA-256 of the consent text a worker agreed to (stored with their answer)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_answers(questions: list[dict[str, Any]], form: Any) -> dict[str, str]:
    """The answers in ``form`` (a mapping of question id to submitted text), checked.

    Raises :class:`InvalidInput` naming the first question answered wrongly; unanswered
    optional questions are left out.
    """
    answers: dict[str, str] = {}
    for question in questions:
        raw = (form.get(question["id"]) or "").strip()
        label = f"“{question['prompt'][:80]}”"
        if not raw:
            if question["required"]:
                raise translatable(N_("please answer %(label)s"), label=label)
            continue
        if question["type"] == "likert":
            # the points as the form sends them ("²".isdigit() is true, int("²") fails)
            if raw not in {str(point) for point in range(1, question["scale"] + 1)}:
                raise translatable(
                    N_("%(label)s: choose a point from 1 to %(scale)s"),
                    label=label,
                    scale=question["scale"],
                )
        elif question["type"] == "choice":
            if raw not in question["options"]:
                raise translatable(N_("%(label)s: choose one of the options given"), label=label)
        else:
            if len(raw) > question["max_chars"]:
                raise translatable(
                    N_("%(label)s: the answer is longer than %(most)s characters"),
                    label=label,
                    most=question["max_chars"],
                )
            problem = text_problem(raw)
            if problem:
                raise InvalidInput(f"{label}: the answer {problem}")
        answers[question["id"]] = raw
    return answers
