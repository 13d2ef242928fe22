"""SNaC's release format, both ways: ``{"doc-id": {"0": {"text": ..., "errors": [...]}}}``.

Read: documents, and with ``--gold`` their errors as gold spans (at ``start``/``end`` when
a file gives them and they fit the text, as our own export does). Written: every submitted
assignment's live annotations aggregated by occurrence (votes, ``start``/``end``,
``antecedants`` with ``antecedant_offsets``), a superset of the release's shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy.orm import Session

from app.documents.records import gold_problem
from app.formats import json_stream
from app.formats.annotated import annotated_documents
from app.formats.records import (
    DocumentInput,
    GoldSpan,
    Problem,
    keyed_documents,
    segment_text,
)
from app.models import Study
from app.rules.work import Work

NAME = "snac"
MIMETYPE, DOWNLOAD_AS, TITLE = "application/json; charset=utf-8", "json", "SNaC JSON"


def looks_like(data: Any) -> bool:
    """Whether parsed JSON has this format's shape (for ``--format auto``)."""
    first = next(iter(data.values()), None) if isinstance(data, dict) else None
    return isinstance(first, dict) and all(str(k).isdigit() for k in first)


def gold_errors(errors: Any, problem: Problem, doc: str, index: int) -> list[GoldSpan]:
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
        start, end = error.get("start"), error.get("end")
        offsets = None
        if start is not None or end is not None:
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
                raise problem(f'error {span[:40]!r} has bad "start"/"end"', doc, index)
            offsets = (start, end)
        gold = GoldSpan(index, span, category, votes, list(antecedents), offsets)
        bad = gold_problem(gold)
        if bad:
            raise problem(bad, doc, index)
        spans.append(gold)
    return spans


def parse(data: Any, problem: Problem) -> list[DocumentInput]:
    documents = []
    shape = 'snac format must be {"doc-id": {"0": {"text": ..., "errors": [...]}}}'
    for doc, body in keyed_documents(data, problem, shape):
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
            segments.append(segment_text(seg.get("text"), problem, doc, index))
            gold.extend(gold_errors(seg.get("errors"), problem, doc, index))
        documents.append(DocumentInput(doc, segments, gold=gold))
    return documents


Mark = tuple[
    str, int, int, int, str, str, int | None, int | None, int | None, str | None, int | None
]
"""(worker, segment, start, end, span text, category, paired segment, start, end, text,
paired end segment)."""


def document_errors(texts: list[str], marks: list[Mark]) -> dict[str, Any]:
    """Aggregate one document's marks the way SNaC's release does, by occurrence.

    Marks of the same occurrence (segment, start, end, category) merge; ``votes`` counts
    the distinct workers who marked it; each error also carries ``start``/``end``; paired
    categories list each of those workers' earlier span in ``antecedants`` (SNaC's
    spelling) and, in the same order, its place in ``antecedant_offsets``
    (``{"segment", "start", "end"}``, plus ``"end_segment"`` when it runs on into later
    segments, see ``app/annotation/pairing.py``). Two workers marking different occurrences of the
    same text stay two errors.
    """
    merged: dict[tuple[int, int, int, str], dict[str, Any]] = {}
    for worker, segment, start, end, span, category, p_seg, p_start, p_end, p_text, p_to in marks:
        entry = merged.setdefault(
            (segment, start, end, category), {"span": span, "workers": {}, "paired": False}
        )
        if worker not in entry["workers"]:
            paired = None
            if p_text is not None:
                where: dict[str, Any] = {"segment": p_seg, "start": p_start, "end": p_end}
                if p_to is not None:
                    where["end_segment"] = p_to
                paired = (p_text, where)
            entry["workers"][worker] = paired
        entry["paired"] = entry["paired"] or p_text is not None
    document: dict[str, Any] = {str(i): {"text": t, "errors": []} for i, t in enumerate(texts)}
    for (segment, start, end, category), entry in merged.items():
        error: dict[str, Any] = {
            "span": entry["span"],
            "error_type": category,
            "votes": len(entry["workers"]),
            "start": start,
            "end": end,
        }
        if entry["paired"]:
            pairs = [p for p in entry["workers"].values() if p is not None]
            error["antecedants"] = [text for text, _ in pairs]
            error["antecedant_offsets"] = [where for _, where in pairs]
        document[str(segment)]["errors"].append(error)
    return document


def entries(
    session: Session, study: Study, work: Work | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SNaC release's JSON shape over the counted work of the study, a document at a
    time: the documents with some (layer "adjudicated": the documents of the layer, one
    voter)."""
    for document in annotated_documents(session, study, work, with_work_only=True):
        marks = sorted(document.marks, key=lambda m: (m.segment, m.start, m.id))
        yield (
            document.external_id,
            document_errors(
                document.segments,
                [
                    (
                        m.worker_id,
                        m.segment,
                        m.start,
                        m.end,
                        m.text,
                        m.category,
                        m.paired_segment,
                        m.paired_start,
                        m.paired_end,
                        m.paired_text,
                        m.paired_end_segment,
                    )
                    for m in marks
                ],
            ),
        )


def export(session: Session, study: Study, work: Work | None = None) -> Iterator[str]:
    """The aggregate as one JSON object (the release's shape), written a document at a time
    (:mod:`app.formats.json_stream`)."""
    yield from json_stream.obj(entries(session, study, work))
