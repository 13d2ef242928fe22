"""CSV fields made safe to open in a spreadsheet (OWASP's CSV-injection rule), shared by the
csv module path and the Postgres-formatted path so that both stay byte-identical.

A text field starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return would be read as
a formula by Excel, LibreOffice or Google Sheets; it gets a leading ``'``. Only the CSV export
does this: JSONL and SNaC keep the raw values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"


def spreadsheet_safe(value: Any) -> Any:
    """``value`` with ``'`` in front when it is text that a spreadsheet would run."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return ESCAPE + value
    return value


def safe_row(values: Iterable[Any]) -> list[Any]:
    return [spreadsheet_safe(v) for v in values]
