"""Candidate errors of a document: its submitted workers' spans grouped by the strict rule.

Definitions (``docs/METRICS.md``, "Candidate errors"):

* the **marks** are the live annotations of the document's submitted assignments;
* per segment and category, workers are taken in the order of their assignments (the
  ``workers`` argument; a worker missing from it after those, by id), each worker's marks by
  (start, end, id); each worker's marks join the candidates built so far through a maximum
  one-to-one matching
  (:func:`app.rules.matching.maximum_matching`) in which a mark may join a candidate when
  it is **strict-eligible** (:func:`app.rules.matching.eligible`: token IoU ≥ 0.5, sentence
  IoU for sentence-scope categories) with *every* mark already in it; a mark left over
  starts a new candidate. So a candidate holds at most one mark per worker, and any two of
  its marks would match each other under the scores' strict rule;
* a candidate's **votes** = its number of marks (= distinct workers); **workers** = the
  document's submitted workers; it is **unanimous** when votes = workers and every mark has
  the same offsets, paired span and attribute values, else a **disagreement**;
* its **proposal** (what *accept* stores) is the most frequent (offsets, paired span) among
  its marks, ties to the earliest worker, with that mark's attributes and the distinct
  comments of all its marks (one per line, in mark order); a multi-label mark's categories
  are candidates of their own: one per category;
* so the candidates depend on the marks and the workers' order only, never on the order the
  marks arrive in (``tests/test_candidate_order.py`` shuffles them); the list comes sorted by
  segment, proposal start, proposal end, category, then the smallest mark id;
* its **key** is a digest of its marks' annotation ids: stable while those marks stand.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from app.annotation.values import MAX_COMMENT_CHARS
from app.models import Document, Study
from app.rules.matching import eligible, maximum_matching
from app.rules.spans import Span, TextKey
from app.rules.work import Work, columns, select_work, stream

PAIRED_FIELDS = (
    "paired_segment",
    "paired_start",
    "paired_end",
    "paired_text",
    "paired_end_segment",
)


@dataclass(frozen=True)
class Mark:
    """One worker's live annotation, with what the review page shows of it."""

    id: int
    worker: str
    segment: int
    start: int
    end: int
    text: str
    category: str
    paired: tuple[Any, ...]  # PAIRED_FIELDS values (all None for singletons)
    comment: str
    attributes: dict[str, Any] | None = None

    def span(self, document: str) -> Span:
        return Span(document, self.segment, self.start, self.end, self.category, self.worker)

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "worker": self.worker,
            "segment": self.segment,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "category": self.category,
            "paired": paired_json(self.paired),
            "comment": self.comment,
            "attributes": self.attributes or {},
        }


def paired_json(values: Sequence[Any]) -> dict[str, Any] | None:
    """``{"segment", "start", "end", "text"[, "end_segment"]}`` or None."""
    if values[0] is None:
        return None
    out = dict(zip(("segment", "start", "end", "text"), values[:4], strict=True))
    if values[4] is not None:
        out["end_segment"] = values[4]
    return out


@dataclass
class Candidate:
    """Workers' marks of one error (see the module's definitions)."""

    segment: int
    category: str
    marks: list[Mark] = field(default_factory=list)
    workers: int = 0

    @property
    def key(self) -> str:
        ids = ",".join(str(i) for i in sorted(m.id for m in self.marks))
        return "c" + hashlib.sha256(ids.encode()).hexdigest()[:32]

    @property
    def votes(self) -> int:
        return len(self.marks)

    @property
    def proposal(self) -> Mark:
        shapes = Counter((m.start, m.end, m.paired) for m in self.marks)
        best = max(shapes.values())
        return next(m for m in self.marks if shapes[(m.start, m.end, m.paired)] == best)

    @property
    def comment(self) -> str:
        """The distinct non-empty comments of its marks, one per line, cut at the limit."""
        comments = dict.fromkeys(m.comment.strip() for m in self.marks if m.comment.strip())
        return "\n".join(comments)[:MAX_COMMENT_CHARS]

    @property
    def unanimous(self) -> bool:
        return (
            self.votes == self.workers
            and len({(m.start, m.end, m.paired, _answers(m)) for m in self.marks}) == 1
        )


def _answers(mark: Mark) -> tuple[tuple[str, Any], ...]:
    """A mark's attribute values, comparable."""
    return tuple(sorted((mark.attributes or {}).items()))


MARK_COLUMNS = ("assignment_id", "worker_id", "id", "segment", "start", "end", "text", "category")


def _mark_query(study: Study, work: Work, document_id: int | None = None) -> Any:
    sql = columns(study, work)
    names = ("document_id", *MARK_COLUMNS, *PAIRED_FIELDS, "comment", "attributes")
    return select_work(study, work, *(sql[n] for n in names), document_id=document_id)


def _workers_and_marks(rows: Sequence[Any]) -> tuple[list[str], list[Mark]]:
    """Rows of :func:`_mark_query` of one document -> (workers in assignment order, marks in
    creation order)."""
    rows = sorted(rows, key=lambda row: (row[1], row[3] or 0))
    workers = list(dict.fromkeys(row[2] for row in rows))
    marks = [
        Mark(row[3], row[2], *row[4:9], tuple(row[9:14]), row[14] or "", row[15])
        for row in rows
        if row[3] is not None
    ]
    return workers, marks


def document_marks(session: Session, document: Document) -> tuple[list[str], list[Mark]]:
    """The submitted workers (assignment order) and their live marks (creation order): the
    document's counted work (:mod:`app.rules.work`), whatever its role."""
    query = _mark_query(document.study, Work(include_practice=True), document.id)
    return _workers_and_marks(session.execute(query).all())


def study_marks(
    session: Session, study: Study, work: Work
) -> dict[int, tuple[list[str], list[Mark]]]:
    """Per document id (of the documents that count for ``work``, workers' layer) its
    submitted workers and their marks, as :func:`document_marks` gives them, in one query."""
    by_document: dict[int, list[Any]] = defaultdict(list)
    for row in stream(session, _mark_query(study, work)):
        by_document[row[0]].append(row)
    return {doc: _workers_and_marks(rows) for doc, rows in by_document.items()}


def group_candidates(
    document: str,
    workers: Sequence[str],
    marks: Sequence[Mark],
    texts: Mapping[TextKey, str],
    scopes: Mapping[str, str],
    *,
    ordered: bool = True,
) -> list[Candidate]:
    """The candidates of one document's marks, by segment, then start, then category
    (``ordered=False``: in no promised order, for callers that only count them)."""
    places: dict[tuple[int, str], dict[str, list[Mark]]] = defaultdict(lambda: defaultdict(list))
    spans = {id(mark): mark.span(document) for mark in marks}  # built once, compared often
    for mark in sorted(marks, key=lambda m: (m.segment, m.category, m.start, m.end, m.id)):
        places[(mark.segment, mark.category)][mark.worker].append(mark)
    order = {worker: n for n, worker in enumerate(workers)}
    out: list[Candidate] = []
    for (segment, category), by_worker in places.items():
        groups: list[Candidate] = []
        for worker in sorted(by_worker, key=lambda w: (order.get(w, len(order)), w)):
            own = by_worker[worker]
            edges = [
                [
                    index
                    for index, group in enumerate(groups)
                    if all(
                        eligible(
                            spans[id(mark)],
                            spans[id(member)],
                            "strict",
                            texts=texts,
                            scopes=scopes,
                        )
                        for member in group.marks
                    )
                ]
                for mark in own
            ]
            joined = maximum_matching(edges, len(groups))
            for left, mark in enumerate(own):
                if left in joined:
                    groups[joined[left]].marks.append(mark)
                else:
                    groups.append(Candidate(segment, category, [mark], len(workers)))
        out.extend(groups)
    if not ordered:
        return out

    def order_key(c: Candidate) -> tuple[Any, ...]:
        proposal = c.proposal
        return (c.segment, proposal.start, proposal.end, c.category, min(m.id for m in c.marks))

    return sorted(out, key=order_key)
