"""Every file format in and out, one module per format, registered here by name.

A reader has ``parse(data, problem)`` (JSON formats; ``looks_like(data)`` for ``--format
auto``; whole-text formats, ``WHOLE_TEXT = True``, take ``sentences_per_segment`` too),
``parse_text(text, problem)`` or, for a folder or zip of files (``READS_FILES``),
``parse_files(files, problem, sentences_per_segment)``. A writer has ``export(session,
study)`` yielding text chunks or, for several files (``WRITES_FILES``), ``export_files``
yielding ``(relative path, bytes)``, and ``MIMETYPE``, ``DOWNLOAD_AS`` (the download's
name after ``SLUG.``) and ``TITLE`` (the dashboard's link): its admin download
(:data:`DOWNLOADS`). A new format is one new module added to ``READERS`` and/or
``WRITERS``. Readers may return ``work`` (annotations in the file, kept as imported
workers) which ``--gold`` turns into gold spans instead.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from sqlalchemy.orm import Session

from app.documents.imported_work import work_from_votes
from app.documents.segmenting import regroup
from app.documents.text import text_problem
from app.errors import InvalidInput
from app.formats import (
    assignments_csv,
    assignments_jsonl,
    booookscore,
    brat,
    bundles,
    csv,
    falte,
    jsonl,
    labelstudio,
    paragraphs,
    parquet,
    snac,
    streamed,
    thresh,
)
from app.formats.records import DocumentInput, GoldSpan, Problem, parse_json
from app.formats.rows import check_columns
from app.models import Study
from app.rules.work import LAYERS, Work

MAX_SOURCE_CHARS = 100  # documents.source
READERS: dict[str, ModuleType] = {
    m.NAME: m for m in (falte, paragraphs, snac, jsonl, thresh, labelstudio, brat, booookscore)
}
WRITERS: dict[str, ModuleType] = {
    m.NAME: m
    for m in (csv, jsonl, snac, thresh, labelstudio, brat, parquet, booookscore)
    + (assignments_csv, assignments_jsonl)
}
# every export's admin download, linked from the dashboard: (media type, name after "SLUG.",
# title); Werkzeug adds "; charset=utf-8" to a text/* media type itself, not to application/*
DOWNLOADS: dict[str, tuple[str, str, str]] = {
    name: (m.MIMETYPE, m.DOWNLOAD_AS, m.TITLE) for name, m in WRITERS.items()
}
IMPORT_FORMATS = ("auto", *READERS)
TASKS_FILE = "tasks.json"  # what a folder or zip of a Label Studio export holds
EXPORT_FORMATS = tuple(WRITERS)
ASSIGNMENT_FORMATS = (assignments_csv.NAME, assignments_jsonl.NAME)  # one row per assignment
FILE_SET_FORMATS = tuple(n for n, m in WRITERS.items() if getattr(m, "WRITES_FILES", False))
GOLD_FORMATS = ("snac", *(name for name, m in READERS.items() if getattr(m, "WHOLE_TEXT", 0)))
GOLD_FORMATS += tuple(n for n, m in READERS.items() if getattr(m, "READS_FILES", False))

__all__ = [
    "ASSIGNMENT_FORMATS",
    "DOWNLOADS",
    "EXPORT_FORMATS",
    "LAYERS",
    "Work",
    "FILE_SET_FORMATS",
    "IMPORT_FORMATS",
    "READERS",
    "WRITERS",
    "DocumentInput",
    "checked_source",
    "GoldSpan",
    "detect_format",
    "as_work",
    "iter_export",
    "iter_export_files",
    "check_writer",
    "parse_documents",
    "parse_document_batches",
]


def detect_format(path: Path, data: Any) -> str:
    """Guess the format from the file name and the shape of its first document."""
    if path.suffix == ".jsonl":
        return "jsonl"
    if isinstance(data, dict) and data:
        for name in ("paragraphs", "falte", "booookscore", "snac"):
            if READERS[name].looks_like(data):
                return name
    if isinstance(data, list) and data:
        for name in ("thresh", "labelstudio"):
            if READERS[name].looks_like(data):
                return name
    raise InvalidInput(f"{path}: cannot tell the format; pass --format {'|'.join(READERS)}")


def parse_documents(
    path: str | Path,
    fmt: str = "auto",
    *,
    sentences_per_segment: int | None = None,
    gold: bool = False,
    text: str | None = None,
    archive: bytes | None = None,
    as_work: bool = False,
    source: str | None = None,
    bundle: tuple[str, dict[str, str] | None, str | None] | None = None,
) -> list[DocumentInput]:
    """Read a document file (or ``text`` / zip ``archive`` standing for its content;
    ``bundle``: a zip's or folder's files as :func:`_read_bundle` read them already).

    ``gold``: the file's annotations become gold; ``as_work``: aggregate errors (SNaC) are
    kept as imported work by vote rank; else annotations no reader keeps are counted in
    each document's ``dropped``. ``source``: every document's source (its system,
    :mod:`app.quality.compare`), over what the file says."""
    path = Path(path)
    problem = Problem(str(path))
    source = checked_source(source) if source is not None else None
    documents = _parse(
        path, problem, fmt, sentences_per_segment, gold, text, archive, as_work, bundle
    )
    if source is not None:
        for document in documents:
            document.meta["source"] = source
    return documents


def parse_document_batches(
    path: str | Path,
    fmt: str = "auto",
    *,
    sentences_per_segment: int | None = None,
    gold: bool = False,
    as_work: bool = False,
    source: str | None = None,
    stream_bytes: int | None = None,
    payload: bytes | None = None,
) -> Iterator[list[DocumentInput]]:
    """:func:`parse_documents` in batches: a big JSON or JSON Lines file (``stream_bytes``
    or more: :data:`app.formats.streamed.STREAM_BYTES`) an entry at a time, whatever its
    format (``auto`` included), each batch checked as a whole file's documents are (an id
    twice in the file across batches too); a small file, a zip or a folder as one batch.
    ``payload``: the file's bytes (an upload), ``path`` then only naming it."""
    path = Path(path)
    options: dict[str, Any] = {"sentences_per_segment": sentences_per_segment, "gold": gold}
    options.update(as_work=as_work, source=source)
    if fmt == "brat" or path.suffix == ".zip" or (payload is None and path.is_dir()):
        problem = Problem(str(path))
        _check_format(fmt, gold, problem)
        bundle = _read_bundle(path, problem, fmt, payload)
        found, _, text = bundle
        if text is None or not streamed.streams(len(text), found, TASKS_FILE, stream_bytes):
            return iter([parse_documents(path, fmt, bundle=bundle, **options)])
        data = text.encode("utf-8")  # the bundle's one JSON file, read an entry at a time
        del text, bundle
        return _batches(path, lambda: io.BytesIO(data), found, *options.values())
    on_disk = path.stat().st_size if payload is None and path.is_file() else 0
    size = len(payload) if payload is not None else on_disk  # none: refused below
    if not streamed.streams(size, fmt, path.name, stream_bytes):
        if payload is not None:
            try:
                options["text"] = payload.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInput(f"{path}: is not UTF-8 text") from None
        return iter([parse_documents(path, fmt, **options)])

    def opener() -> IO[bytes]:
        return io.BytesIO(payload) if payload is not None else path.open("rb")

    return _batches(path, opener, fmt, *options.values())


def _batches(
    path: Path,
    opener: streamed.Opener,
    fmt: str,
    per_segment: int | None,
    gold: bool,
    as_work: bool,
    source: str | None,
) -> Iterator[list[DocumentInput]]:
    problem = Problem(str(path))
    source = checked_source(source) if source is not None else None
    _check_format(fmt, gold, problem)
    if fmt == "auto":
        first = None if path.suffix == ".jsonl" else streamed.first_entry(opener, problem)
        fmt = "jsonl" if first is None else detect_format(path, first)
    whole = getattr(READERS[fmt], "WHOLE_TEXT", False)
    _check_gold(fmt, gold, whole, per_segment, problem)
    seen: set[str] = set()
    found = streamed.documents(opener, problem, READERS[fmt], per_segment)
    for documents in streamed.batches(found):
        _finish(documents, problem, None if whole else per_segment, gold, as_work, seen=seen)
        if source is not None:
            for document in documents:
                document.meta["source"] = source
        yield documents
    if not seen:
        raise problem("contains no documents")


def _check_format(fmt: str, gold: bool, problem: Problem) -> None:
    if fmt not in IMPORT_FORMATS:
        raise problem(f"unknown format {fmt!r} (use {', '.join(IMPORT_FORMATS)})")
    if gold and fmt not in ("auto", *GOLD_FORMATS):
        raise problem(f"--gold needs a file with annotations ({', '.join(GOLD_FORMATS)})")


def _check_gold(
    fmt: str, gold: bool, whole: bool, per_segment: int | None, problem: Problem
) -> None:
    if gold and fmt not in GOLD_FORMATS:
        raise problem(f"--gold needs a file with annotations ({', '.join(GOLD_FORMATS)})")
    if gold and per_segment and not whole:
        raise problem("--gold cannot be combined with --sentences-per-segment")


def checked_source(source: str) -> str:
    """A source name given for a whole file: 1 to 100 characters of storable text."""
    name = source.strip()
    problem = text_problem(name, allow="") if name else "is empty"
    if problem is None and len(name) > MAX_SOURCE_CHARS:
        problem = f"is longer than {MAX_SOURCE_CHARS} characters"
    if problem:
        raise InvalidInput(f"--source {source[:40]!r} {problem}")
    return name


def _parse(
    path: Path,
    problem: Problem,
    fmt: str,
    sentences_per_segment: int | None,
    gold: bool,
    text: str | None,
    archive: bytes | None,
    as_work: bool,
    bundle: tuple[str, dict[str, str] | None, str | None] | None = None,
) -> list[DocumentInput]:
    _check_format(fmt, gold, problem)
    if bundle is None and (archive is not None or path.suffix == ".zip" or path.is_dir()):
        bundle = _read_bundle(path, problem, fmt, archive)
    if bundle is not None:
        fmt, files, text = bundle
        if files is not None:
            documents = READERS[fmt].parse_files(files, problem, sentences_per_segment)
            return _finish(documents, problem, None, gold, as_work)
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
    reader = READERS[fmt]
    whole = getattr(reader, "WHOLE_TEXT", False)
    _check_gold(fmt, gold, whole, sentences_per_segment, problem)
    if whole:
        documents = reader.parse(data, problem, sentences_per_segment)
        return _finish(documents, problem, None, gold, as_work)
    documents = reader.parse_text(text, problem) if fmt == "jsonl" else reader.parse(data, problem)
    return _finish(documents, problem, sentences_per_segment, gold, as_work)


def _read_bundle(
    path: Path, problem: Problem, fmt: str, archive: bytes | None
) -> tuple[str, dict[str, str] | None, str | None]:
    """A zip's or folder's files (at most ``bundles.MAX_TOTAL_BYTES`` unpacked): the format
    (``auto``: Label Studio's when it holds ``tasks.json``, else brat), and the files for a
    reader of files, else the one JSON file's text."""
    files = bundles.read_files(path, problem, archive)
    if fmt == "auto":
        fmt = "labelstudio" if TASKS_FILE in files else "brat"
    if getattr(READERS[fmt], "READS_FILES", False):
        return fmt, files, None
    return fmt, None, _one_json_file(files, problem)


def _one_json_file(files: dict[str, str], problem: Problem) -> str:
    """The JSON file of a folder or zip (a Label Studio export's ``tasks.json``)."""
    if TASKS_FILE in files:
        return files[TASKS_FILE]
    found = [name for name in files if name.endswith((".json", ".jsonl"))]
    if len(found) != 1:
        raise problem(f"holds {len(found)} JSON files; expected one (or {TASKS_FILE})")
    return files[found[0]]


def _finish(
    documents: list[DocumentInput],
    problem: Problem,
    regroup_by: int | None,
    gold: bool,
    as_work: bool = False,
    *,
    seen: set[str] | None = None,
) -> list[DocumentInput]:
    """Checks every reader shares; ``--gold`` turns the file's annotations into gold,
    ``--as-work`` aggregate errors into imported work; otherwise aggregate errors are
    counted as dropped (never silently). ``seen``: the ids of the file's earlier batches
    (:func:`parse_document_batches`), which also says an empty batch is no error."""
    if not documents and seen is None:
        raise problem("contains no documents")
    seen = set() if seen is None else seen
    # a file of aggregate errors kept as work: a document without an error is a clean one
    aggregate = as_work and not gold and any(document.gold for document in documents)
    for document in documents:
        if document.external_id in seen:
            raise problem("appears twice in the file", document.external_id)
        seen.add(document.external_id)
        if regroup_by:
            document.segments = regroup(document.segments, regroup_by)
            document.entity_clusters = None
        if gold:
            document.gold = document.gold or gold_from_work(document)
            document.work = []
            document.empty_workers = []
        elif aggregate:
            work_from_votes(document)
        else:
            document.dropped += len(document.gold)
            document.gold = []
    return documents


def gold_from_work(document: DocumentInput) -> list[GoldSpan]:
    """The file's annotations as gold: one span per occurrence, ``votes`` its annotators."""
    merged: dict[tuple[Any, ...], GoldSpan] = {}
    voters: dict[tuple[Any, ...], set[str]] = {}
    for span in document.work:
        for category in (span.category, *span.also):  # a multi-label mark: gold per category
            key = (span.segment, span.start, span.end, category)
            gold = merged.setdefault(
                key, GoldSpan(span.segment, span.text, category, 0, [], (span.start, span.end))
            )
            if span.worker_id not in voters.setdefault(key, set()):
                voters[key].add(span.worker_id)
                gold.votes += 1
                if span.paired is not None:
                    gold.antecedents.append(span.paired[3])
    return list(merged.values())


def as_work(work: Work | str) -> Work:
    """A :class:`~app.rules.work.Work`, or a layer's name for that layer's defaults."""
    return Work(layer=work) if isinstance(work, str) else work


def iter_export(
    session: Session,
    study: Study,
    fmt: str,
    work: Work | str = "workers",
    extra_columns: tuple[str, ...] = (),
) -> Iterator[str]:
    """Text chunks of the study's counted work (:mod:`app.rules.work`) in ``fmt`` (a
    one-file format; the formats of several files, ``FILE_SET_FORMATS``, come from
    :func:`iter_export_files`). ``work``: the layer and filters (a layer's name: its
    defaults). ``extra_columns`` (csv and jsonl only): optional columns of
    ``rows.OPTIONAL_COLUMNS``."""
    work = as_work(work)
    if fmt not in WRITERS or fmt in FILE_SET_FORMATS:
        raise ValueError(f"{fmt!r} is not a one-file export format")
    if fmt in ASSIGNMENT_FORMATS:
        if work != Work() or extra_columns:
            raise InvalidInput(
                f"{fmt} has one row per assignment: no --layer, --columns, "
                "--include-practice or --include-in-progress"
            )
        yield from WRITERS[fmt].export(session, study)
        return
    if extra_columns:
        if fmt not in ("csv", "jsonl"):
            raise InvalidInput("extra columns are offered by the csv and jsonl exports only")
        extra_columns = check_columns(extra_columns)
        yield from WRITERS[fmt].export(session, study, work, extra_columns=extra_columns)
        return
    yield from WRITERS[fmt].export(session, study, work)


def check_writer(fmt: str) -> None:
    """InvalidInput now for what would refuse the export before its first byte (a writer's
    ``check()``: the parquet export without pyarrow), for a download that streams."""
    check = getattr(WRITERS[fmt], "check", None)
    if check is not None:
        check()


def iter_export_files(
    session: Session,
    study: Study,
    fmt: str,
    work: Work | str = "workers",
    *,
    streamed: bool = False,
) -> Iterator[tuple[str, Any]]:
    """``(relative path, content)`` of each file of the export (one file for one-file
    formats). ``streamed``: a big file's content comes as an iterator of byte chunks, to be
    read before the next file is asked for (:func:`app.formats.bundles.write_folder`,
    :func:`~app.formats.bundles.zip_stream`): the export is never held whole;
    otherwise every content is ``bytes``."""
    if fmt not in WRITERS:
        raise ValueError(f"unknown export format {fmt!r}")
    work = as_work(work)
    writer = WRITERS[fmt]
    if fmt in FILE_SET_FORMATS:
        files = writer.export_files(session, study, work)
    else:
        extension = getattr(writer, "EXTENSION", fmt)
        chunks = (c.encode("utf-8") for c in iter_export(session, study, fmt, work))
        files = iter([(f"{study.slug}.{extension}", chunks)])
    for name, body in files:
        yield name, body if streamed else bundles.whole(body)
