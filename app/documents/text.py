"""Checks and normalisation of untrusted text before it reaches the database."""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def storable(value: str) -> bool:
    """Whether both backends can store ``value`` (no NUL, no unpaired surrogate)."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_problem(value: str, *, allow: str = "\t\n") -> str | None:
    """What makes ``value`` unfit to store or export, or None: NUL, an unpaired surrogate,
    a control character other than those in ``allow`` (a lone CR splits CSV rows)."""
    if "\x00" in value:
        return "contains a NUL character"
    if not storable(value):
        return "contains an unpaired surrogate (\\ud800-\\udfff escape)"
    bad = _CONTROL.search(value.translate(_strip(allow)))
    if bad:
        return f"contains the control character U+{ord(bad.group()):04X}"
    return None


def _strip(chars: str) -> dict[int, None]:
    return dict.fromkeys(map(ord, chars))


def normalise_newlines(text: str) -> str:
    """CR LF and lone CR become LF (a lone CR breaks CSV readers of the export)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
