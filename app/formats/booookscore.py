"""BooookScore's human annotation files (Chang et al., ICLR 2024), both ways:
``{"BOOK": {"summary": TEXT, "singles": [...], "relations": [...]}, ...}``.

Read: each summary is a document cut into segments at blank lines (its exact text kept,
:mod:`app.formats.wholetext`); a single ``{"span", "labels", "questions"}`` becomes one
mark whose categories are its labels (``multi_label`` taxonomies; a type name reads as a
category id with its spaces as underscores: "entity omission" is ``entity_omission``) and
whose comment is its question (no label: category ``unlabelled``); a relation ``{"span_a", "span_b", "shared_labels",
"shared_questions"}`` likewise, ``span_a`` the marked span and ``span_b`` its other span (a
``relation`` category: any order, any paragraph). A span is placed by the one locate rule
(:mod:`app.documents.locating`) in the whole summary. The worker: an item's ``annotator``,
else the entry's only ``annotators`` name, else the file's name (one worker per file, as
the release has it); ``annotators`` also lists who submitted the summary with no mark,
and without it the file's one worker submitted every summary of the file.
Written: the same shape per document that counts, summaries as imported, one single or
relation per mark (a multi-label mark's categories as its label list), ``annotators`` on
every entry and ``annotator`` on every item when a summary has several workers, and
``attributes`` on an item whose mark has some (ours; read back). A
document's source (the report's per-source figures) is the file's name, e.g.
``summary-gpt4-4096-hier``: the system that wrote the summaries.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from sqlalchemy.orm import Session

from app.documents.locating import locate
from app.formats import json_stream
from app.formats.annotated import Mark, annotated_documents, grouped
from app.formats.records import DocumentInput, ImportedSpan, Problem, document_id
from app.formats.wholetext import Layout, Place, place, split
from app.models import Study
from app.rules.work import Work

NAME = "booookscore"
MIMETYPE, DOWNLOAD_AS, TITLE = (
    "application/json; charset=utf-8",
    "booookscore.json",
    "BooookScore JSON",
)
WHOLE_TEXT = True
EXTENSION = "json"
# A mark whose label list is empty (the release has two such relations: a question, no
# type) has this category; it is written back as an empty list (our rule, not the paper's).
UNLABELLED = "unlabelled"


def looks_like(data: Any) -> bool:
    """A mapping of books to ``{"summary", "singles"|"relations"}``."""
    first = next(iter(data.values()), None) if isinstance(data, dict) else None
    return (
        isinstance(first, dict)
        and "summary" in first
        and ("singles" in first or "relations" in first)
    )


def category_id(name: str) -> str:
    """A BooookScore type name as a category id ("entity omission" → ``entity_omission``)."""
    return "_".join(name.split())


def type_name(category: str) -> str:
    """A category id as a BooookScore type name (``entity_omission`` → "entity omission")."""
    return category.replace("_", " ")


def _labels(value: Any, problem: Problem, doc: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise problem(f"{where}: labels must be a list of type names", doc)
    return list(dict.fromkeys(category_id(v) for v in value if v.strip())) or [UNLABELLED]


def _question(value: Any, problem: Problem, doc: str, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise problem(f"{where}: the question must be text", doc)
    return value


def _place(layout: Layout, needle: Any, problem: Problem, doc: str, where: str) -> Place:
    if not isinstance(needle, str) or not needle.strip():
        raise problem(f"{where}: the span must be non-empty text", doc)
    found = locate(layout.text, needle)
    located = place(layout, found.start, found.end) if found.found else None  # type: ignore[arg-type]
    if located is None:
        raise problem(f"{where}: span {needle[:60]!r} is not in the summary", doc)
    return located


def _worker(item: dict, default: str | None, problem: Problem, doc: str, where: str) -> str:
    name = item.get("annotator", default)
    if not isinstance(name, str) or not name.strip():
        raise problem(f'{where}: "annotator" must name the worker (the entry has several)', doc)
    return name.strip()


def _entry(
    book: Any, entry: Any, problem: Problem, fallback: str, per_segment: int | None
) -> DocumentInput:
    doc = document_id(book, problem)
    if not isinstance(entry, dict) or not isinstance(entry.get("summary"), str):
        raise problem('must be an object with a "summary" text', doc)
    layout, _mapper = split(entry["summary"], problem, doc, per_segment)
    named = entry.get("annotators")
    if named is not None and (
        not isinstance(named, list) or not all(isinstance(n, str) and n.strip() for n in named)
    ):
        raise problem('"annotators" must be a list of worker names', doc)
    workers = [n.strip() for n in named] if named is not None else [fallback]
    default = workers[0] if len(workers) == 1 else None
    work: list[ImportedSpan] = []
    for key in ("singles", "relations"):
        items = entry.get(key) or []
        if not isinstance(items, list):
            raise problem(f'"{key}" must be a list', doc)
        for n, item in enumerate(items):
            where = f"{key}[{n}]"
            if not isinstance(item, dict):
                raise problem(f"{where} must be an object", doc)
            worker = _worker(item, default, problem, doc, where)
            if named is not None and worker not in workers:
                raise problem(f'{where}: annotator {worker!r} is not in "annotators"', doc)
            if worker not in workers:
                workers.append(worker)
            single = key == "singles"
            labels = _labels(item.get("labels" if single else "shared_labels"), problem, doc, where)
            question = _question(
                item.get("questions" if single else "shared_questions"), problem, doc, where
            )
            main = _place(layout, item.get("span" if single else "span_a"), problem, doc, where)
            if main[4] != main[0]:
                raise problem(f"{where}: the span runs across a blank line", doc)
            other = None if single else _place(layout, item.get("span_b"), problem, doc, where)
            crossing = other[4] if other is not None and other[4] != other[0] else None
            work.append(
                ImportedSpan(
                    worker,
                    *main[:4],
                    labels[0],
                    other[:4] if other is not None else None,
                    question,
                    crossing,
                    tuple(labels[1:]),
                    item.get("attributes"),  # ours: the marks' attributes, when declared
                )
            )
    marked = {span.worker_id for span in work}
    meta = {**layout.meta(), "source": fallback}  # the file: its system, for the report
    return DocumentInput(
        doc, layout.segments, meta, work=work, empty_workers=[w for w in workers if w not in marked]
    )


def parse(
    data: Any, problem: Problem, sentences_per_segment: int | None = None
) -> list[DocumentInput]:
    if not isinstance(data, dict):
        raise problem('booookscore format must be {"book": {"summary": ..., "singles": [...]}}')
    fallback = PurePath(problem.source).stem or "booookscore"
    return [
        _entry(book, entry, problem, fallback, sentences_per_segment)
        for book, entry in data.items()
    ]


def _item(rows: list[Mark], layout: Layout, worker: str | None) -> tuple[str, dict[str, Any]]:
    """One mark (its rows, one per category) as a single or a relation."""
    first = rows[0]
    labels = [type_name(row.category) for row in rows if row.category != UNLABELLED]
    a, b = layout.to_whole(first.segment, first.start), layout.to_whole(first.segment, first.end)
    other = first.paired_range(layout)
    item: dict[str, Any]
    if other is None:
        item = {"span": layout.text[a:b], "questions": first.comment, "labels": labels}
    else:
        item = {
            "span_a": layout.text[a:b],
            "span_b": other[2],
            "shared_questions": first.comment,
            "shared_labels": labels,
        }
    if first.attributes:
        item["attributes"] = first.attributes
    if worker is not None:
        item["annotator"] = worker
    return ("singles" if other is None else "relations"), item


def entries(
    session: Session, study: Study, work: Work | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The BooookScore entries of every document that counts, one at a time."""
    for document in annotated_documents(session, study, work):
        layout = document.layout
        entry: dict[str, Any] = {"summary": layout.text, "singles": [], "relations": []}
        several = len(document.workers) > 1
        for worker, marks in document.workers.items():
            for rows in grouped(marks):
                key, item = _item(rows, layout, worker if several else None)
                entry[key].append(item)
        entry["annotators"] = list(document.workers)
        yield document.external_id, entry


def export(session: Session, study: Study, work: Work | None = None) -> Iterator[str]:
    """One JSON object, written a book at a time (:mod:`app.formats.json_stream`)."""
    yield from json_stream.obj(entries(session, study, work))
