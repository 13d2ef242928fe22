"""Big document files read an entry at a time, whatever their format or way in (the command,
an upload's job, ``--format auto``): ijson parses the file incrementally and the documents
come out in batches, each prepared and stored before the next is read, so an import holds
one batch, never the whole file (a JSON file read whole takes 25-80 times its size in
memory: a 31 MB file of ten million empty objects took 870 MB).

* A JSON **array** (Thresh, Label Studio) is read an element at a time, a JSON **object**
  (SNaC, FALTE, paragraphs, BooookScore) a key and its value at a time, JSON Lines a line at
  a time; each entry goes through its format's own reader, and each batch through the
  checks every reader shares (:func:`app.formats._finish`, a document id seen in an earlier
  batch included). Read as ``json.loads`` reads: a key twice in one object, NaN or Infinity
  are refused.
* ``--format auto`` looks at the first entry only (the formats' ``looks_like``).
* Entries by several raters of one item (MQM's ``metadata.rater``) are merged as a whole
  file's are (:func:`app.formats.thresh._merged`): a first pass notes where each item's
  entries start and end (a digest per rater entry), the second holds an item's entries only
  until its last one, so memory grows with how far apart one item's entries lie, not with
  the file.
* A batch holds at most :data:`BATCH_DOCUMENTS` documents or about :data:`BATCH_MARKS`
  marks (annotations, gold errors, suggestions): a document of a panel of ten raters holds
  two hundred.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections import deque
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import IO, Any

from app.errors import InvalidInput
from app.formats import jsonl, labelstudio, thresh
from app.formats.records import DocumentInput, Problem

STREAM_BYTES = 4 * 2**20  # files this big or bigger are read an entry at a time
BATCH_DOCUMENTS = 500
BATCH_MARKS = 20_000
ARRAYS = (thresh.NAME, labelstudio.NAME)  # the formats whose file is a JSON array

Opener = Callable[[], IO[bytes]]


def streams(size: int, fmt: str, name: str, minimum: int | None = None) -> bool:
    """Whether a file of ``size`` bytes is read an entry at a time: a JSON or JSON Lines file
    (not a zip or a folder's files) of at least ``minimum`` bytes (:data:`STREAM_BYTES`)."""
    if fmt == "brat" or name.endswith(".zip"):
        return False
    return size >= (STREAM_BYTES if minimum is None else minimum)


_REPEATED = threading.local()  # keys set twice in an object built on this thread


class _Objects(dict):
    """The objects ijson builds, noting a key set twice in one (ijson's C builder cannot
    raise from here): checked after each entry, as ``parse_json`` refuses. A class of the
    module's, so the documents that keep such objects (their metadata) can be spilled."""

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self:
            _REPEATED.keys = [*getattr(_REPEATED, "keys", []), key]
        super().__setitem__(key, value)


def top(opener: Opener, problem: Problem) -> str:
    """``[`` or ``{``: what the file's JSON value is (refused otherwise)."""
    with opener() as handle:
        while chunk := handle.read(4096):
            stripped = chunk.lstrip()
            if stripped:
                if stripped[:1] in (b"[", b"{"):
                    return stripped[:1].decode()
                raise InvalidInput(f"{problem.source}: invalid JSON: not an array or an object")
    raise problem("contains no documents")


def entries(opener: Opener, problem: Problem) -> Iterator[Any]:
    """The file's entries: an array's elements, or an object's ``(key, value)`` pairs."""
    import ijson

    kind = top(opener, problem)
    _REPEATED.keys = []
    try:
        with opener() as handle:
            options = {"use_float": True, "map_type": _Objects}
            found = (
                ijson.items(handle, "item", **options)
                if kind == "["
                else ijson.kvitems(handle, "", **options)
            )
            for item in found:
                repeated = getattr(_REPEATED, "keys", [])
                if repeated:
                    raise InvalidInput(
                        f"{problem.source}: key {repeated[0]!r} appears twice in one JSON "
                        "object (a document id or segment key used twice)"
                    )
                yield item
    except UnicodeDecodeError:
        raise problem("is not UTF-8 text") from None
    except ijson.JSONError as exc:
        detail = exc.args[0] if exc.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        lines = str(detail).strip().splitlines() or ["the file ends too early"]
        if "UTF8" in lines[0]:
            raise problem("is not UTF-8 text") from None
        raise InvalidInput(f"{problem.source}: invalid JSON: {lines[0]}") from None
    except OSError as exc:
        raise problem(f"cannot read: {exc.strerror}") from None


def first_entry(opener: Opener, problem: Problem) -> Any:
    """The file's first entry as a one-entry array or object (what ``looks_like`` reads)."""
    kind = top(opener, problem)
    found = next(entries(opener, problem), None)
    if found is None:
        return [] if kind == "[" else {}
    return [found] if kind == "[" else dict([found])


def _lines(opener: Opener, problem: Problem) -> Iterator[tuple[int, str]]:
    try:
        with opener() as raw, io.TextIOWrapper(raw, encoding="utf-8", newline=None) as text:
            yield from enumerate(text, start=1)
    except UnicodeDecodeError:
        raise problem("is not UTF-8 text") from None
    except OSError as exc:
        raise problem(f"cannot read: {exc.strerror}") from None


def _digest(entry: dict[str, Any]) -> bytes:
    return hashlib.sha256(thresh._same_item(entry).encode()).digest()


def _thresh_documents(
    opener: Opener, problem: Problem, per_segment: int | None
) -> Iterator[DocumentInput]:
    """A Thresh file's documents in order, several raters' entries of one item merged."""
    ends: dict[bytes, int] = {}  # an item of raters' entries -> the index of its last entry
    for n, entry in enumerate(entries(opener, problem)):
        if isinstance(entry, dict) and thresh._rater(entry):
            ends[_digest(entry)] = n
    waiting: deque[list[Any]] = deque()  # [done, documents, entries] in first-entry order
    open_items: dict[bytes, list[Any]] = {}
    for n, entry in enumerate(entries(opener, problem)):
        document = thresh._entry(entry, n, problem, per_segment)
        key = _digest(entry) if isinstance(entry, dict) and thresh._rater(entry) else None
        if key is None:
            waiting.append([True, [document], [entry]])
        else:
            item = open_items.get(key)
            if item is None:
                item = open_items[key] = [False, [], []]
                waiting.append(item)
            item[1].append(document)
            item[2].append(entry)
            if ends[key] == n:
                item[0] = True
                del open_items[key]
        while waiting and waiting[0][0]:
            _, documents, raw = waiting.popleft()
            yield from thresh._merged(documents, raw) if len(documents) > 1 else documents


def documents(
    opener: Opener, problem: Problem, reader: ModuleType, per_segment: int | None
) -> Iterator[DocumentInput]:
    """The file's documents as ``reader`` (a format's module) reads them, one entry at a
    time (unchecked: the caller runs the readers' shared checks on each batch)."""
    fmt = reader.NAME
    if fmt == jsonl.NAME:
        yield from jsonl.parse_lines(_lines(opener, problem), problem)
        return
    whole = getattr(reader, "WHOLE_TEXT", False)

    def parse(data: Any) -> list[DocumentInput]:
        return reader.parse(data, problem, per_segment) if whole else reader.parse(data, problem)

    kind = top(opener, problem)
    if (kind == "[") != (fmt in ARRAYS):
        if fmt == labelstudio.NAME:  # one task as an object: small, read as the whole file
            yield from parse(dict(entries(opener, problem)))
            return
        yield from parse([] if kind == "[" else {})  # the reader's own refusal of the shape
        return
    if fmt == thresh.NAME:
        yield from _thresh_documents(opener, problem, per_segment)
    elif fmt == labelstudio.NAME:
        for n, task in enumerate(entries(opener, problem)):
            yield labelstudio._task(task, n, problem, per_segment)
    else:
        for key, value in entries(opener, problem):
            yield from parse({key: value})


def batches(
    found: Iterator[DocumentInput], *, batch_documents: int | None = None
) -> Iterator[list[DocumentInput]]:
    """``found`` in lists of at most :data:`BATCH_DOCUMENTS` documents or about
    :data:`BATCH_MARKS` marks."""
    limit = batch_documents or BATCH_DOCUMENTS
    pending: list[DocumentInput] = []
    marks = 0
    for document in found:
        pending.append(document)
        marks += len(document.work) + len(document.gold) + len(document.suggestions)
        if len(pending) >= limit or marks >= BATCH_MARKS:
            yield pending
            pending, marks = [], 0
    if pending:
        yield pending
