"""Reading document files (CONTRACT formats falte, paragraphs, jsonl, snac) into plain records.

Parsing is separate from storing: these functions touch no database, and every problem is
reported as one :class:`InvalidInput` message naming the file, document and segment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.errors import InvalidInput
from app.segmenting import regroup
from app.text import normalise_newlines, storable

FORMATS = ("auto", "falte", "paragraphs", "snac", "jsonl")
MAX_SEGMENT_CHARS = 20_000
MAX_SEGMENTS = 2_000
MAX_ID_CHARS = 300


@dataclass
class GoldSpan:
    """A reference error from a SNaC-format file: text, category, votes, antecedent texts."""

    segment: int
    text: str
    category: str
    votes: int
    antecedents: list[str] = field(default_factory=list)


@dataclass
class DocumentInput:
    """One parsed document, ready to store."""

    external_id: str
    segments: list[str]
    meta: dict[str, Any] = field(default_factory=dict)
    gold: list[GoldSpan] = field(default_factory=list)
    entity_clusters: list[list[tuple[int, int, str]]] | None = None

    @property
    def source(self) -> str:
        """A coarse source label (e.g. ``book_175b`` from ``book_175b13``) for charts."""
        if self.meta.get("source"):
            return str(self.meta["source"])
        return self.external_id.rstrip("0123456789_-") or self.external_id


class _Problem:
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


def _segment_text(value: Any, problem: _Problem, doc: str, index: Any) -> str:
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


def _document_id(value: Any, problem: _Problem) -> str:
    doc = str(value).strip() if isinstance(value, str | int) else ""
    if not doc:
        raise problem(f"document id {value!r} must be non-empty text")
    if len(doc) > MAX_ID_CHARS:
        raise problem(f"document id is longer than {MAX_ID_CHARS} characters", doc[:40])
    if not storable(doc):
        raise problem(f"document id {doc!r} contains a NUL character or unpaired surrogate")
    return doc


def _segment_list(values: Any, problem: _Problem, doc: str) -> list[str]:
    if not isinstance(values, list) or not values:
        raise problem("must have a non-empty list of segments", doc)
    if len(values) > MAX_SEGMENTS:
        raise problem(f"has more than {MAX_SEGMENTS} segments", doc)
    return [_segment_text(v, problem, doc, i) for i, v in enumerate(values)]


def _parse_falte(data: Any, problem: _Problem) -> list[DocumentInput]:
    from app.entities import strip_entity_markup

    if not isinstance(data, dict):
        raise problem('falte format must be {"doc-id": {"sentences": [...]}}')
    documents = []
    for raw_id, body in data.items():
        doc = _document_id(raw_id, problem)
        if not isinstance(body, dict) or "sentences" not in body:
            raise problem('must be an object with "sentences"', doc)
        raw_segments = _segment_list(body["sentences"], problem, doc)
        stripped = [strip_entity_markup(s) for s in raw_segments]
        segments = [_segment_text(text, problem, doc, i) for i, (text, _) in enumerate(stripped)]
        clusters = [marks for _, marks in stripped]
        meta = {k: v for k, v in body.items() if k != "sentences"}
        documents.append(
            DocumentInput(doc, segments, meta, entity_clusters=clusters if any(clusters) else None)
        )
    return documents


def _parse_paragraphs(data: Any, problem: _Problem) -> list[DocumentInput]:
    if not isinstance(data, dict):
        raise problem('paragraphs format must be {"doc-id": ["segment", ...]}')
    return [
        DocumentInput(doc, _segment_list(body, problem, doc))
        for doc, body in ((_document_id(k, problem), v) for k, v in data.items())
    ]


def _parse_gold_errors(errors: Any, problem: _Problem, doc: str, index: int) -> list[GoldSpan]:
    if errors is None:
        return []
    if not isinstance(errors, list):
        raise problem('"errors" must be a list', doc, index)
    spans = []
    for error in errors:
        if not isinstance(error, dict):
            raise problem("each error must be an object", doc, index)
        span, category = error.get("span"), error.get("error_type")
        votes = error.get("votes", 1)
        if not isinstance(span, str):
            # An empty span is kept (SNaC's release has one); it is stored as unlocated.
            raise problem('an error has no "span" text', doc, index)
        if not isinstance(category, str) or not category:
            raise problem(f'error {span[:40]!r} has no "error_type"', doc, index)
        if not isinstance(votes, int) or isinstance(votes, bool) or votes < 1:
            raise problem(f'error {span[:40]!r} has bad "votes" {votes!r}', doc, index)
        antecedents = error.get("antecedants", error.get("antecedents", [])) or []
        if not isinstance(antecedents, list) or not all(isinstance(a, str) for a in antecedents):
            raise problem(f'error {span[:40]!r} has bad "antecedants"', doc, index)
        spans.append(GoldSpan(index, span, category, votes, list(antecedents)))
    return spans


def _parse_snac(data: Any, problem: _Problem) -> list[DocumentInput]:
    if not isinstance(data, dict):
        raise problem('snac format must be {"doc-id": {"0": {"text": ..., "errors": [...]}}}')
    documents = []
    for raw_id, body in data.items():
        doc = _document_id(raw_id, problem)
        if not isinstance(body, dict) or not body:
            raise problem('must be an object of segments {"0": {"text": ...}}', doc)
        try:
            indexed = sorted((int(k), v) for k, v in body.items())
        except (TypeError, ValueError):
            raise problem("segment keys must be integers as strings", doc) from None
        if [i for i, _ in indexed] != list(range(len(indexed))):
            raise problem("segment keys must run 0, 1, 2, ... without gaps", doc)
        segments, gold = [], []
        for index, seg in indexed:
            if not isinstance(seg, dict):
                raise problem('must be an object with "text"', doc, index)
            segments.append(_segment_text(seg.get("text"), problem, doc, index))
            gold.extend(_parse_gold_errors(seg.get("errors"), problem, doc, index))
        documents.append(DocumentInput(doc, segments, gold=gold))
    return documents


def _parse_jsonl(text: str, problem: _Problem) -> list[DocumentInput]:
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{problem.source}:{number}: invalid JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise InvalidInput(f"{problem.source}:{number}: each line must be a JSON object")
        doc = _document_id(record.get("id"), problem)
        meta = record.get("meta") or {}
        if not isinstance(meta, dict):
            raise problem('"meta" must be an object', doc)
        documents.append(DocumentInput(doc, _segment_list(record.get("segments"), problem, doc),
                                       meta))
    return documents


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


def detect_format(path: Path, data: Any) -> str:
    """Guess the format from the file name and the shape of its first document."""
    if path.suffix == ".jsonl":
        return "jsonl"
    if isinstance(data, dict) and data:
        first = next(iter(data.values()))
        if isinstance(first, list):
            return "paragraphs"
        if isinstance(first, dict) and "sentences" in first:
            return "falte"
        if isinstance(first, dict) and all(str(k).isdigit() for k in first):
            return "snac"
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
    problem = _Problem(str(path))
    if fmt not in FORMATS:
        raise problem(f"unknown format {fmt!r} (use {', '.join(FORMATS)})")
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise problem(f"cannot read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise problem("is not UTF-8 text") from None
    data: Any = None
    if fmt != "jsonl" and not (fmt == "auto" and path.suffix == ".jsonl"):
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        except _DuplicateKey as exc:
            raise problem(f"key {exc.args[0]!r} appears twice in one JSON object "
                          "(a document id or segment key used twice)") from None
    if fmt == "auto":
        fmt = detect_format(path, data)
    if gold and fmt != "snac":
        raise problem("--gold needs a snac-format file (errors with spans and votes)")
    if gold and sentences_per_segment:
        raise problem("--gold cannot be combined with --sentences-per-segment")
    parsers = {"falte": _parse_falte, "paragraphs": _parse_paragraphs, "snac": _parse_snac}
    documents = _parse_jsonl(text, problem) if fmt == "jsonl" else parsers[fmt](data, problem)
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
