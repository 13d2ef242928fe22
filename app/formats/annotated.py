"""The counted work grouped by document, for the writers that write a document at a time
(snac, thresh, labelstudio, brat, parquet): each document that counts with its text and its
workers' marks, merged from three streamed statements of :mod:`app.rules.work`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from sqlalchemy.orm import Session

from app.documents.records import AnnotatorSpan
from app.formats.wholetext import Layout, layout_of
from app.models import Document, Study, isoformat
from app.rules.work import (
    Work,
    columns,
    role,
    select_documents,
    select_segments,
    select_work,
    stream,
)

MARK_COLUMNS = (
    "worker_id",
    "segment",
    "start",
    "end",
    "text",
    "category",
    "paired_segment",
    "paired_start",
    "paired_end",
    "paired_text",
    "paired_end_segment",
    "comment",
    "created_at",
    "id",
    "attributes",
    "mark",
)


@dataclass
class Mark(AnnotatorSpan):
    """One counted annotation (or accepted row of the adjudicated layer), as read for an
    export (not changed after)."""

    paired_segment: int | None
    paired_start: int | None
    paired_end: int | None
    paired_text: str | None
    paired_end_segment: int | None  # as stored: set only when the earlier span crosses
    comment: str
    created_at: str | None
    id: int
    attributes: dict[str, Any] | None = None
    mark: int | None = None  # the id shared by a multi-label mark's rows (one per category)

    @property
    def paired_to(self) -> int | None:
        """The segment where the paired span ends (None without a pair)."""
        if self.paired_segment is None:
            return None
        return self.paired_segment if self.paired_end_segment is None else self.paired_end_segment

    def paired_range(self, layout: Layout) -> tuple[int, int, str] | None:
        """The paired span in the whole text: (start, end, the text there), across segment
        breaks too; None without a pair."""
        to = self.paired_to
        if to is None or self.paired_start is None or self.paired_end is None:
            return None
        start = layout.to_whole(self.paired_segment, self.paired_start)  # type: ignore[arg-type]
        end = layout.to_whole(to, self.paired_end)
        return start, end, layout.text[start:end]


@dataclass
class AnnotatedDocument:
    """A document that counts, its segments and its workers' marks (workers in order; a
    worker who submitted without a mark has an empty list)."""

    external_id: str
    segments: list[str]
    meta: dict[str, Any]
    is_gold: bool
    role: str
    workers: dict[str, list[Mark]] = field(default_factory=dict)
    # each worker's latest time: its last mark's, or for a submission with no mark its own
    times: dict[str, str | None] = field(default_factory=dict)

    @property
    def layout(self) -> Layout:
        return layout_of(self.segments, self.meta)

    @property
    def marks(self) -> list[Mark]:
        return [mark for marks in self.workers.values() for mark in marks]


def grouped(marks: list[Mark]) -> list[list[Mark]]:
    """A worker's marks as multi-label marks: the rows sharing a ``mark``, in order."""
    groups: dict[int, list[Mark]] = {}
    for mark in marks:
        groups.setdefault(mark.id if mark.mark is None else mark.mark, []).append(mark)
    return list(groups.values())


def annotated_documents(
    session: Session, study: Study, work: Work | None = None, *, with_work_only: bool = False
) -> Iterator[AnnotatedDocument]:
    """Every document that counts for ``work``, in order, with its counted marks (layer
    ``adjudicated``: one worker, ``adjudicated``, on the documents of the layer).
    ``with_work_only``: only the documents with some counted work."""
    work = work or Work()
    sql = columns(study, work)
    documents = stream(
        session,
        select_documents(
            study,
            work,
            Document.id,
            Document.external_id,
            Document.meta,
            Document.is_gold,
            role(study),
        ),
    )
    texts = groupby(stream(session, select_segments(study, work)), key=lambda row: row[0])
    rows = stream(
        session, select_work(study, work, sql["document_id"], *(sql[n] for n in MARK_COLUMNS))
    )
    marks = groupby(rows, key=lambda row: row[0])
    next_text, next_marks = next(texts, None), next(marks, None)
    for document_id, external_id, meta, is_gold, document_role in documents:
        segments: list[str] = []
        if next_text is not None and next_text[0] == document_id:
            segments = [row[1] for row in next_text[1]]
            next_text = next(texts, None)
        workers: dict[str, list[Mark]] = {}
        times: dict[str, str | None] = {}
        if next_marks is not None and next_marks[0] == document_id:
            for row in next_marks[1]:
                own = workers.setdefault(row[1], [])
                stamp = isoformat(row[13])
                if stamp and (times.get(row[1]) or "") < stamp:
                    times[row[1]] = stamp
                if row[14] is not None:  # an empty row: submitted without a mark
                    own.append(Mark(*row[1:13], isoformat(row[13]), *row[14:17]))
            next_marks = next(marks, None)
        if workers or not with_work_only:
            yield AnnotatedDocument(
                external_id, segments, meta or {}, bool(is_gold), document_role, workers, times
            )
