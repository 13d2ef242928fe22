"""A JSON document written an item at a time: the exports whose format is one
JSON array or object (thresh, snac, labelstudio, booookscore) hold one document's entry at a
time, never the whole file, and still write exactly the text of ``json.dumps(whole,
ensure_ascii=False, indent=1) + "\\n"`` (tests/test_json_stream.py proves it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

CHUNK_CHARS = 64 * 1024  # chunks handed on are about this long (a download's writes)


def _nested(value: Any) -> str:
    """``value`` as it reads one level inside a top-level array or object (``indent=1``):
    JSON text holds no raw newline inside a string, so every newline starts a line."""
    return json.dumps(value, ensure_ascii=False, indent=1).replace("\n", "\n ")


def array(items: Iterable[Any]) -> Iterator[str]:
    """The text of ``json.dumps(list(items), ensure_ascii=False, indent=1) + "\\n"``."""
    return _chunked(_array(items))


def obj(pairs: Iterable[tuple[str, Any]]) -> Iterator[str]:
    """The text of ``json.dumps(dict(pairs), ensure_ascii=False, indent=1) + "\\n"`` (keys
    are strings, each once)."""
    return _chunked(_object(pairs))


def _array(items: Iterable[Any]) -> Iterator[str]:
    first = True
    for item in items:
        yield ("[\n " if first else ",\n ") + _nested(item)
        first = False
    yield "[]\n" if first else "\n]\n"


def _object(pairs: Iterable[tuple[str, Any]]) -> Iterator[str]:
    first = True
    for key, value in pairs:
        yield ("{\n " if first else ",\n ") + json.dumps(key, ensure_ascii=False) + ": "
        yield _nested(value)
        first = False
    yield "{}\n" if first else "\n}\n"


def _chunked(parts: Iterable[str]) -> Iterator[str]:
    """The same text in chunks of about :data:`CHUNK_CHARS` (one part may be longer)."""
    pending: list[str] = []
    size = 0
    for part in parts:
        pending.append(part)
        size += len(part)
        if size >= CHUNK_CHARS:
            yield "".join(pending)
            pending, size = [], 0
    if pending:
        yield "".join(pending)
