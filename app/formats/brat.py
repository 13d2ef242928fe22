"""brat standoff, both ways: a folder (or zip) of ``DOC.txt`` + ``DOC.ann`` and
``annotation.conf``.

Written: ``DOC.txt`` (the whole text) with an empty ``DOC.ann`` at the top for every
document, and ``WORKER/DOC.txt`` + ``WORKER/DOC.ann`` per submitted worker (an empty
``.ann``: submitted with no mark): one ``T`` line per mark (type = its first category; its
further categories binary attributes ``also_<category>``; marks alike in all but category
share the line), never two ``T`` lines on the same offsets where it can be helped (strict
readers refuse them: a mark's other span reuses the line on its offsets, else gets its own
flagged ``pair_only``), an ``R`` line ``paired Arg1:earlier Arg2:later`` for paired spans
and ``related Arg1:marked Arg2:other`` for relation categories, ``A`` lines
``A1<TAB>attribute T1 value`` (the value percent-encoded), ``#`` ``AnnotatorNotes`` lines
for comments; ``annotation.conf`` (attributes declared with their values) and
``visual.conf`` from the taxonomy. Names are percent-encoded ids (``~`` too), unless that
name could not stand for this id alone (:class:`Names`): then a slug and a hash of the id
(``x-y~1f2e3d4c5b6a7980``; ``~`` never appears in a percent-encoded name, so the two kinds
cannot collide), listed with their ids in ``marginalia_names.json``. Read: the same (the names file first, else percent-decoding); a folder's name is
the worker (``import-1`` for files at the top; an empty ``.ann`` in a worker's folder is a
submission with no mark), a ``related`` relation keeps its direction, any other pairs its
two spans (the earlier with the later); in a collection whose ``annotation.conf`` does not
declare ``pair_only`` (another tool's) a span that is only a relation's earlier half is not
a mark; a binary attribute
with no counterpart is not read.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Collection, Iterator
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from sqlalchemy.orm import Session

from app.formats.annotated import Mark, annotated_documents, grouped
from app.formats.records import DocumentInput, ImportedSpan, Problem, document_id, group_marks
from app.formats.wholetext import CROSSING, Layout, place, split
from app.models import Study
from app.rules.work import Work

NAME = "brat"
MIMETYPE, DOWNLOAD_AS, TITLE = "application/zip", "brat.zip", "brat (zip)"
READS_FILES = True
WRITES_FILES = True
RELATION = "paired"
RELATED = "related"  # a relation category: Arg1 the marked span, Arg2 the other, any order
ALSO = "also_"  # binary attribute also_<category>: a further category of the mark
PAIR_ONLY = "pair_only"  # binary attribute: this T line is only a mark's other span
TOP_WORKER = "import-1"
SPAN_LINE = re.compile(r"^(T\d+)\t(\S+) (\d+) (\d+)(?:\t(.*))?$")
RELATION_LINE = re.compile(r"^(R\d+)\t(\S+) Arg1:(T\d+) Arg2:(T\d+)\s*$")
ATTRIBUTE_LINE = re.compile(r"^[AM]\d+\t(\S+) (T\d+|[ERN]\d+)(?: (\S+))?\s*$")
NOTE_LINE = re.compile(r"^#\d+\tAnnotatorNotes (T\d+)\t(.*)$")


NAMES_FILE = "marginalia_names.json"
CONF_FILES = ("annotation.conf", "visual.conf")
MAX_NAME_BYTES = 100
HASHED = "~"  # only in hashed names: percent-encoding writes a "~" of an id as %7E
# names no folder can have on Windows (any extension), or that it would read as another
WINDOWS_DEVICES = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\.|$)", re.IGNORECASE)


def file_name(value: str) -> str:
    """The file or folder name for an id on its own: percent-encoded (reversible, no path
    characters, no ``~``), or :func:`hashed_name` when that name is unsafe or long (``..``,
    ``.``, empty, over :data:`MAX_NAME_BYTES`, a Windows device name, or ending in a dot or
    a space, which Windows drops)."""
    encoded = quote(value, safe=" ,;=+@()[]{}!'-_").replace(HASHED, "%7E")
    if (
        encoded not in ("", ".", "..")
        and len(encoded) <= MAX_NAME_BYTES
        and not WINDOWS_DEVICES.match(encoded)
        and not encoded.endswith((".", " "))
    ):
        return encoded
    return hashed_name(value)


def hashed_name(value: str) -> str:
    """A slug of the id and 16 hex digits of its SHA-256: ``x-y~1f2e3d4c5b6a7980``."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", value)[:40].strip("-") or "id"
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{slug}{HASHED}{digest}"


class Names:
    """The names of one export's documents and workers, none equal to another of its kind or
    to a file of the export's top folder, case aside (macOS and Windows fold case): an id
    whose :func:`file_name` is taken (another id's name in another case, a worker named
    ``annotation.conf`` or ``doc.txt``) gets its :func:`hashed_name`. Every hashed name is
    kept for :data:`NAMES_FILE`, which the import reads first."""

    def __init__(self) -> None:
        self.given: dict[tuple[str, str], str] = {}
        self.taken: dict[str, set[str]] = {"documents": set(), "workers": set()}
        self.hashed: dict[str, dict[str, str]] = {"documents": {}, "workers": {}}

    def __call__(self, value: str, kind: str) -> str:
        if (kind, value) in self.given:
            return self.given[(kind, value)]
        name = file_name(value)
        if name.casefold() in self.taken[kind] or (kind == "workers" and self._at_top(name)):
            name = hashed_name(value)
        self.taken[kind].add(name.casefold())
        if HASHED in name:
            self.hashed[kind][name] = value
        self.given[(kind, value)] = name
        return name

    @staticmethod
    def _at_top(folder: str) -> bool:
        """A worker's folder named as a file of the top folder: the conf files, the names
        file, a document's ``.txt`` or ``.ann``."""
        lowered = folder.casefold()
        return lowered in (*CONF_FILES, NAMES_FILE) or lowered.endswith((".txt", ".ann"))


def _name_of(name: str, names: dict[str, str]) -> str:
    """The id a file or folder name stands for: from the names file, else percent-decoded."""
    return names[name] if name in names else unquote(name)


def attribute_value(value: Any) -> str:
    """An attribute's value as one brat token (percent-encoded: no spaces)."""
    return quote(str(value), safe=",;=+@()[]{}!'~-_.")


def annotation_conf(taxonomy: dict[str, Any]) -> str:
    types = "\n".join(c["id"] for c in taxonomy["categories"])
    declared: dict[str, list[str]] = {}
    for category in taxonomy["categories"]:
        for a in category.get("attributes", ()):
            values = a["values"] if a["kind"] == "choice" else range(a["min"], a["max"] + 1)
            declared.setdefault(a["id"], [attribute_value(v) for v in values])
    attributes = "".join(
        f"{key}\tArg:<ENTITY>, Value:{'|'.join(values)}\n" for key, values in declared.items()
    )
    attributes += f"{PAIR_ONLY}\tArg:<ENTITY>\n" + "".join(
        f"{ALSO}{c['id']}\tArg:<ENTITY>\n" for c in taxonomy["categories"]
    )
    return (
        f"[entities]\n{types}\n\n[relations]\n{RELATION}\tArg1:<ENTITY>, Arg2:<ENTITY>\n"
        f"{RELATED}\tArg1:<ENTITY>, Arg2:<ENTITY>\n"
        "<OVERLAP>\tArg1:<ENTITY>, Arg2:<ENTITY>, <OVL-TYPE>:<ANY>\n\n[events]\n\n"
        f"[attributes]\n{attributes}"
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


def ann_text(marks: list[Mark], layout: Layout, related: Collection[str] = ()) -> str:
    """The ``.ann`` lines of one worker's marks on one document (``related``: the relation
    categories, whose link goes from the marked span to the other, in any order).

    One ``T`` line per mark (strict readers such as pybrat refuse two ``T`` lines on the
    same offsets): a mark's further categories are binary attributes ``also_<category>``,
    marks alike in all but category share one line, and a paired or related span reuses
    the ``T`` line already on its offsets, else gets one flagged ``pair_only``.
    """
    lines: list[str] = []
    count: Counter[str] = Counter()

    def add(kind: str, body: str) -> str:
        count[kind] += 1
        lines.append(f"{kind}{count[kind]}\t{body}")
        return f"{kind}{count[kind]}"

    def span(a: int, b: int, text: str, category: str) -> str:
        return add("T", f"{category} {a} {b}\t{' '.join(text.splitlines())}")

    at: dict[tuple[int, int], str] = {}  # offsets -> the T line there
    alike: dict[tuple[Any, ...], tuple[str, list[str]]] = {}  # one line, its categories
    written: list[tuple[str, Mark]] = []
    for rows in grouped(marks):
        first = rows[0]
        a, b = (
            layout.to_whole(first.segment, first.start),
            layout.to_whole(first.segment, first.end),
        )
        paired = first.paired_range(layout)
        key = (
            a,
            b,
            paired and paired[:2],
            first.comment,
            json.dumps(first.attributes, sort_keys=True),
        )
        if key in alike:
            alike[key][1].extend(row.category for row in rows)
            continue
        tag = span(a, b, first.text, first.category)
        at.setdefault((a, b), tag)
        alike[key] = (tag, [row.category for row in rows])
        written.append((tag, first))
    for tag, categories in alike.values():
        for category in dict.fromkeys(categories[1:]):
            add("A", f"{ALSO}{category} {tag}")
    for tag, mark in written:
        paired = mark.paired_range(layout)
        if paired is not None:
            other = at.get(paired[:2])
            if other is None:
                other = at[paired[:2]] = span(*paired, mark.category)
                add("A", f"{PAIR_ONLY} {other}")
            if mark.category in related:
                add("R", f"{RELATED} Arg1:{tag} Arg2:{other}")
            else:
                add("R", f"{RELATION} Arg1:{other} Arg2:{tag}")
        for key, value in (mark.attributes or {}).items():
            add("A", f"{key} {tag} {attribute_value(value)}")
        if mark.comment:
            add("#", f"AnnotatorNotes {tag}\t{' '.join(mark.comment.splitlines())}")
    return "".join(line + "\n" for line in lines)


def export_files(
    session: Session, study: Study, work: Work | None = None
) -> Iterator[tuple[str, bytes]]:
    yield CONF_FILES[0], annotation_conf(study.taxonomy).encode("utf-8")
    yield CONF_FILES[1], visual_conf(study.taxonomy).encode("utf-8")
    related = {c["id"] for c in study.taxonomy["categories"] if c["kind"] == "relation"}
    named = Names()
    for document in annotated_documents(session, study, work):
        layout = document.layout
        name = named(document.external_id, "documents")
        text = layout.text.encode("utf-8")
        yield f"{name}.txt", text
        yield f"{name}.ann", b""
        for worker, marks in document.workers.items():
            folder = named(worker, "workers")
            yield f"{folder}/{name}.txt", text
            yield f"{folder}/{name}.ann", ann_text(marks, layout, related).encode("utf-8")
    if named.hashed["documents"] or named.hashed["workers"]:
        listed = json.dumps(named.hashed, ensure_ascii=False, indent=1) + "\n"
        yield NAMES_FILE, listed.encode()


def _spans(
    ann: str,
    layout: Layout,
    mapper: Any,
    problem: Problem,
    where: str,
    worker: str,
    flagged: bool = False,
) -> list[ImportedSpan]:
    """One ``.ann`` file's marks. ``flagged``: the collection declares ``pair_only`` (ours),
    so a ``T`` line without the flag is a mark, whatever relation points at it; in a file of
    another tool a span that is only a relation's earlier half is not a mark."""
    spans: dict[str, tuple[int, int, int, str, str]] = {}
    ends: dict[str, tuple[int, str]] = {}  # tag -> (end segment, where it is)
    relations: list[tuple[str, str]] = []
    linked: dict[str, str] = {}  # a relation category's marked span -> its other span
    notes: dict[str, str] = {}
    attributes: dict[str, dict[str, str]] = {}
    also: dict[str, list[str]] = {}
    pair_only: set[str] = set()
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
            if match.group(2) == RELATED:
                linked[match.group(3)] = match.group(4)
            else:
                relations.append((match.group(4), match.group(3)))
        elif line.startswith(("A", "M")):
            match = ATTRIBUTE_LINE.match(line)
            if match is None:
                raise problem(f"{at}: not an attribute line `A1<TAB>Name T1 Value`")
            name, target, value = match.groups()
            if value is not None:
                attributes.setdefault(target, {})[name] = unquote(value)
            elif name.startswith(ALSO):
                also.setdefault(target, []).append(name[len(ALSO) :])
            elif name == PAIR_ONLY:
                pair_only.add(target)
            # any other binary attribute (no value) has no counterpart
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
    for marked, other in linked.items():
        if marked not in spans or other not in spans or marked in ordered:
            raise problem(f"{where}: a {RELATED} relation names a span that is not there")
        ordered[marked] = other
    if any(tag.startswith("T") and tag not in spans for tag in attributes):
        raise problem(f"{where}: an attribute names a span that is not there")
    pairs, result = ordered, []
    for tag, (segment, start, end, text, category) in spans.items():
        guessed = not flagged and not pair_only and tag in pairs.values() and tag not in pairs
        if tag in pair_only or guessed:
            continue  # only the other half of a pair (it may run across segment breaks)
        if ends[tag][0] != segment:
            raise problem(f"{ends[tag][1]} {CROSSING}")
        earlier = pairs.get(tag)
        paired = spans[earlier][:4] if earlier else None
        to = ends[earlier][0] if earlier and ends[earlier][0] != spans[earlier][0] else None
        note, given = notes.get(tag, ""), attributes.get(tag) or None
        more = {"also": tuple(also.get(tag, ())), "attributes": given}
        result.append(
            ImportedSpan(worker, segment, start, end, text, category, paired, note, to, **more)
        )
    return group_marks(result)  # one T line per category of a mark


def declares_pair_only(conf: str | None) -> bool:
    """Whether an ``annotation.conf`` declares our ``pair_only`` attribute: a collection we
    wrote, whose every span that is only another's earlier half carries the flag."""
    return conf is not None and any(
        line.split("\t", 1)[0].strip() == PAIR_ONLY for line in conf.splitlines()
    )


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
    flagged = declares_pair_only(files.get(CONF_FILES[0]))
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
        ann_name = name[: -len(".txt")] + ".ann"
        ann = files.get(ann_name, "")
        spans = _spans(ann, layout, mapper, problem, ann_name, worker, flagged)
        if not spans and ann_name in files and folder != ".":
            documents[doc].empty_workers.append(worker)  # a worker's empty .ann: no errors
        documents[doc].work += spans
    return list(documents.values())
