"""Label Studio's JSON, both ways: a list of tasks ``{"data": {"text"}, "annotations",
"predictions"}``.

Read: ``data.text`` is cut into segments (or the ``meta.marginalia.segments`` ranges our
export wrote); each annotation's ``labels`` regions become spans of one worker
(``created_username``, ``completed_by``'s email or id, else ``import-<n>``), a ``relation``
pairs its earlier region with its later one, a per-region ``textarea`` is the comment;
``predictions`` become detector suggestions. Written (a folder or zip): ``tasks.json``, one
annotation per submitted worker, and ``labeling_config.xml`` from the taxonomy.
Offsets are code points, as Label Studio stores them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from sqlalchemy.orm import Session

from app.formats import json_stream
from app.formats.annotated import AnnotatedDocument, Mark, annotated_documents, grouped
from app.formats.labelstudio_config import (
    ATTRIBUTE_RESULTS,
    COMMENT_NAME,
    LABELS_NAME,
    RELATED,
    RELATION_LABEL,
    TEXT_NAME,
    labeling_config,
)
from app.formats.records import DocumentInput, ImportedSpan, ImportedSuggestion, Problem
from app.formats.records import document_id as checked_id
from app.formats.wholetext import (
    CROSSING,
    Layout,
    layout_from_ranges,
    place,
    segment_ranges,
    split,
)
from app.models import Study
from app.rules.work import Work

NAME = "labelstudio"
MIMETYPE, DOWNLOAD_AS, TITLE = "application/zip", "labelstudio.zip", "Label Studio (zip)"
WHOLE_TEXT = True
WRITES_FILES = True
EPOCH = "1970-01-01T00:00:00+00:00"  # a created_at for work that has no time


class Region(NamedTuple):
    segment: int
    start: int
    end: int
    text: str
    labels: list[str]
    end_segment: int  # segment unless it runs across segment breaks (a pair's earlier half)
    at: str  # where it is in the file, for messages


def looks_like(data: Any) -> bool:
    """A list of objects with a ``data`` object."""
    first = data[0] if isinstance(data, list) and data else None
    return isinstance(first, dict) and isinstance(first.get("data"), dict)


def _worker(annotation: dict[str, Any], number: int) -> str:
    name = annotation.get("created_username")
    if isinstance(name, str) and name.strip():
        return name.strip()
    by = annotation.get("completed_by")
    if isinstance(by, dict):
        by = by.get("email") or by.get("id")
    if isinstance(by, str | int) and not isinstance(by, bool) and str(by).strip():
        return f"labelstudio-{by}" if isinstance(by, int) else by.strip()
    return f"import-{number}"


def _regions(results: Any, layout: Layout, problem: Problem, where: str) -> dict[str, Region]:
    if not isinstance(results, list):
        raise problem(f'{where}: "result" must be a list')
    regions: dict[str, Region] = {}
    for r, result in enumerate(results):
        if not isinstance(result, dict):
            raise problem(f"{where}: result {r} must be an object")
        if result.get("type") != "labels":
            continue
        value = result.get("value")
        if not isinstance(value, dict):
            raise problem(f'{where}: result {r} has no "value"')
        start, end, labels = value.get("start"), value.get("end"), value.get("labels")
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)):
            raise problem(f"{where}: result {r} needs integer start and end (Text regions only)")
        if (
            not isinstance(labels, list)
            or not labels
            or not all(isinstance(x, str) for x in labels)
        ):
            raise problem(f'{where}: result {r} needs a non-empty "labels" list')
        located = place(layout, start, end)
        if located is None:
            raise problem(f"{where}: result {r}: [{start}, {end}] is outside the text")
        text = value.get("text")
        if isinstance(text, str) and layout.text[start:end] != text:
            raise problem(f"{where}: result {r}: text at [{start}, {end}] is not {text[:40]!r}")
        rid = str(result.get("id", f"#{r}"))
        if rid in regions:
            raise problem(f"{where}: result {r}: region id {rid!r} is used twice")
        segment, s, e, in_text, to = located
        regions[rid] = Region(segment, s, e, in_text, labels, to, f"{where}: result {r}")
    return regions


def _within(region: Region, problem: Problem) -> Region:
    """``region``, refused when it runs across segment breaks (only a pair's earlier may)."""
    if region.end_segment != region.segment:
        raise problem(f"{region.at}: [{region.start}, {region.end}] {CROSSING}")
    return region


def _spans(
    results: Any, layout: Layout, problem: Problem, where: str, worker: str
) -> list[ImportedSpan]:
    regions = _regions(results, layout, problem, where)
    comments: dict[str, str] = {}
    attributes: dict[str, dict[str, Any]] = {}
    pairs: dict[str, str] = {}  # later region id -> earlier region id
    for result in results:
        kind, rid = result.get("type"), str(result.get("id"))
        value = result.get("value") if isinstance(result.get("value"), dict) else {}
        if kind == "textarea" and rid in regions:
            texts = value.get("text") or []
            comments[rid] = "\n".join(t for t in texts if isinstance(t, str))
        elif kind in ATTRIBUTE_RESULTS and rid in regions:
            given = value.get(ATTRIBUTE_RESULTS[kind])
            if isinstance(given, list):  # choices
                given = given[0] if len(given) == 1 else given
            attributes.setdefault(rid, {})[str(result.get("from_name"))] = given
        elif kind == "relation":
            a, b = str(result.get("from_id")), str(result.get("to_id"))
            if a not in regions or b not in regions:
                raise problem(f"{where}: a relation names a region that is not a labels result")
            if RELATED in (result.get("labels") or ()):  # from the marked span to the other
                first, second = b, a
            else:  # an earlier span and the later, marked one, in either direction
                first, second = sorted((a, b), key=lambda k: regions[k][:3])
            if second in pairs:
                raise problem(f"{where}: region {second!r} is paired twice")
            pairs[second] = first
    spans = []
    for rid, region in regions.items():
        if rid in pairs.values() and rid not in pairs:
            continue  # only the earlier half of a pair (it may run across segment breaks)
        segment, start, end, text, labels = _within(region, problem)[:5]
        earlier = regions[pairs[rid]] if rid in pairs else None
        paired = earlier[:4] if earlier is not None else None
        crossing = (
            earlier.end_segment if earlier and earlier.end_segment != earlier.segment else None
        )
        note = comments.get(rid, "")
        more = {"also": tuple(labels[1:]), "attributes": attributes.get(rid)}
        spans.append(
            ImportedSpan(
                worker, segment, start, end, text, labels[0], paired, note, crossing, **more
            )
        )
    return spans


def _task(task: Any, n: int, problem: Problem, per_segment: int | None) -> DocumentInput:
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        raise problem(f'task {n} must be an object with "data"')
    data, meta = task["data"], task.get("meta") if isinstance(task.get("meta"), dict) else {}
    ours = meta.get("marginalia") if isinstance(meta.get("marginalia"), dict) else {}
    doc = checked_id(
        data.get("document", ours.get("document", task.get("id", f"task-{n}"))), problem
    )
    text = data.get(TEXT_NAME)
    if not isinstance(text, str):
        raise problem('"data.text" must be text', doc)
    layout = None if per_segment else layout_from_ranges(text, ours.get("segments"))
    if layout is None:
        layout, mapper = split(text, problem, doc, per_segment)
        if mapper(len(text)) != len(text):
            raise problem("contains carriage returns; convert line ends to LF first", doc)
    work: list[ImportedSpan] = []
    empty: list[str] = []
    annotations = task.get("annotations") or task.get("completions") or []
    if not isinstance(annotations, list):
        raise problem('"annotations" must be a list', doc)
    for a, annotation in enumerate(annotations, start=1):
        if not isinstance(annotation, dict):
            raise problem(f"annotation {a} must be an object", doc)
        if annotation.get("was_cancelled"):
            continue
        where = f"document {doc!r}: annotation {a}"
        worker = _worker(annotation, a)
        spans = _spans(annotation.get("result"), layout, problem, where, worker)
        if not spans:  # submitted with no region: "saw no errors" (docs/FORMATS.md)
            empty.append(worker)
        work += spans
    suggestions = []
    for p, prediction in enumerate(task.get("predictions") or [], start=1):
        if not isinstance(prediction, dict):
            raise problem(f"prediction {p} must be an object", doc)
        model = str(prediction.get("model_version") or "predictions")
        score = prediction.get("score")
        where = f"document {doc!r}: prediction {p}"
        results = prediction.get("result")
        regions = _regions(results, layout, problem, where)
        scores = {str(r.get("id", f"#{i}")): r.get("score", score) for i, r in enumerate(results)}
        for rid, region in regions.items():
            segment, start, end, text, labels = _within(region, problem)[:5]
            value = scores.get(rid)
            value = float(value) if isinstance(value, int | float) else 1.0
            for label in labels:
                suggestions.append(
                    ImportedSuggestion(segment, start, end, text, label, value, f"import:{model}")
                )
    meta_out = {**layout.meta(), "labelstudio": {"task_id": task.get("id")}}
    if isinstance(data.get("system"), str) and data["system"].strip():
        meta_out["source"] = data["system"].strip()  # the generating system (ours)
    marked = {span.worker_id for span in work}
    empty = [w for w in dict.fromkeys(empty) if w not in marked]
    return DocumentInput(
        doc, layout.segments, meta_out, work=work, suggestions=suggestions, empty_workers=empty
    )


def parse(
    data: Any, problem: Problem, sentences_per_segment: int | None = None
) -> list[DocumentInput]:
    if isinstance(data, dict) and "data" in data:
        data = [data]
    if not isinstance(data, list):
        raise problem('labelstudio format must be a list of tasks {"data": {"text": ...}}')
    return [_task(task, n, problem, sentences_per_segment) for n, task in enumerate(data)]


def _results(
    marks: list[Mark], layout: Layout, prefix: str, taxonomy: dict[str, Any]
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    kinds = {c["id"]: c["kind"] for c in taxonomy["categories"]}
    scales = {
        a["id"]
        for c in taxonomy["categories"]
        for a in c.get("attributes", ())
        if a["kind"] == "scale"
    }

    def region(rid: str, start: int, end: int, text: str, labels: list[str]) -> None:
        results.append(
            {
                "id": rid,
                "from_name": LABELS_NAME,
                "to_name": TEXT_NAME,
                "type": "labels",
                "origin": "manual",
                "value": {"start": start, "end": end, "text": text, "labels": labels},
            }
        )

    for m, rows in enumerate(grouped(marks)):
        mark = rows[0]
        rid = f"{prefix}-{m}"
        start, end = (
            layout.to_whole(mark.segment, mark.start),
            layout.to_whole(mark.segment, mark.end),
        )
        region(rid, start, end, mark.text, [row.category for row in rows])
        for key, value in (mark.attributes or {}).items():
            kind = "number" if key in scales else "choices"
            results.append(
                {
                    "id": rid,
                    "from_name": key,
                    "to_name": TEXT_NAME,
                    "type": kind,
                    "origin": "manual",
                    "value": {ATTRIBUTE_RESULTS[kind]: value if kind == "number" else [value]},
                }
            )
        if mark.comment:
            results.append(
                {
                    "id": rid,
                    "from_name": COMMENT_NAME,
                    "to_name": TEXT_NAME,
                    "type": "textarea",
                    "origin": "manual",
                    "value": {"text": [mark.comment]},
                }
            )
        paired = mark.paired_range(layout)
        if paired is not None:
            region(f"{rid}p", *paired, [row.category for row in rows])
            related = kinds.get(mark.category) == "relation"  # any order: say which is which
            results.append(
                {
                    "from_id": rid if related else f"{rid}p",
                    "to_id": f"{rid}p" if related else rid,
                    "type": "relation",
                    "direction": "right",
                    "labels": [RELATED if related else RELATION_LABEL],
                }
            )
    return results


def _task_out(
    number: int, document: AnnotatedDocument, users: dict[str, int], taxonomy: dict[str, Any]
) -> dict[str, Any]:
    layout = document.layout
    annotations = []
    for worker, marks in document.workers.items():
        user = users.setdefault(worker, len(users) + 1)
        annotations.append(
            {
                "id": number * 1000 + len(annotations) + 1,
                "completed_by": user,
                "created_username": worker,
                # never null (label-studio-converter reads it as text): the last mark, or
                # for a submission with no mark its time
                "created_at": document.times.get(worker) or EPOCH,
                "was_cancelled": False,
                "ground_truth": document.is_gold,
                "result": _results(marks, layout, f"d{number}w{user}", taxonomy),
            }
        )
    return {
        "id": number,
        "data": {TEXT_NAME: layout.text, "document": document.external_id},
        "meta": {
            "marginalia": {"document": document.external_id, "segments": segment_ranges(layout)}
        },
        "annotations": annotations,
        "predictions": [],
    }


def tasks(session: Session, study: Study, work: Work | None = None) -> Iterator[dict[str, Any]]:
    """Label Studio tasks of every document that counts with its counted annotations."""
    users: dict[str, int] = {}
    for n, document in enumerate(annotated_documents(session, study, work), start=1):
        yield _task_out(n, document, users, study.taxonomy)


def export_files(
    session: Session, study: Study, work: Work | None = None
) -> Iterator[tuple[str, Iterator[bytes] | bytes]]:
    """``tasks.json`` written a task at a time (:mod:`app.formats.json_stream`), then the
    labelling configuration."""
    chunks = json_stream.array(tasks(session, study, work))
    yield "tasks.json", (chunk.encode("utf-8") for chunk in chunks)
    yield "labeling_config.xml", labeling_config(study.taxonomy).encode("utf-8")
