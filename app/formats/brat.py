"""brat standoff, both ways: a folder (or zip) of ``DOC.txt`` + ``DOC.ann`` and
``annotation.conf``.

Written: ``DOC.txt`` (the whole text) with an empty ``DOC.ann`` at the top for every
document, and ``WORKER/DOC.txt`` + ``WORKER/DOC.ann`` per submitted worker: ``T`` lines for
spans (type = category), an ``R`` line ``paired Arg1:earlier Arg2:later`` for paired spans,
``#`` ``AnnotatorNotes`` lines for comments; ``annotation.conf`` and ``visual.conf`` from the
taxonomy. Names are percent-encoded ids, unless that name would leave its folder, be
empty or be long (``..``, ``.``, over 100 bytes): then a slug and a hash of the id
(``x-y~1f2e3d4c5b6a7980``; ``~`` never appears in a percent-encoded name, so the two kinds
cannot collide), listed with their ids in ``marginalia_names.json`` (issue 26 row 5). Read:
the same (the names file first, else percent-decoding); a folder's name is the worker
(``import-1`` for files at the top), any relation pairs its two spans.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from sqlalchemy.orm import Session

from app.formats.annotated import Mark, annotated_documents
from app.formats.records import DocumentInput, ImportedSpan, Problem, document_id
from app.formats.wholetext import CROSSING, Layout, place, split
from app.models import Study
from app.quality.work import Work

NAME = "brat"
READS_FILES = True
WRITES_FILES = True
RELATION = "paired"
TOP_WORKER = "import-1"
SPAN_LINE = re.compile(r"^(T\d+)\t(\S+) (\d+) (\d+)(?:\t(.*))?$")
RELATION_LINE = re.compile(r"^(R\d+)\t(\S+) Arg1:(T\d+) Arg2:(T\d+)\s*$")
NOTE_LINE = re.compile(r"^#\d+\tAnnotatorNotes (T\d+)\t(.*)$")


NAMES_FILE = "marginalia_names.json"
MAX_NAME_BYTES = 100


def file_name(value: str) -> str:
    """The file or folder name for an id: percent-encoded (reversible, no path characters),
    or a slug and a hash when that name is unsafe or long (the module's docstring)."""
    encoded = quote(value, safe=" ,;=+@()[]{}!'-_")
    if encoded not in ("", ".", "..") and len(encoded) <= MAX_NAME_BYTES:
        return encoded
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", value)[:40].strip("-") or "id"
    return f"{slug}~{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def _name_of(name: str, names: dict[str, str]) -> str:
    """The id a file or folder name stands for: from the names file, else percent-decoded."""
    return names[name] if name in names else unquote(name)


def annotation_conf(taxonomy: dict[str, Any]) -> str:
    types = "\n".join(c["id"] for c in taxonomy["categories"])
    return (
        f"[entities]\n{types}\n\n[relations]\n{RELATION}\tArg1:<ENTITY>, Arg2:<ENTITY>\n"
        "<OVERLAP>\tArg1:<ENTITY>, Arg2:<ENTITY>, <OVL-TYPE>:<ANY>\n\n[events]\n\n[attributes]\n"
    )


def visual_conf(taxonomy: dict[str, Any]) -> str:
    def clean(text: str) -> str:
        return " ".join(text.replace("|", "/").split())

    labels = "\n".join(
        f"{c['id']} | {clean(c.get('label') or c['id'])} | {c['id']}"
        for c in taxonomy["categories"]
    )
    drawing = "\n".join(
        f"{c['id']}\tbgColor:{c['color']}" for c in taxonomy["categories"] if c.get("color")
    )
    return f"[labels]\n{labels}\n\n[drawing]\n{drawing}\n"


def ann_text(marks: list[Mark], layout: Layout) -> str:
    """The ``.ann`` lines of one worker's marks on one document."""
    lines: list[str] = []
    number = 0

    def span(a: int, b: int, text: str, category: str) -> str:
        nonlocal number
        number += 1
        lines.append(f"T{number}\t{category} {a} {b}\t{' '.join(text.splitlines())}")
        return f"T{number}"

    relations = notes = 0
    for mark in marks:
        a, b = layout.to_whole(mark.segment, mark.start), layout.to_whole(mark.segment, mark.end)
        tag = span(a, b, mark.text, mark.category)
        paired = mark.paired_range(layout)
        if paired is not None:
            earlier = span(*paired, mark.category)
            relations += 1
            lines.append(f"R{relations}\t{RELATION} Arg1:{earlier} Arg2:{tag}")
        if mark.comment:
            notes += 1
            lines.append(f"#{notes}\tAnnotatorNotes {tag}\t{' '.join(mark.comment.splitlines())}")
    return "".join(line + "\n" for line in lines)


def export_files(
    session: Session, study: Study, work: Work | None = None
) -> Iterator[tuple[str, bytes]]:
    yield "annotation.conf", annotation_conf(study.taxonomy).encode("utf-8")
    yield "visual.conf", visual_conf(study.taxonomy).encode("utf-8")
    hashed: dict[str, dict[str, str]] = {"documents": {}, "workers": {}}

    def named(value: str, kind: str) -> str:
        name = file_name(value)
        if "~" in name:
            hashed[kind][name] = value
        return name

    for document in annotated_documents(session, study, work):
        layout = document.layout
        name = named(document.external_id, "documents")
        text = layout.text.encode("utf-8")
        yield f"{name}.txt", text
        yield f"{name}.ann", b""
        for worker, marks in document.workers.items():
            folder = named(worker, "workers")
            yield f"{folder}/{name}.txt", text
            yield f"{folder}/{name}.ann", ann_text(marks, layout).encode("utf-8")
    if hashed["documents"] or hashed["workers"]:
        yield NAMES_FILE, (json.dumps(hashed, ensure_ascii=False, indent=1) + "\n").encode()


def _spans(
    ann: str, layout: Layout, mapper: Any, problem: Problem, where: str, worker: str
) -> list[ImportedSpan]:
    spans: dict[str, tuple[int, int, int, str, str]] = {}
    ends: dict[str, tuple[int, str]] = {}  # tag -> (end segment, where it is)
    relations: list[tuple[str, str]] = []
    notes: dict[str, str] = {}
    for number, line in enumerate(ann.splitlines(), start=1):
        if not line.strip():
            continue
        at = f"{where}:{number}"
        if line.startswith("T"):
            match = SPAN_LINE.match(line)
            if match is None:
                raise problem(
                    f"{at}: not a span line `T1<TAB>Type START END<TAB>text` "
                    "(discontinuous spans are not supported)"
                )
            tag, category, start, end = (
                match.group(1),
                match.group(2),
                int(match.group(3)),
                int(match.group(4)),
            )
            located = place(layout, mapper(start), mapper(end))
            if located is None:
                raise problem(f"{at}: span {start}-{end} is outside the text")
            spans[tag] = (*located[:4], category)
            ends[tag] = (located[4], f"{at}: span {start}-{end}")
        elif line.startswith("R"):
            match = RELATION_LINE.match(line)
            if match is None:
                raise problem(f"{at}: not a relation line `R1<TAB>Type Arg1:T1 Arg2:T2`")
            relations.append((match.group(4), match.group(3)))
        elif line.startswith("#"):
            match = NOTE_LINE.match(line)
            if match is not None:
                notes[match.group(1)] = match.group(2)
    ordered: dict[str, str] = {}
    for second, first in relations:
        if second not in spans or first not in spans:
            raise problem(f"{where}: a relation names a span that is not there")
        earlier, later = sorted((first, second), key=lambda t: spans[t][:3])
        if later in ordered:
            raise problem(f"{where}: span {later} is the later half of two relations")
        ordered[later] = earlier
    pairs, result = ordered, []
    for tag, (segment, start, end, text, category) in spans.items():
        if tag in pairs.values() and tag not in pairs:
            continue  # only the earlier half of a pair (it may run across segment breaks)
        if ends[tag][0] != segment:
            raise problem(f"{ends[tag][1]} {CROSSING}")
        earlier = pairs.get(tag)
        paired = spans[earlier][:4] if earlier else None
        to = ends[earlier][0] if earlier and ends[earlier][0] != spans[earlier][0] else None
        note = notes.get(tag, "")
        result.append(ImportedSpan(worker, segment, start, end, text, category, paired, note, to))
    return result


def _names(text: str | None, problem: Problem) -> dict[str, dict[str, str]]:
    """The names file of an export: {"documents": {name: id}, "workers": {name: id}}."""
    empty: dict[str, dict[str, str]] = {"documents": {}, "workers": {}}
    if text is None:
        return empty
    try:
        data = json.loads(text)
    except ValueError:
        raise problem(f"{NAMES_FILE} is not JSON") from None
    if not isinstance(data, dict):
        raise problem(f"{NAMES_FILE} must be an object")
    for kind in empty:
        table = data.get(kind, {})
        if not isinstance(table, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()
        ):
            raise problem(f"{NAMES_FILE}: {kind!r} must map names to ids")
        empty[kind] = table
    return empty


def parse_files(
    files: dict[str, str], problem: Problem, sentences_per_segment: int | None = None
) -> list[DocumentInput]:
    texts = sorted(name for name in files if name.endswith(".txt"))
    documents: dict[str, DocumentInput] = {}
    layouts: dict[str, tuple[Layout, Any, str]] = {}
    names = _names(files.get(NAMES_FILE), problem)
    for name in texts:
        path = PurePosixPath(name)
        doc = document_id(_name_of(path.stem, names["documents"]), problem)
        folder = path.parent.as_posix()
        worker = _name_of(folder, names["workers"]) if folder != "." else TOP_WORKER
        if doc not in layouts:
            layout, mapper = split(files[name], problem, doc, sentences_per_segment)
            layouts[doc] = (layout, mapper, files[name])
            documents[doc] = DocumentInput(doc, layout.segments, layout.meta())
        layout, mapper, original = layouts[doc]
        if files[name] != original:
            raise problem(f"{name}: is not the same text as the other copies of {doc!r}")
        ann = files.get(name[: -len(".txt")] + ".ann", "")
        documents[doc].work += _spans(ann, layout, mapper, problem, name[:-4] + ".ann", worker)
    return list(documents.values())
