"""Numbers from untrusted input (a worker's JSON body or form, a researcher's form, query
string, JSON body or file): a whole number or a finite number in a range, or
:class:`InvalidInput` naming the field.

Python's own parsers take more than a person means and fail in ways no caller catches:
``int("²")`` raises ValueError though ``"²".isdigit()`` is true, ``int("١")`` is 1, ``int``
of more than 4,300 digits raises ValueError, ``float(10**400)`` and ``math.isfinite(10**400)``
raise OverflowError, ``float("nan")``, ``float("inf")`` and JSON's ``1e400`` are accepted,
and an integer past a 32- or 64-bit column is refused by the database driver with an error
of its own (a 500). So the text a number may come as is ASCII digits with an optional sign,
and its value is checked against its range before anything else reads it.
"""

from __future__ import annotations

import math
from typing import Any

from app.errors import InvalidInput

MAX_ID = 2**31 - 1  # the largest INTEGER primary key (and 32-bit column)
MAX_DIGITS = 19  # digits past which no whole number fits a 64-bit column


def spelt_whole(text: str) -> int | None:
    """The whole number ``text`` spells in ASCII digits (an optional minus sign, spaces
    around), or None: another script's digits, more digits than a 64-bit column holds,
    anything else."""
    text = text.strip()
    unsigned = text[1:] if text[:1] == "-" else text
    if not unsigned.isascii() or not unsigned.isdigit():
        return None
    if len(unsigned.lstrip("0")) > MAX_DIGITS:
        return None
    return int(text)


def whole_number(value: Any, field: str, low: int, high: int) -> int:
    """``value`` (a JSON integer, or text of ASCII digits) as a whole number from ``low`` to
    ``high``; else InvalidInput naming ``field`` and the range."""
    if isinstance(value, str):
        value = spelt_whole(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be a whole number from {low} to {high}")
    return value


def finite_number(value: Any, field: str, low: float, high: float = math.inf) -> float:
    """``value`` (a JSON number, or text such as ``0.5`` or ``3``) as a finite number from
    ``low`` to ``high``; NaN, the infinities and integers too large for a float are refused,
    with a message naming ``field``."""
    span = f"from {low:g}" + (f" to {high:g}" if math.isfinite(high) else "")
    refusal = InvalidInput(f"{field} must be a finite number {span}")
    if isinstance(value, bool):
        raise refusal
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii() or len(text) > 40:  # no float has more to say
            raise refusal
        try:
            value = float(text)
        except ValueError:
            raise refusal from None
    if not isinstance(value, int | float):
        raise refusal
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        raise refusal from None
    if not math.isfinite(number) or not low <= number <= high:
        raise refusal
    return number
