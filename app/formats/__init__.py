"""Every file format in and out, one module per format, registered here by name.

A reader has ``parse(data, problem)`` (JSON formats; ``looks_like(data)`` for ``--format
auto``) or ``parse_text(text, problem)``; a writer has ``export(session, study)`` yielding
text chunks. A new format is one new module added to ``READERS`` and/or ``WRITERS``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlalchemy.orm import Session

from app.documents.segmenting import regroup
from app.errors import InvalidInput
from app.formats import csv, falte, jsonl, paragraphs, snac
from app.formats.records import DocumentInput, GoldSpan, Problem, parse_json
from app.models import Study

READERS: dict[str, ModuleType] = {m.NAME: m for m in (falte, paragraphs, snac, jsonl)}
WRITERS: dict[str, ModuleType] = {m.NAME: m for m in (csv, jsonl, snac)}
IMPORT_FORMATS = ("auto", *READERS)
EXPORT_FORMATS = tuple(WRITERS)

__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "READERS",
    "WRITERS",
    "DocumentInput",
    "GoldSpan",
    "detect_format",
    "iter_export",
    "parse_documents",
]


def detect_format(path: Path, data: Any) -> str:
    """Guess the format from the file name and the shape of its first document."""
    if path.suffix == ".jsonl":
        return "jsonl"
    if isinstance(data, dict) and data:
        for name in ("paragraphs", "falte", "snac"):
            if READERS[name].looks_like(data):
                return name
    raise InvalidInput(f"{path}: cannot tell the format; pass --format falte|paragraphs|snac|jsonl")


def parse_documents(
    path: str | Path,
    fmt: str = "auto",
    *,
    sentences_per_segment: int | None = None,
    gold: bool = False,
    text: str | None = None,
) -> list[DocumentInput]:
    """Read a document file (or ``text`` standing for its content) into documents."""
    path = Path(path)
    problem = Problem(str(path))
    if fmt not in IMPORT_FORMATS:
        raise problem(f"unknown format {fmt!r} (use {', '.join(IMPORT_FORMATS)})")
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise problem(f"cannot read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise problem("is not UTF-8 text") from None
    data: Any = None
    if fmt != "jsonl" and not (fmt == "auto" and path.suffix == ".jsonl"):
        data = parse_json(text, problem)
    if fmt == "auto":
        fmt = detect_format(path, data)
    if gold and fmt != "snac":
        raise problem("--gold needs a snac-format file (errors with spans and votes)")
    if gold and sentences_per_segment:
        raise problem("--gold cannot be combined with --sentences-per-segment")
    reader = READERS[fmt]
    documents = reader.parse_text(text, problem) if fmt == "jsonl" else reader.parse(data, problem)
    if not documents:
        raise problem("contains no documents")
    seen: set[str] = set()
    for document in documents:
        if document.external_id in seen:
            raise problem("appears twice in the file", document.external_id)
        seen.add(document.external_id)
        if sentences_per_segment:
            document.segments = regroup(document.segments, sentences_per_segment)
            document.entity_clusters = None
        if not gold:
            document.gold = []
    return documents


def iter_export(session: Session, study: Study, fmt: str) -> Iterator[str]:
    """Text chunks of the study's annotations in ``fmt`` (one of ``EXPORT_FORMATS``)."""
    if fmt not in WRITERS:
        raise ValueError(f"unknown export format {fmt!r}")
    yield from WRITERS[fmt].export(session, study)
