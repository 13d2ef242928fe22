"""Sending a worker back to their platform when there is no work for them.

Three reasons, each with an optional completion code per study
(``study.settings["return_codes"]``, set with ``marginalia study settings --return-code``):

* ``no_places``: every document has all the annotators it needs, or none is left for this
  worker (Prolific's "no places" return);
* ``unavailable``: the study is paused, closed or archived;
* ``declined``: the worker did not consent.

On Prolific a code sends the browser to ``https://app.prolific.com/submissions/complete?cc=CODE``
(give that code the action you want in Prolific, e.g. "Request return"); without one the page
asks the worker to return the study on Prolific. MTurk workers are asked to return the HIT.
Generic studies show the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from app.documents.language import N_
from app.errors import InvalidInput
from app.models import Study

REASONS = ("no_places", "unavailable", "declined")
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc="
CODE_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class PlatformReturn:
    """Where a worker with nothing to do goes: a URL, a code to show, and a sentence (in
    English, marked for the interface catalogue: the page translates it)."""

    url: str | None
    code: str | None
    advice: str


def return_codes(study: Study) -> dict[str, str]:
    return dict((study.settings or {}).get("return_codes") or {})


def set_return_code(study: Study, reason: str, code: str | None) -> dict[str, str]:
    """Set (or with an empty code, clear) the study's code for ``reason``; returns all codes."""
    if reason not in REASONS:
        raise InvalidInput(f"return reason {reason!r} must be one of {', '.join(REASONS)}")
    codes = return_codes(study)
    code = (code or "").strip()
    if code:
        if not CODE_PATTERN.match(code):
            raise InvalidInput(f"return code {code[:70]!r} must be 1 to 64 letters, digits, _ or -")
        codes[reason] = code
    else:
        codes.pop(reason, None)
    settings: dict[str, Any] = dict(study.settings or {})
    settings["return_codes"] = codes
    study.settings = settings
    return codes


def platform_return(study: Study, platform: str, reason: str) -> PlatformReturn:
    """How a worker who arrived from ``platform`` leaves for ``reason``."""
    code = return_codes(study).get(reason)
    if platform == "prolific":
        if code:
            return PlatformReturn(
                PROLIFIC_COMPLETE + quote(code, safe=""), code, N_("Back to Prolific")
            )
        return PlatformReturn(
            None, None, N_("Please return this study on Prolific (the “Return” button there).")
        )
    if platform == "mturk":
        return PlatformReturn(
            None, None, N_("Please return this HIT on Mechanical Turk; nothing was recorded.")
        )
    if code:
        return PlatformReturn(None, code, N_("Give this code on the task page."))
    return PlatformReturn(None, None, N_("You may close this page."))
