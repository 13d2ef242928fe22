"""Checks and normalisation of untrusted text before it reaches the database."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from typing import Any

MAX_JSON_DEPTH = 10
MAX_JSON_INT = 2**63 - 1


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
    a control character other than those in ``allow`` (a lone CR splits CSV rows).
    One regular-expression scan (a character class, no backtracking)."""
    bad = _unfit(allow).search(value)
    if bad is None:
        return None
    char = bad.group()
    if char == "\x00":
        return "contains a NUL character"
    if "\ud800" <= char <= "\udfff":
        return "contains an unpaired surrogate (\\ud800-\\udfff escape)"
    return f"contains the control character U+{ord(char):04X}"


def identifier_problem(value: str) -> str | None:
    """What makes ``value`` unfit as an identifier (a worker ID), or None: what
    :func:`text_problem` refuses with no control character allowed, and the invisible
    characters that make two IDs look alike or reorder what is shown around them: format
    characters (U+200E/U+200F marks, U+202A-U+202E and U+2066-U+2069 bidi controls, U+FEFF,
    zero-widths: Unicode category Cf) and the line and paragraph separators U+2028/U+2029."""
    problem = text_problem(value, allow="")
    if problem:
        return problem
    for char in value:
        if unicodedata.category(char) in ("Cf", "Zl", "Zp"):
            return f"contains the invisible or direction character U+{ord(char):04X}"
    return None


@functools.cache
def _unfit(allow: str) -> re.Pattern[str]:
    """A character class of NUL, surrogates and control characters, less ``allow``."""
    controls = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in allow]
    return re.compile("[" + "".join(re.escape(c) for c in controls) + "\ud800-\udfff]")


def normalise_newlines(text: str) -> str:
    """CR LF and lone CR become LF (a lone CR breaks CSV readers of the export)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def json_problem(value: Any) -> str | None:
    """What makes a parsed JSON value (document metadata) unfit to store, or None: text with
    NUL, surrogates or control characters (tab and newlines allowed), a number that is not
    finite or beyond 64 bits, nesting deeper than MAX_JSON_DEPTH. Iterative: no recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"is nested deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return "has a key that is not text"
                problem = text_problem(key, allow="\t\n\r")
                if problem:
                    return f"has a key that {problem}"
                stack.append((inner, depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)
        elif isinstance(item, str):
            problem = text_problem(item, allow="\t\n\r")
            if problem:
                return f"has text that {problem}"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) > MAX_JSON_INT:
                return "has a number beyond 64 bits"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "has a number that is not finite (NaN or Infinity)"
        else:
            return f"has a value that is not JSON ({type(item).__name__})"
    return None


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 document``, ``2 documents``, ``1 entity``, ``0 entities``: a number and its noun
    (the CLI's lines and the import jobs' dashboard messages)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
