"""Big Thresh files read an entry at a time: ijson parses the file incrementally
and the documents come out in batches, each stored before the next is read
(``marginalia import``), so an import holds one batch, never the whole file (a 1M-annotation
Thresh file took ~76× its size in memory read whole).

Each entry goes through the same reader as a whole file (:func:`app.formats.thresh._entry`)
and each batch through the same checks (:func:`app.formats._finish`, a document id seen in an
earlier batch included). Read as ``json.loads`` reads: a key twice in one object, NaN or
Infinity are refused. Entries by several raters of one item (MQM's ``metadata.rater``) are
merged as a whole file's are: from the first such entry on, the rest of the file is one batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.errors import InvalidInput
from app.formats import thresh
from app.formats.records import DocumentInput, Problem

STREAM_BYTES = 4 * 2**20  # files this big or bigger are read an entry at a time
BATCH_DOCUMENTS = 500


def _objects(repeated: list[str]) -> type[dict]:
    """The objects ijson builds, noting in ``repeated`` a key set twice in one (ijson's C
    builder cannot raise from here): checked after each entry, as ``parse_json`` refuses."""

    class Objects(dict):
        def __setitem__(self, key: str, value: Any) -> None:
            if key in self:
                repeated.append(key)
            super().__setitem__(key, value)

    return Objects


def streams(path: Path, fmt: str, minimum: int | None = None) -> bool:
    """Whether ``path`` is read an entry at a time: a Thresh file (``--format thresh``) of at
    least ``minimum`` bytes (:data:`STREAM_BYTES`) that starts as a JSON array."""
    if fmt != thresh.NAME or path.suffix in (".zip", ".jsonl") or not path.is_file():
        return False
    try:
        if path.stat().st_size < (STREAM_BYTES if minimum is None else minimum):
            return False
        with path.open("rb") as handle:
            return handle.read(64).lstrip()[:1] == b"["
    except OSError:
        return False


def _items(path: Path, problem: Problem) -> Iterator[Any]:
    import ijson

    repeated: list[str] = []
    try:
        with path.open("rb") as handle:
            for item in ijson.items(handle, "item", use_float=True, map_type=_objects(repeated)):
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


def thresh_batches(
    path: Path, problem: Problem, sentences_per_segment: int | None, batch: int | None = None
) -> Iterator[list[DocumentInput]]:
    """The file's documents, ``batch`` (:data:`BATCH_DOCUMENTS`) at a time, as
    :func:`app.formats.thresh.parse` reads them (unchecked: the caller runs the readers'
    shared checks on each batch)."""
    batch = batch or BATCH_DOCUMENTS
    pending: list[DocumentInput] = []
    raters: list[tuple[DocumentInput, Any]] | None = None  # from the first rater's entry on
    for n, entry in enumerate(_items(path, problem)):
        document = thresh._entry(entry, n, problem, sentences_per_segment)
        if raters is None and isinstance(entry, dict) and thresh._rater(entry):
            raters = []
        if raters is not None:
            raters.append((document, entry))
            continue
        pending.append(document)
        if len(pending) >= batch:
            yield pending
            pending = []
    if raters:
        pending += thresh._merged([d for d, _ in raters], [e for _, e in raters])
    if pending:
        yield pending
