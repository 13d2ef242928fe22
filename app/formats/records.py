"""What every document reader shares: the checks of untrusted input and their messages.

Parsing is separate from storing: readers touch no database, and every problem is reported
as one :class:`InvalidInput` message naming the file, document and segment.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from app.documents.records import (
    MAX_ID_CHARS,
    DocumentInput,
    GoldSpan,
    ImportedSpan,
    ImportedSuggestion,
)
from app.documents.text import json_problem, normalise_newlines, storable, text_problem
from app.errors import InvalidInput

MAX_SEGMENT_CHARS = 20_000
MAX_SEGMENTS = 2_000
# A whole text (a Thresh target, a Label Studio task's text, a brat .txt) before it is cut
# into segments: checked before any splitting (a long novel is ~1M characters).
MAX_WHOLE_TEXT_CHARS = 1_000_000


class Problem:
    """Builds messages of the form ``FILE: document "id": segment 3: what is wrong``."""

    def __init__(self, source: str):
        self.source = source

    def __call__(self, message: str, doc: str | None = None, segment: Any = None) -> InvalidInput:
        where = [self.source]
        if doc is not None:
            where.append(f"document {doc!r}")
        if segment is not None:
            where.append(f"segment {segment}")
        return InvalidInput(": ".join(where + [message]))


def segment_text(value: Any, problem: Problem, doc: str, index: Any) -> str:
    if not isinstance(value, str):
        raise problem(f"must be text, not {type(value).__name__}", doc, index)
    if not value.strip():
        raise problem("is empty", doc, index)
    if len(value) > MAX_SEGMENT_CHARS:
        raise problem(f"is longer than {MAX_SEGMENT_CHARS} characters", doc, index)
    if "\x00" in value:
        raise problem("contains a NUL character", doc, index)
    if not storable(value):
        raise problem("contains an unpaired surrogate (\\ud800-\\udfff escape)", doc, index)
    return normalise_newlines(value)


def document_id(value: Any, problem: Problem) -> str:
    doc = str(value).strip() if isinstance(value, str | int) else ""
    if not doc:
        raise problem(f"document id {value!r} must be non-empty text")
    if len(doc) > MAX_ID_CHARS:
        raise problem(f"document id is longer than {MAX_ID_CHARS} characters", doc[:40])
    if not storable(doc):
        raise problem(f"document id {doc!r} contains a NUL character or unpaired surrogate")
    bad = text_problem(doc, allow="")
    if bad:
        raise problem(f"document id {doc!r} {bad}")
    return doc


def keyed_documents(data: Any, problem: Problem, shape: str) -> Iterator[tuple[str, Any]]:
    """Each (checked document ID, body) of a file keyed by document ID (``{"doc-id": body}``,
    the falte and SNaC layouts); ``shape`` words the layout when ``data`` is not an object."""
    if not isinstance(data, dict):
        raise problem(shape)
    for raw_id, body in data.items():
        yield document_id(raw_id, problem), body


def document_meta(value: Any, problem: Problem, doc: str) -> dict[str, Any]:
    """A document's metadata: a JSON object of storable text, finite numbers, shallow."""
    if not isinstance(value, dict):
        raise problem('"meta" must be an object', doc)
    bad = json_problem(value)
    if bad:
        raise problem(f"metadata {bad}", doc)
    return value


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing repeated keys, which ``json`` would silently drop."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, problem: Problem, line: int | None = None) -> Any:
    """JSON text parsed, or one clear message: syntax (with its line), a repeated key, NaN or
    Infinity, nesting too deep for the parser, a number too long to convert."""
    where = f"{problem.source}:{line}" if line is not None else problem.source
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        raise InvalidInput(f"{problem.source}:{at}: invalid JSON: {exc.msg}") from None
    except _DuplicateKey as exc:
        raise InvalidInput(
            f"{where}: key {exc.args[0]!r} appears twice in one JSON object "
            "(a document id or segment key used twice)"
        ) from None
    except RecursionError:
        raise InvalidInput(f"{where}: JSON is nested too deeply") from None
    except ValueError as exc:  # NaN/Infinity, or an integer of thousands of digits
        raise InvalidInput(f"{where}: invalid JSON: {exc}") from None


def segment_list(values: Any, problem: Problem, doc: str) -> list[str]:
    if not isinstance(values, list) or not values:
        raise problem("must have a non-empty list of segments", doc)
    if len(values) > MAX_SEGMENTS:
        raise problem(f"has more than {MAX_SEGMENTS} segments", doc)
    return [segment_text(v, problem, doc, i) for i, v in enumerate(values)]


def group_marks(spans: list[ImportedSpan]) -> list[ImportedSpan]:
    """One worker's spans with the same place, other span, comment and attributes are one
    mark, its categories in order (files that write a mark's categories one by one: brat,
    Thresh); a study without ``multi_label`` splits them again on import."""
    marks: dict[tuple[Any, ...], ImportedSpan] = {}
    out = []
    for span in spans:
        key = (
            span.worker_id,
            span.segment,
            span.start,
            span.end,
            span.paired,
            span.paired_end_segment,
            span.comment,
            json.dumps(span.attributes, sort_keys=True),
        )
        if key in marks and span.category not in (marks[key].category, *marks[key].also):
            marks[key].also += (span.category, *span.also)
            continue
        marks.setdefault(key, span)  # the same category twice stays two marks
        out.append(span)
    return out


__all__ = [
    "group_marks",
    "DocumentInput",
    "GoldSpan",
    "ImportedSpan",
    "ImportedSuggestion",
    "Problem",
    "document_id",
    "document_meta",
    "parse_json",
    "segment_list",
    "segment_text",
]
