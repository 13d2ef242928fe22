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
from app.formats.annotated import AnnotatedDocument, annotated_documents
from app.formats.records import DocumentInput, ImportedSpan, Problem, document_id
from app.formats.wholetext import Layout, place, split
from app.models import Study
from app.quality.work import Work

NAME = "thresh"
WHOLE_TEXT = True
KNOWN_ENTRY_KEYS = {"id", "source", "target", "context", "edits"}
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
        spans = []
        for n, (start, end) in enumerate(ranges):
            located = place(layout, mapper(start), mapper(end))
            # only the earlier range of two (a pair's earlier span) may run across segments
            if located is None or (located[4] != located[0] and n == len(ranges) - 1):
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
        workers = _workers(edit, problem, f"document {doc!r}: {where}", taken[key])
        taken[key] += len(workers)
        main, paired = spans[-1][:4], (spans[0] if len(spans) == 2 else None)
        # (its end segment, start, end): a pair may run across segments, it must end first
        if paired is not None and not pair_comes_first((paired[4], *paired[1:3]), main[:2]):
            unlocated.append(edit)  # kept verbatim (written back on export), counted
            skipped += 1
            continue
        comment = edit.get("comment") if isinstance(edit.get("comment"), str) else ""
        crossing = paired[4] if paired is not None and paired[4] != paired[0] else None
        work.extend(
            ImportedSpan(w, *main, category, paired and paired[:4], comment, crossing)
            for w in workers
        )
    meta = {**layout.meta(), "thresh": {**kept, "extra": extra, "unlocated_edits": unlocated}}
    if isinstance(entry.get("system"), str) and entry["system"].strip():
        meta["source"] = entry["system"].strip()  # the generating system (ours: Thresh has none)
    return DocumentInput(doc, layout.segments, meta, work=work, skipped_pairs=skipped)


def parse(
    data: Any, problem: Problem, sentences_per_segment: int | None = None
) -> list[DocumentInput]:
    if not isinstance(data, list):
        raise problem('thresh format must be a list of {"target": ..., "edits": [...]}')
    return [_entry(entry, n, problem, sentences_per_segment) for n, entry in enumerate(data)]


def _edits(document: AnnotatedDocument, layout: Layout) -> list[dict[str, Any]]:
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for mark in document.marks:
        ranges = []
        paired = mark.paired_range(layout)
        if paired is not None:
            ranges.append(list(paired[:2]))
        ranges.append(
            [layout.to_whole(mark.segment, mark.start), layout.to_whole(mark.segment, mark.end)]
        )
        key = (tuple(map(tuple, ranges)), mark.category)
        entry = merged.setdefault(key, {"ranges": ranges, "workers": [], "comments": []})
        if mark.worker_id not in entry["workers"]:
            entry["workers"].append(mark.worker_id)
        if mark.comment:
            entry["comments"].append(mark.comment)
    edits = []
    for (_, category), entry in sorted(merged.items(), key=lambda item: (item[0][0], item[0][1])):
        edit: dict[str, Any] = {
            "id": len(edits),
            "category": category,
            "output_idx": entry["ranges"],
            "votes": len(entry["workers"]),
            "annotators": entry["workers"],
        }
        if entry["comments"]:
            edit["comment"] = " | ".join(entry["comments"])
        edits.append(edit)
    return edits


def build(session: Session, study: Study, work: Work | None = None) -> list[dict[str, Any]]:
    """Thresh entries of every document that counts with its counted edits."""
    entries = []
    for document in annotated_documents(session, study, work):
        layout = document.layout
        kept = document.meta.get("thresh") or {}
        entry: dict[str, Any] = {"id": document.external_id, **(kept.get("extra") or {})}
        entry["source"] = kept.get("source", "")
        if kept.get("context"):
            entry["context"] = kept["context"]
        entry["target"] = layout.text
        edits = _edits(document, layout)
        for edit in kept.get("unlocated_edits") or []:
            edits.append({**edit, "id": len(edits)})
        entry["edits"] = edits
        entries.append(entry)
    return entries


def export(session: Session, study: Study, work: Work | None = None) -> Iterator[str]:
    yield json.dumps(build(session, study, work), ensure_ascii=False, indent=1) + "\n"
