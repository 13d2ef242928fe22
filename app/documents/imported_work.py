"""Annotations that came inside an imported file, stored as submitted work.

Without ``--gold``, each annotator (or vote) of an interchange file becomes one submitted
assignment of its document, ``worker_id`` as the file names it (or ``import-<n>``), with its
annotations live, so that exports, reports and agreement count them like any worker's. A
file that gives only aggregate errors with vote counts (SNaC) is kept so with ``--as-work``
(:func:`work_from_votes`): one imported worker per vote rank.
Label Studio ``predictions`` become detector suggestions (detector ``import:<model>``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from app.documents.attributes import check_attributes, coerce_attributes
from app.documents.locating import crossing_text, locate, locate_antecedent
from app.documents.records import DocumentInput, GoldSpan, ImportedSpan
from app.documents.text import storable
from app.errors import InvalidInput
from app.models import Annotation, Assignment, Study, Suggestion, span_place, utcnow

IMPORTED_PLATFORM = "import"
CHUNK_ROWS = 5000
VOTE_RANK = "vote_rank"  # platform_data key of an imported worker that is a vote rank
MAX_WORKER_ID_CHARS = 200  # as for workers arriving through the API
MAX_COMMENT_CHARS = 5_000


@dataclass
class ImportedWork:
    assignments: int = 0
    annotations: int = 0
    suggestions: int = 0


def check_spans(study: Study, document: DocumentInput) -> None:
    """Every imported span names a known category, its text sits at its offsets and its
    attributes are declared (values read as the declarations say: "3" for a scale is 3).
    In a study without ``multi_label``, a mark of several categories becomes one mark per
    category first."""
    categories = {c["id"]: c for c in study.taxonomy["categories"]}
    known = set(categories)
    where = f"document {document.external_id!r}"
    for worker in document.empty_workers:
        if not worker.strip() or len(worker) > MAX_WORKER_ID_CHARS or not storable(worker):
            raise InvalidInput(f"{where}: worker id {worker[:40]!r} is not a usable worker id")
    if not study.taxonomy.get("multi_label"):  # several categories: a mark for each
        document.work = [
            replace(span, category=label, also=())
            for span in document.work
            for label in (span.category, *span.also)
        ]
    for span in document.work:
        labels = [span.category, *span.also]
        if any(label not in known for label in labels):
            continue  # named below
        chosen = [categories[c] for c in labels]
        try:
            span.attributes = check_attributes(coerce_attributes(span.attributes, chosen), chosen)
        except InvalidInput as exc:
            raise InvalidInput(
                f"{where}: {exc} (declare the attributes in the taxonomy, e.g. "
                "`marginalia taxonomy from-thresh`)"
            ) from None
        if not span.worker_id.strip() or len(span.worker_id) > MAX_WORKER_ID_CHARS:
            raise InvalidInput(
                f"{where}: worker id {span.worker_id[:40]!r} must be 1 to "
                f"{MAX_WORKER_ID_CHARS} characters"
            )
        if not storable(span.worker_id):
            raise InvalidInput(f"{where}: a worker id contains a NUL or an unpaired surrogate")
        if len(span.comment) > MAX_COMMENT_CHARS or not storable(span.comment):
            raise InvalidInput(
                f"{where}: a comment is longer than {MAX_COMMENT_CHARS} characters or "
                "contains a NUL or an unpaired surrogate"
            )
    for hint in document.suggestions:
        if not storable(hint.detector):
            raise InvalidInput(f"{where}: a model version contains a NUL or unpaired surrogate")
    for span in [*document.work, *document.suggestions]:
        unknown = [c for c in (span.category, *getattr(span, "also", ())) if c not in known]
        if unknown:
            raise InvalidInput(
                f"{where}: category {unknown[0]!r} is not a category of study "
                f"{study.slug!r} (make the taxonomy with `marginalia taxonomy from-thresh` "
                "or add it)"
            )
        spans = [(span.segment, span.start, span.end, span.text)]
        if isinstance(span, ImportedSpan) and span.paired is not None:
            if span.paired_end_segment is not None:
                _check_crossing(span, categories[span.category], document.segments, where)
            else:
                spans.append(span.paired)
        for segment, start, end, text in spans:
            if not 0 <= segment < len(document.segments):
                raise InvalidInput(f"{where}: segment {segment} does not exist")
            if document.segments[segment][start:end] != text or not 0 <= start < end:
                raise InvalidInput(
                    f"{where}: segment {segment}: offsets {start}-{end} do not hold {text[:40]!r}"
                )


def work_from_votes(document: DocumentInput) -> None:
    """The document's aggregate errors (``document.gold``: text, category, votes, offsets when
    the file gives them) as imported work, by vote rank: worker ``vote-k`` marks every error
    that at least k annotators marked, so each error's votes come back in every export. Each
    span is placed at its offsets, else by the locate rule; a span that cannot be placed is
    counted in ``document.unplaced`` and not stored; a document the file gives no error is a
    submission of ``vote-1`` with no mark (its annotators found nothing: a clean document).
    ``document.gold`` is emptied."""
    if not document.gold:
        document.empty_workers.append("vote-1")
        document.vote_workers.add("vote-1")
    taken: dict[tuple[int, str, str], set[tuple[int, int]]] = {}
    for error in document.gold:
        placed = _place(document.segments, error, taken)
        if placed is None:
            document.unplaced += 1
            continue
        start, end = placed
        paired = None
        if error.antecedents:
            found = locate_antecedent(document.segments, error.segment, start, error.antecedents[0])
            if found is not None and found[1].found:
                where = found[1]
                text = document.segments[found[0]][where.start : where.end]
                paired = (found[0], where.start, where.end, text)
        text = document.segments[error.segment][start:end]
        for rank in range(1, error.votes + 1):
            document.work.append(
                ImportedSpan(
                    f"vote-{rank}", error.segment, start, end, text, error.category, paired
                )
            )
            document.vote_workers.add(f"vote-{rank}")
    document.gold = []


def _place(
    segments: list[str], error: GoldSpan, taken: dict[tuple[int, str, str], set[tuple[int, int]]]
) -> tuple[int, int] | None:
    if not 0 <= error.segment < len(segments):
        return None
    text = segments[error.segment]
    if error.offsets is not None:
        start, end = error.offsets
        if 0 <= start < end <= len(text) and text[start:end] == error.text:
            return start, end
    used = taken.setdefault((error.segment, error.text.strip(), error.category), set())
    where = locate(text, error.text, taken=used)
    if not where.found:
        return None
    used.add((where.start, where.end))  # type: ignore[arg-type]
    return where.start, where.end  # type: ignore[return-value]


def _check_crossing(span: ImportedSpan, category: dict, segments: list[str], where: str) -> None:
    """An earlier span across segment breaks: allowed by the category, inside the document,
    its text the pieces joined (app/annotation/pairing.py), before the annotated span."""
    assert span.paired is not None and span.paired_end_segment is not None
    segment, start, end, text = span.paired
    to = span.paired_end_segment
    relation = category["kind"] == "relation"  # the other span anywhere (pairing.py)
    if not category.get("pair_across_segments") and not relation:
        raise InvalidInput(
            f"{where}: category {span.category!r} takes its earlier span within one segment "
            "(the taxonomy does not set pair_across_segments)"
        )
    if not 0 <= segment < to < len(segments) or not (
        0 <= start < len(segments[segment]) and 0 < end <= len(segments[to])
    ):
        raise InvalidInput(f"{where}: segments {segment}..{to}: offsets {start}-{end} do not exist")
    if crossing_text(segments, segment, start, to, end) != text:
        raise InvalidInput(
            f"{where}: segments {segment}..{to}: offsets {start}-{end} do not hold {text[:40]!r}"
        )
    if not relation and (to > span.segment or (to == span.segment and end > span.start)):
        raise InvalidInput(f"{where}: the paired span must come before the annotated span")


def _token() -> str:
    """An unguessable token that never starts with ``-`` (a spreadsheet formula)."""
    while (token := secrets.token_urlsafe(18)).startswith("-"):
        pass
    return token


def store_imported_work(
    session: Session, study: Study, document_ids: list[int], documents: list[DocumentInput]
) -> ImportedWork:
    """Store each document's imported annotations and suggestions (caller commits; the
    spans were checked by :func:`check_spans` before the write transaction began). Bulk
    inserts of plain rows (no ORM object per row: a panel's batch holds tens of thousands of
    marks); the caller marks the study's change log (a Core write)."""
    counts = ImportedWork()
    moment = utcnow()
    assignments: list[dict] = []
    marked: list[list[ImportedSpan]] = []  # each assignment's spans, in the same order
    suggestions: list[dict] = []
    for document_id, document in zip(document_ids, documents, strict=True):
        by_worker: dict[str, list[ImportedSpan]] = {}
        for span in document.work:
            by_worker.setdefault(span.worker_id, []).append(span)
        for worker_id in document.empty_workers:
            by_worker.setdefault(worker_id, [])
        for worker_id, spans in by_worker.items():
            assignments.append(
                {
                    "token": _token(),
                    "study_id": study.id,
                    "document_id": document_id,
                    "worker_id": worker_id,
                    "platform": IMPORTED_PLATFORM,
                    # a vote rank is not an annotator: compare counts its documents at every
                    # K, and the report says agreement among vote ranks is not inter-annotator
                    "platform_data": {"imported": True}
                    | ({VOTE_RANK: True} if worker_id in document.vote_workers else {}),
                    "status": "submitted",
                    "current_segment": max((s.segment for s in spans), default=0),
                    "scores": {},
                    "submitted_at": moment,
                    "created_at": moment,
                    "last_seen_at": moment,
                    "engaged_at": moment,
                }
            )
            marked.append(spans)
            counts.assignments += 1
            counts.annotations += len(spans)
        suggestions.extend(
            {
                "document_id": document_id,
                **span_place(s),
                "score": s.score,
                "detector": s.detector[:100],
                "detector_version": "imported",
            }
            for s in document.suggestions
        )
        counts.suggestions += len(document.suggestions)
    ids = _inserted(session, Assignment, assignments)
    rows = [
        {"assignment_id": assignment_id, **_annotation(span, n, moment)}
        for assignment_id, spans in zip(ids, marked, strict=True)
        for n, span in enumerate(spans)
    ]
    spans = [span for found in marked for span in found]
    if any(span.also for span in spans):  # a multi-label mark: a row per further category
        heads = _inserted(session, Annotation, rows)
        rows = [
            {
                **head_row,
                "category": label,
                "mark": head,
                "client_id": f"{head_row['client_id']}.{k}",
            }
            for head, head_row, span in zip(heads, rows, spans, strict=True)
            for k, label in enumerate(span.also, 1)
        ]
    for chunk in _chunks(rows):
        session.execute(insert(Annotation), chunk)  # ORM: start/end → *_offset
    for chunk in _chunks(suggestions):
        session.execute(insert(Suggestion), chunk)
    return counts


def _chunks(rows: list[dict], size: int = CHUNK_ROWS) -> Iterator[list[dict]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _inserted(session: Session, model: Any, rows: list[dict]) -> list[int]:
    """Insert ``rows`` of ``model`` in chunks; their ids, in the rows' order."""
    statement = insert(model).returning(model.id, sort_by_parameter_order=True)
    ids: list[int] = []
    for chunk in _chunks(rows):
        ids.extend(session.scalars(statement, chunk))
    return ids


def _annotation(span: ImportedSpan, number: int, moment) -> dict:
    paired = span.paired
    return {
        **span_place(span),
        "paired_segment": paired[0] if paired else None,
        "paired_start": paired[1] if paired else None,
        "paired_end": paired[2] if paired else None,
        "paired_text": paired[3] if paired else None,
        "paired_end_segment": span.paired_end_segment if paired else None,
        "comment": span.comment,
        "attributes": span.attributes or None,
        "mark": None,
        "client_id": f"import-{number}",
        "created_at": moment,
    }
