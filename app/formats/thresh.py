"""Thresh's JSON, both ways: ``[{"source", "target", "context"?, "edits": [...]}, ...]``.

Read: ``target`` is cut into segments (:mod:`app.formats.wholetext`); ``source`` and
``context`` are kept in ``meta["thresh"]`` (shown on the annotate page); each edit's
``output_idx`` ranges become one span (two ranges: a paired span, the earlier range being
the pair), marked by each of its ``annotators`` (or the entry's ``annotator``) or, without
them, by ``votes`` imported workers ``import-1`` ... Edits without ``output_idx`` (FRANK's sentence-level labels,
source-only edits) are kept verbatim in the metadata and written back on export.
Written: one entry per document, edits merged by (ranges, category), ``votes`` counting
the distinct workers.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from sqlalchemy.orm import Session

from app.annotation.pairing import pair_comes_first
from app.formats import json_stream
from app.formats.annotated import AnnotatedDocument, annotated_documents
from app.formats.records import DocumentInput, ImportedSpan, Problem, document_id, group_marks
from app.formats.wholetext import Layout, place, split
from app.models import Study
from app.rules.work import Work

NAME = "thresh"
MIMETYPE, DOWNLOAD_AS, TITLE = "application/json; charset=utf-8", "thresh.json", "Thresh JSON"
WHOLE_TEXT = True
KNOWN_ENTRY_KEYS = {"id", "source", "target", "context", "edits", "annotators"}
SCALAR = str | int | float
MAX_VOTES = 1000


def looks_like(data: Any) -> bool:
    """A list of objects with a ``target`` text and ``edits``."""
    first = data[0] if isinstance(data, list) and data else None
    return isinstance(first, dict) and "target" in first and "edits" in first


def _ranges(edit: dict[str, Any], size: int, problem: Problem, where: str) -> list[list[int]]:
    ranges = edit.get("output_idx") or []
    if not isinstance(ranges, list) or not all(
        isinstance(r, list)
        and len(r) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        for r in ranges
    ):
        raise problem(f'{where}: "output_idx" must be a list of [start, end] pairs')
    for start, end in ranges:
        if not 0 <= start < end <= size:
            raise problem(f"{where}: range [{start}, {end}] is outside the target text")
    if len(ranges) > 2:
        raise problem(f"{where}: has {len(ranges)} ranges; at most two (a paired span) are kept")
    return sorted(ranges)


def _workers(edit: dict[str, Any], problem: Problem, where: str, first: int) -> list[str]:
    names = edit.get("annotators", edit.get("annotator"))
    if isinstance(names, str):
        names = [names]
    if names is not None:
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise problem(f'{where}: "annotators" must be a non-empty list of names')
        return list(dict.fromkeys(n.strip() or "import" for n in names))
    votes = edit.get("votes", 1)
    if votes is None:
        votes = 1
    if not isinstance(votes, int) or isinstance(votes, bool) or not 1 <= votes <= MAX_VOTES:
        raise problem(f'{where}: bad "votes" {votes!r}')
    return [f"import-{first + k}" for k in range(1, votes + 1)]


def annotation_attributes(annotation: Any, problem: Problem, where: str) -> dict | None:
    """Thresh's ``annotation`` answers as our attributes: ``{Q: "a lot"}`` is ``{Q: "a lot"}``,
    and a question whose chosen option asks further, ``{Q: {"val": V, V: S}}`` (MQM's
    subtype and severity), is ``{Q: V, V: S}``; deeper trees are refused."""
    if annotation is None:
        return None
    if not isinstance(annotation, dict):
        raise problem(f'{where}: "annotation" must be an object')
    out: dict[str, Any] = {}
    for question, answer in annotation.items():
        if isinstance(answer, dict):
            chosen = answer.get("val")
            rest = {k: v for k, v in answer.items() if k != "val" and v is not None}
            if (
                not isinstance(chosen, str)
                or set(rest) - {chosen}
                or not all(isinstance(v, SCALAR) for v in rest.values())
            ):
                raise problem(f"{where}: annotation {question!r} is nested deeper than one answer")
            out[question] = chosen
            out.update(rest)
        elif answer is not None:
            if not isinstance(answer, SCALAR):
                raise problem(f"{where}: annotation {question!r} must be an answer")
            out[question] = answer
    return out or None


def attributes_annotation(attributes: dict[str, Any]) -> dict[str, Any]:
    """Our attributes back as Thresh's ``annotation`` (the inverse of the above)."""
    nested = {v for v in attributes.values() if isinstance(v, str) and v in attributes}
    return {
        key: {"val": value, value: attributes[value]} if value in nested else value
        for key, value in attributes.items()
        if key not in nested
    }


def _rater(entry: dict[str, Any]) -> str | None:
    metadata = entry.get("metadata")
    rater = metadata.get("rater") if isinstance(metadata, dict) else None
    return rater.strip() if isinstance(rater, str) and rater.strip() else None


def _entry(entry: Any, n: int, problem: Problem, per_segment: int | None) -> DocumentInput:
    if not isinstance(entry, dict):
        raise problem(f"entry {n} must be an object with target and edits")
    doc = document_id(entry.get("id", f"thresh-{n}"), problem)
    target = entry.get("target")
    if not isinstance(target, str):
        raise problem('"target" must be text', doc)
    edits = entry.get("edits") or []
    if not isinstance(edits, list):
        raise problem('"edits" must be a list', doc)
    layout, mapper = split(target, problem, doc, per_segment)
    kept: dict[str, Any] = {k: entry[k] for k in ("source", "context") if entry.get(k)}
    for key in ("source", "context"):
        if key in kept and not isinstance(kept[key], str):
            raise problem(f'"{key}" must be text', doc)
    extra = {k: v for k, v in entry.items() if k not in KNOWN_ENTRY_KEYS}
    work: list[ImportedSpan] = []
    unlocated: list[Any] = []
    taken: Counter[tuple[Any, ...]] = Counter()
    skipped = 0
    votes: set[str] = set()  # the workers made from "votes": vote ranks, not annotators
    for e, edit in enumerate(edits):
        where = f"edit {e}"
        if not isinstance(edit, dict):
            raise problem(f"{where} must be an object", doc)
        category = edit.get("category")
        if not isinstance(category, str) or not category:
            raise problem(f'{where} has no "category"', doc)
        ranges = _ranges(edit, len(target), Problem(f"{problem.source}: document {doc!r}"), where)
        if not ranges:
            unlocated.append(edit)
            continue
        # the marked range: the later of two, unless "marked" (ours, for relation categories,
        # whose other span may come anywhere) gives its index
        marked = (
            edit["marked"] if edit.get("marked") in (0, 1) and len(ranges) == 2 else len(ranges) - 1
        )
        spans = []
        for n, (start, end) in enumerate(ranges):
            located = place(layout, mapper(start), mapper(end))
            # only the other range of two (a pair's earlier span) may run across segments
            if located is None or (located[4] != located[0] and n == marked):
                raise problem(
                    f"{where}: range [{start}, {end}] crosses a segment boundary "
                    "(import with fewer segments: no --sentences-per-segment, or a larger N)",
                    doc,
                )
            spans.append(located)
        key = (tuple(map(tuple, ranges)), category)
        named = {"annotators", "annotator", "votes"} & set(edit)
        if not named and isinstance(entry.get("annotator"), str):  # one annotator's file
            edit = {**edit, "annotator": entry["annotator"]}
        elif not named and _rater(entry):  # MQM's entries: one per rater
            edit = {**edit, "annotator": _rater(entry)}
        workers = _workers(edit, problem, f"document {doc!r}: {where}", taken[key])
        taken[key] += len(workers)
        if not {"annotators", "annotator"} & set(edit):  # workers by vote count: vote ranks
            votes.update(workers)
        main, paired = spans[marked][:4], (spans[1 - marked] if len(spans) == 2 else None)
        # (its end segment, start, end): a pair may run across segments, it must end first;
        # an edit saying which range is marked (ours, a relation category) may come in any order
        if (
            "marked" not in edit
            and paired is not None
            and not pair_comes_first((paired[4], *paired[1:3]), main[:2])
        ):
            unlocated.append(edit)  # kept verbatim (written back on export), counted
            skipped += 1
            continue
        comment = edit.get("comment") if isinstance(edit.get("comment"), str) else ""
        crossing = paired[4] if paired is not None and paired[4] != paired[0] else None
        given = annotation_attributes(edit.get("annotation"), problem, f"document {doc!r}: {where}")
        work.extend(
            ImportedSpan(w, *main, category, paired and paired[:4], comment, crossing)
            for w in workers
        )
        for span in work[len(work) - len(workers) :]:
            span.attributes = dict(given) if given else None
    submitted = _names(entry.get("annotators"), problem, doc)
    if _rater(entry):
        submitted.append(_rater(entry))  # a rater's entry, even with no edit
    if isinstance(extra.get("metadata"), dict):  # the raters are the workers now
        extra["metadata"] = {k: v for k, v in extra["metadata"].items() if k != "rater"}
    meta = {**layout.meta(), "thresh": {**kept, "extra": extra, "unlocated_edits": unlocated}}
    if isinstance(entry.get("system"), str) and entry["system"].strip():
        meta["source"] = entry["system"].strip()  # the generating system (ours: Thresh has none)
    marked = {span.worker_id for span in work}
    empty = [w for w in dict.fromkeys(submitted) if w not in marked]
    return DocumentInput(
        doc,
        layout.segments,
        meta,
        work=group_marks(work),
        empty_workers=empty,
        vote_workers=votes,
        skipped_pairs=skipped,
    )


def _names(value: Any, problem: Problem, doc: str) -> list[str]:
    """An entry's ``annotators``: every worker who submitted it (with or without an edit)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise problem('"annotators" must be a list of worker names', doc)
    return [v.strip() for v in value]


def _same_item(entry: dict[str, Any]) -> Any:
    """What makes two raters' entries the same item (all but the rater and the edits)."""
    metadata = entry.get("metadata")
    rest = {k: v for k, v in entry.items() if k not in ("id", "edits", "metadata")}
    if isinstance(metadata, dict):
        rest["metadata"] = {k: v for k, v in metadata.items() if k != "rater"}
    return json.dumps(rest, sort_keys=True)


def _merged(documents: list[DocumentInput], entries: list[Any]) -> list[DocumentInput]:
    """Entries of one item by several raters (``metadata.rater``, as Thresh's MQM data has
    them) become one document, each rater its worker: so agreement can be computed."""
    first: dict[str, DocumentInput] = {}
    out = []
    for document, entry in zip(documents, entries, strict=True):
        key = _same_item(entry) if isinstance(entry, dict) and _rater(entry) else None
        if key is None or key not in first:
            out.append(document)
            if key is not None:
                first[key] = document
            continue
        into = first[key]
        into.work += document.work
        into.empty_workers += document.empty_workers
        into.vote_workers |= document.vote_workers
        into.skipped_pairs += document.skipped_pairs
    for document in out:
        marked = {span.worker_id for span in document.work}
        document.empty_workers = [
            w for w in dict.fromkeys(document.empty_workers) if w not in marked
        ]
    return out


def parse(
    data: Any, problem: Problem, sentences_per_segment: int | None = None
) -> list[DocumentInput]:
    if not isinstance(data, list):
        raise problem('thresh format must be a list of {"target": ..., "edits": [...]}')
    documents = [_entry(entry, n, problem, sentences_per_segment) for n, entry in enumerate(data)]
    return _merged(documents, data)


def _edits(document: AnnotatedDocument, layout: Layout, related: set[str]) -> list[dict[str, Any]]:
    """Edits merged by (ranges, category, comment, answers); a relation category's edit of
    two ranges says which is marked (``marked``: its index), its pair being in any order."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for mark in document.marks:
        attributes = mark.attributes or {}
        paired = mark.paired_range(layout)
        main = [layout.to_whole(mark.segment, mark.start), layout.to_whole(mark.segment, mark.end)]
        ranges = sorted([main, list(paired[:2])]) if paired is not None else [main]
        # a relation's (or a multi-label mark's with a relation) pair may come anywhere
        anywhere = paired is not None and (mark.category in related or paired[1] > main[0])
        first = ranges.index(main) if len(ranges) == 2 and anywhere else None
        # one edit per (ranges, category, comment, answers): the workers who marked it so
        key = (
            tuple(map(tuple, ranges)),
            first,
            mark.category,
            mark.comment,
            json.dumps(attributes, sort_keys=True),
        )
        entry = merged.setdefault(
            key, {"ranges": ranges, "workers": [], "attributes": attributes, "first": first}
        )
        if mark.worker_id not in entry["workers"]:
            entry["workers"].append(mark.worker_id)
    edits = []
    for (_, _f, category, comment, _a), entry in sorted(merged.items(), key=lambda kv: kv[0][0]):
        edit: dict[str, Any] = {
            "id": len(edits),
            "category": category,
            "output_idx": entry["ranges"],
            "votes": len(entry["workers"]),
            "annotators": entry["workers"],
        }
        if entry["first"] is not None:  # a relation category: which range is the marked one
            edit["marked"] = entry["first"]
        if entry["attributes"]:
            edit["annotation"] = attributes_annotation(entry["attributes"])
        if comment:
            edit["comment"] = comment
        edits.append(edit)
    return edits


def entries(session: Session, study: Study, work: Work | None = None) -> Iterator[dict[str, Any]]:
    """Thresh entries of every document that counts with its counted edits, one at a time."""
    related = {c["id"] for c in study.taxonomy["categories"] if c["kind"] == "relation"}
    for document in annotated_documents(session, study, work):
        layout = document.layout
        kept = document.meta.get("thresh") or {}
        entry: dict[str, Any] = {"id": document.external_id, **(kept.get("extra") or {})}
        entry["source"] = kept.get("source", "")
        if kept.get("context"):
            entry["context"] = kept["context"]
        entry["target"] = layout.text
        edits = _edits(document, layout, related)
        for edit in kept.get("unlocated_edits") or []:
            edits.append({**edit, "id": len(edits)})
        entry["edits"] = edits
        entry["annotators"] = list(document.workers)  # every submission, marked or not
        yield entry


def export(session: Session, study: Study, work: Work | None = None) -> Iterator[str]:
    """One JSON array, written an entry at a time (:mod:`app.formats.json_stream`)."""
    yield from json_stream.array(entries(session, study, work))
