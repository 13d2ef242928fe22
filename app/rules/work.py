"""The work that counts, read once: which annotations of a study count, for a layer, as
SQLAlchemy Core statements that stream (docs/METRICS.md, "Which work counts").

Every export, the report, progress, agreement, the review state and the scores read the
work through :func:`select_work` (and the documents through :func:`document_filter`), so a
new column or filter is one change here.

* Layer ``workers``: the live annotations (not removed) of the study's **submitted**
  assignments (rejected, abandoned, returned or screened-out ones are not submitted); with
  ``in_progress`` also the live annotations of active assignments. A submitted assignment
  without a live annotation is one row whose annotation columns are empty (NULL): "saw no
  errors" stays apart from "never annotated".
* Layer ``adjudicated``: the accepted rows of the adjudicated layer of the documents whose
  review is ``done`` (``review_status="any"``: of every document with a review, whatever
  its status), worker ``adjudicated``; a document of the layer without an accepted row is
  one row whose error columns are empty.
* Layer ``consensus``: the units of the worker models (a sentence under a category,
  app/quality/reliability.py) that some worker marked and whose MACE posterior is at least
  ``min_posterior`` (default :data:`MIN_POSTERIOR`), as the study's figures were last
  computed (app/quality/figures.py), worker ``consensus``; one row per unit, no empty rows.
* Assignments: the work of a **submitted** assignment counts (:func:`is_counted`, the one
  rule, for SQL :func:`assignment_filter` and for rows already read); an **active** one is
  work in hand (:func:`in_hand`: progress counts, the in-progress count); a **rejected**
  one counts nowhere but on the pages about its worker (``Work(rejected=True)``: their
  attention-check rate and active time stay in view). An annotation is **live** until
  removed (:func:`is_live`).
* Workers (the workers' layer): the **humans** by default; an LLM annotator of the study
  (app/llm/, worker ID ``llm:<name>``) counts only when asked for: ``workers="llm:<name>"``
  (``--layer llm:<name>``: that annotator's work alone) or ``workers="everyone"``
  (``--include-llm``: the humans and every LLM annotator). So agreement, the worker
  models, review candidates, progress and the default exports are the humans' own
  (:func:`counted_workers`, :func:`human_worker`; docs/METRICS.md, "LLM annotators").
* Documents: every document of the study but its **training phase** (``include_practice``
  keeps it): the gold documents of a study with a pass mark, served before real work by
  app/annotation/assigning.py. A document's **role** is ``practice`` (a training document
  that teaches: ``Document.is_practice``, its answer key shown, never graded),
  ``qualification`` (a training document that grades: any other gold document of a study
  with a pass mark), ``check`` (it carries attention checks, app/quality/attention.py) or
  ``real``; it follows the study's pass mark as it stands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    JSON,
    ColumnElement,
    Row,
    Select,
    String,
    and_,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    literal_column,
    null,
    select,
    true,
)
from sqlalchemy.orm import Session

from app.errors import InvalidInput
from app.models import (
    AdjudicatedError,
    Annotation,
    Assignment,
    ConsensusUnit,
    Document,
    DocumentReview,
    GoldError,
    Segment,
    Study,
)

WORKERS, ADJUDICATED, CONSENSUS = LAYERS = ("workers", "adjudicated", "consensus")
LLM_PREFIX = "llm:"  # an LLM annotator's worker ID (app/llm/): never a human's
LLM_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")  # what follows it
HUMANS, EVERYONE = "humans", "everyone"  # Work.workers besides one annotator's "llm:<name>"
MIN_POSTERIOR = 0.9  # the consensus layer's default: MACE's posterior of an error at least
REVIEW_STATUSES = ("done", "any")
ROLES = ("practice", "qualification", "check", "real")
TRAINING_ROLES = ROLES[:2]  # the training phase: out of the counted work by default
UNREVIEWED = "unreviewed"  # the review status of a document without a review row
CHUNK_ROWS = 2_000
SUBMITTED, ACTIVE, REJECTED = "submitted", "active", "rejected"


@dataclass(frozen=True)
class Work:
    """Which work counts: the layer and its filters (checked on creation)."""

    layer: str = WORKERS
    include_practice: bool = False
    review_status: str = "done"  # adjudicated layer: "done" or "any"
    in_progress: bool = False  # workers' layer: also the live annotations of active work
    min_posterior: float = MIN_POSTERIOR  # consensus layer: the posterior a unit needs
    rejected: bool = False  # workers' layer: also rejected assignments (pages about a worker)
    workers: str = HUMANS  # workers' layer: humans, everyone, or one LLM annotator's ID

    def __post_init__(self) -> None:
        if is_llm(self.layer):  # --layer llm:NAME: the workers' layer, one ID
            object.__setattr__(self, "workers", self.layer)
            object.__setattr__(self, "layer", WORKERS)
        llm = is_llm(self.workers) and LLM_NAME.match(self.workers[len(LLM_PREFIX) :])
        if self.workers not in (HUMANS, EVERYONE) and not llm:
            raise InvalidInput(
                f"unknown workers {self.workers!r} (use llm:<name>, a name of 1-64 letters, "
                "digits, '_', '.' or '-')"
            )
        if self.workers != HUMANS and self.layer != WORKERS:
            raise InvalidInput("--include-llm applies to the workers' layer only")
        if self.layer not in LAYERS:
            raise InvalidInput(
                f"unknown layer {self.layer!r} (use {', '.join(LAYERS)} or llm:<name>)"
            )
        if self.review_status not in REVIEW_STATUSES:
            raise InvalidInput(
                f"unknown review status {self.review_status!r} (use {' or '.join(REVIEW_STATUSES)})"
            )
        if self.layer != ADJUDICATED and self.review_status != "done":
            raise InvalidInput("--review-status applies to the adjudicated layer only")
        if self.layer != WORKERS and self.in_progress:
            raise InvalidInput("--include-in-progress applies to the workers' layer only")
        if self.layer != WORKERS and self.rejected:
            raise InvalidInput("rejected work is of the workers' layer only")
        if not 0.0 <= self.min_posterior <= 1.0:
            raise InvalidInput("the consensus layer's minimum posterior is a number from 0 to 1")
        if self.layer != CONSENSUS and self.min_posterior != MIN_POSTERIOR:
            raise InvalidInput("--min-posterior applies to the consensus layer only")


def statuses(work: Work) -> tuple[str, ...]:
    """The statuses of the assignments whose live annotations are ``work`` (workers' layer)."""
    return (
        (SUBMITTED,)
        + ((ACTIVE,) if work.in_progress else ())
        + ((REJECTED,) if work.rejected else ())
    )


def is_counted(status: str | None, work: Work | None = None) -> bool:
    """Whether an assignment of ``status`` (a row already read) is counted work: the Python
    twin of :func:`assignment_filter`'s status condition."""
    return status in statuses(work or Work())


def in_hand(status: str | None) -> bool:
    """Whether an assignment of ``status`` is work in hand (active: not counted yet)."""
    return status == ACTIVE


def is_live() -> ColumnElement[bool]:
    """SQL: the ``Annotation`` in the query is live (not removed)."""
    return Annotation.removed_at.is_(None)


def assignment_filter(study: Study, work: Work) -> list[ColumnElement[bool]]:
    """WHERE conditions on ``Assignment`` (joined to its ``Document``): the study's
    assignments whose work counts for ``work`` (workers' layer), on the documents that
    count."""
    return [
        Assignment.study_id == study.id,
        Assignment.status.in_(statuses(work)),
        counted_workers(work),
        *document_filter(study, work),
    ]


def select_in_hand(study: Study, work: Work, *selected: Any) -> Select:
    """``selected`` over the live annotations of the study's active assignments (work in
    hand, not counted yet) on the documents that count for ``work``: the dashboard's
    in-progress count."""
    return (
        select(*selected)
        .select_from(Assignment)
        .join(Document, Document.id == Assignment.document_id)
        .join(Annotation, (Annotation.assignment_id == Assignment.id) & is_live())
        .where(Assignment.study_id == study.id, Assignment.status == ACTIVE)
        .where(counted_workers(work), *document_filter(study, work))
    )


def is_llm(worker_id: str) -> bool:
    """Whether ``worker_id`` is an LLM annotator's: :func:`llm_worker`'s rule in Python, for
    the rules that hold an ID rather than a row (tests/test_llm_worker_rules.py: both agree)."""
    return worker_id.startswith(LLM_PREFIX)


def llm_worker(worker_id: Any = Assignment.worker_id) -> ColumnElement[bool]:
    """SQL: ``worker_id`` is an LLM annotator's. Its constants are spelt in the SQL (no
    parameter: the arrival's prepared statements use it, app/annotation/arrival_sql.py), and
    ``substr`` is case-sensitive on both databases where SQLite's ``LIKE`` is not."""
    prefix = literal_column(f"'{LLM_PREFIX}'")
    return (
        func.substr(worker_id, literal_column("1"), literal_column(str(len(LLM_PREFIX)))) == prefix
    )


def human_worker(worker_id: Any = Assignment.worker_id) -> ColumnElement[bool]:
    """SQL: ``worker_id`` is a human's (the figures', slots' and pages' default)."""
    return ~llm_worker(worker_id)


def counted_workers(work: Work) -> ColumnElement[bool]:
    """SQL on ``Assignment``: the workers whose work counts for ``work``."""
    if work.workers == HUMANS:
        return human_worker()
    if work.workers == EVERYONE:
        return true()
    return Assignment.worker_id == work.workers


def has_pass_mark(study: Study) -> bool:
    """Whether the study has a training phase (``settings["qualification"]``)."""
    return bool((study.settings or {}).get("qualification"))


def is_practice(studies: Iterable[Study]) -> ColumnElement[bool]:
    """SQL: the document belongs to the training phase of one of ``studies`` (a gold
    document of a study with a pass mark: a practice or a qualification document)."""
    marked = [study.id for study in studies if has_pass_mark(study)]
    if not marked:
        return false()
    return and_(Document.is_gold.is_(True), Document.study_id.in_(marked))


def document_filter(study: Study, work: Work) -> list[ColumnElement[bool]]:
    """WHERE conditions on ``Document``: the study's documents that count for ``work``."""
    conditions: list[ColumnElement[bool]] = [Document.study_id == study.id]
    if not work.include_practice and has_pass_mark(study):
        conditions.append(~is_practice([study]))
    return conditions


def role(study: Study) -> ColumnElement[str]:
    """SQL: the role of the ``Document`` in the query (:data:`ROLES`)."""
    checks = exists().where(GoldError.document_id == Document.id, GoldError.is_check.is_(True))
    training = (
        [(is_practice([study]), case((Document.is_practice.is_(True), ROLES[0]), else_=ROLES[1]))]
        if has_pass_mark(study)
        else []
    )
    return case(*training, (checks, ROLES[2]), else_=ROLES[3])


def review_status() -> ColumnElement[str]:
    """SQL: the review status of the ``Document`` in the query (``unreviewed`` without one)."""
    status = select(DocumentReview.status).where(DocumentReview.document_id == Document.id)
    return func.coalesce(status.scalar_subquery(), UNREVIEWED)


def columns(study: Study, work: Work) -> dict[str, ColumnElement[Any]]:
    """Every column of the work by name, as SQL over :func:`select_work`'s tables.

    ``document_id``, ``document`` (external id), ``role``, ``review_status``, ``worker_id``,
    ``assignment`` (token), ``assignment_id``, ``completion_code``, ``status`` (the
    assignment's; workers' layer only), ``id`` (the annotation's or layer row's),
    ``segment``, ``start``, ``end``, ``text``, ``category``, ``paired_segment``,
    ``paired_start``, ``paired_end``, ``paired_text``, ``paired_end_segment`` (as stored:
    set only when the earlier span ends in a later segment than it starts), ``comment``,
    ``attributes`` (JSON object or NULL), ``mark`` (the id shared by a multi-label mark's
    rows, one per category: its first row's; the adjudicated layer: each row its own),
    ``created_at`` (workers: when marked, or for an empty row when submitted; adjudicated:
    when decided) and ``segment_text`` (the annotated segment's text). The adjudicated
    layer has no assignment: those are NULL.
    """
    if work.layer == CONSENSUS:
        return _consensus_columns(study)
    row: Any = Annotation if work.layer == WORKERS else AdjudicatedError
    out: dict[str, ColumnElement[Any]] = {
        "document_id": Document.id,
        "document": Document.external_id,
        "role": role(study),
        "review_status": review_status(),
    }
    if work.layer == WORKERS:
        out |= {
            "worker_id": Assignment.worker_id,
            "assignment": Assignment.token,
            "assignment_id": Assignment.id,
            "completion_code": Assignment.completion_code,
            "status": Assignment.status,
        }
    else:
        out |= {
            "worker_id": literal(ADJUDICATED, String),
            "assignment": cast(null(), String),
            "assignment_id": null(),
            "completion_code": cast(null(), String),
        }
    for name in ("id", "segment", "start", "end", "text", "category", "comment", "attributes"):
        out[name] = getattr(row, name)
    # a multi-label mark's rows share their first row's id (docs/METRICS.md)
    out["mark"] = func.coalesce(Annotation.mark, Annotation.id) if work.layer == WORKERS else row.id
    for name in ("segment", "start", "end", "text", "end_segment"):
        out[f"paired_{name}"] = getattr(row, f"paired_{name}")
    out["created_at"] = (
        func.coalesce(Annotation.created_at, Assignment.submitted_at)
        if work.layer == WORKERS
        else AdjudicatedError.decided_at
    )
    text = select(Segment.text).where(
        Segment.document_id == Document.id, Segment.index == row.segment
    )
    out["segment_text"] = text.scalar_subquery()
    return out


def _consensus_columns(study: Study) -> dict[str, ColumnElement[Any]]:
    """:func:`columns` of the consensus layer: a unit's sentence is its span, no pair, no
    comment, ``created_at`` when the figures were computed, and its ``posterior``."""
    unit = ConsensusUnit
    nothing = cast(null(), String)
    text = select(
        func.substr(Segment.text, unit.start + 1, unit.end - unit.start, type_=String)
    ).where(Segment.document_id == Document.id, Segment.index == unit.segment)
    whole = select(Segment.text).where(
        Segment.document_id == Document.id, Segment.index == unit.segment
    )
    return {
        "document_id": Document.id,
        "document": Document.external_id,
        "role": role(study),
        "review_status": review_status(),
        "worker_id": literal(CONSENSUS, String),
        "assignment": nothing,
        "assignment_id": null(),
        "completion_code": nothing,
        "id": unit.id,
        "segment": unit.segment,
        "start": unit.start,
        "end": unit.end,
        "text": text.scalar_subquery(),
        "category": unit.category,
        "comment": nothing,
        "attributes": cast(null(), JSON),
        "mark": unit.id,
        **{f"paired_{n}": null() for n in ("segment", "start", "end", "end_segment")},
        "paired_text": nothing,
        "created_at": unit.created_at,
        "segment_text": whole.scalar_subquery(),
        "posterior": unit.posterior,
    }


def select_work(
    study: Study,
    work: Work,
    *selected: Any,
    document_id: int | None = None,
    marks_only: bool = False,
    ordered: bool = True,
) -> Select:
    """``selected`` (columns of :func:`columns`, or any SQL over the same tables) over the
    counted work, in export order: documents by position, then (workers) assignments in
    order, then segment, start and id. ``marks_only``: no empty rows; ``document_id``: one
    document's work; ``ordered=False``: no ORDER BY (a count, an existence test)."""
    if work.layer == WORKERS:
        mine = (Annotation.assignment_id == Assignment.id) & is_live()
        query = (
            select(*selected)
            .select_from(Assignment)
            .join(Document, Document.id == Assignment.document_id)
        )
        query = query.join(Annotation, mine) if marks_only else query.outerjoin(Annotation, mine)
        query = query.where(*assignment_filter(study, work))
        if work.in_progress:  # an active assignment without a live mark is not a row
            query = query.where(Annotation.id.is_not(None) | (Assignment.status != ACTIVE))
        order: tuple[Any, ...] = (
            Assignment.id,
            Annotation.segment,
            Annotation.start,
            Annotation.id,
        )
    elif work.layer == CONSENSUS:
        unit = ConsensusUnit
        above = (unit.document_id == Document.id) & (unit.posterior >= work.min_posterior)
        query = select(*selected).select_from(Document).join(unit, above)
        order = (unit.segment, unit.start, unit.category, unit.id)
    else:
        row = AdjudicatedError
        accepted = (row.document_id == Document.id) & (row.decision == "accepted")
        query = select(*selected).select_from(Document)
        query = query.join(row, accepted) if marks_only else query.outerjoin(row, accepted)
        reviewed = select(DocumentReview.document_id).where(
            DocumentReview.document_id == Document.id
        )
        if work.review_status == "done":
            reviewed = reviewed.where(DocumentReview.status == "done")
        query = query.where(reviewed.exists())
        order = (row.segment, row.start, row.id)
    if work.layer != WORKERS:  # the workers' layer has them in assignment_filter
        query = query.where(*document_filter(study, work))
    if document_id is not None:
        query = query.where(Document.id == document_id)
    return query.order_by(Document.position, Document.id, *order) if ordered else query


def select_documents(study: Study, work: Work, *selected: Any) -> Select:
    """``selected`` over the documents that count for ``work``, by position."""
    return (
        select(*selected)
        .select_from(Document)
        .where(*document_filter(study, work))
        .order_by(Document.position, Document.id)
    )


def select_segments(study: Study, work: Work) -> Select:
    """(document id, text) of every segment of the documents that count, in document order."""
    return (
        select(Segment.document_id, Segment.text)
        .join(Document, Document.id == Segment.document_id)
        .where(*document_filter(study, work))
        .order_by(Document.position, Document.id, Segment.index)
    )


def stream(session: Session, query: Select) -> Iterator[Row[Any]]:
    """The rows of ``query`` from a server-side cursor on Postgres, CHUNK_ROWS at a time."""
    options = query.execution_options(stream_results=True, yield_per=CHUNK_ROWS)
    result = session.connection().execute(options)
    for rows in result.partitions():
        yield from rows
