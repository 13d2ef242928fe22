"""The exported rows (CONTRACT's CSV columns) of the counted work, shared by the csv (both
paths) and jsonl exports: the columns as SQL over :func:`app.rules.work.select_work`,
streamed from a server-side cursor on Postgres in chunks, constant memory for a million rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import ColumnElement, Integer, String, case, cast, func, literal, null
from sqlalchemy.orm import Session

from app.documents.attributes import attribute_ids
from app.errors import InvalidInput
from app.models import Study, isoformat
from app.rules.work import ADJUDICATED, CONSENSUS, Work, columns, select_work, stream

CSV_COLUMNS = (
    "study",
    "document",
    "segment",
    "span_text",
    "span_start",
    "span_end",
    "category",
    "paired_segment",
    "paired_text",
    "paired_start",
    "paired_end",
    "comment",
    "worker_id",
    "assignment",
    "completion_code",
    "created_at",
    # the segment where the paired span ends, so that the default columns describe every
    # span stored: an earlier span may run across segment breaks (paired_segment where it
    # starts, paired_end an offset in this one); empty without a pair
    "paired_end_segment",
)

# Optional columns, after CSV_COLUMNS in this order when asked for: the category's label
# from the study's taxonomy and the whole text of the annotated segment.
OPTIONAL_COLUMNS = ("category_label", "segment_text")
# once optional, now among CSV_COLUMNS: still accepted by --columns, adding nothing
NOW_DEFAULT = ("paired_end_segment",)
# Then, on their own: the document's role when practice documents are included, and the
# document's review status on the adjudicated layer.
ROLE, REVIEW_STATUS = "role", "review_status"
POSTERIOR = "posterior"  # the consensus layer's unit's MACE posterior
MARK, ATTRIBUTE = "mark", "attribute."


def check_columns(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The asked-for optional columns in OPTIONAL_COLUMNS order; a column now among the
    default ones (:data:`NOW_DEFAULT`) adds nothing; unknown names refused."""
    unknown = [n for n in names if n not in OPTIONAL_COLUMNS and n not in NOW_DEFAULT]
    if unknown:
        raise InvalidInput(
            f"unknown export column {unknown[0]!r}; optional columns: {', '.join(OPTIONAL_COLUMNS)}"
        )
    return tuple(n for n in OPTIONAL_COLUMNS if n in names)


def taxonomy_columns(study: Study | None) -> tuple[str, ...]:
    """The columns a taxonomy adds, last: ``mark`` (multi_label: the id a mark's rows, one
    per category, share) and ``attribute.<id>`` for each declared attribute."""
    taxonomy = (study.taxonomy if study is not None else None) or {}
    mark = (MARK,) if taxonomy.get("multi_label") else ()
    return mark + tuple(ATTRIBUTE + key for key in attribute_ids(taxonomy)) if taxonomy else ()


def column_names(
    work: Work, extra_columns: tuple[str, ...] = (), study: Study | None = None
) -> tuple[str, ...]:
    """The exported columns: CSV_COLUMNS, the optional ones asked for, ``role`` when
    practice documents are included, ``review_status`` on the adjudicated layer,
    ``posterior`` on the consensus layer, then :func:`taxonomy_columns`."""
    names = (*CSV_COLUMNS, *extra_columns)
    if work.include_practice:
        names += (ROLE,)
    if work.layer == ADJUDICATED:
        names += (REVIEW_STATUS,)
    if work.layer == CONSENSUS:
        names += (POSTERIOR,)
    return names + taxonomy_columns(study)


def export_columns(
    study: Study, work: Work, extra_columns: tuple[str, ...] = ()
) -> list[ColumnElement[Any]]:
    """The SQL of each exported column (:func:`column_names`), over the counted work."""
    work_columns = columns(study, work)
    labels = {
        c["id"]: c["label"]
        for c in (study.taxonomy or {}).get("categories", [])
        if c.get("label") is not None
    }
    renamed = {"span_text": "text", "span_start": "start", "span_end": "end"}
    sql: dict[str, ColumnElement[Any]] = {
        name: work_columns[renamed.get(name, name)] for name in CSV_COLUMNS[1:-1]
    }
    sql["study"] = literal(study.slug, String)
    sql["category_label"] = (
        case(labels, value=work_columns["category"]) if labels else cast(null(), String)
    )
    sql["segment_text"] = work_columns["segment_text"]
    sql["paired_end_segment"] = func.coalesce(
        work_columns["paired_end_segment"], work_columns["paired_segment"]
    )
    sql[ROLE], sql[REVIEW_STATUS] = work_columns["role"], work_columns["review_status"]
    if POSTERIOR in work_columns:
        sql[POSTERIOR] = work_columns[POSTERIOR]
    sql[MARK] = cast(work_columns["mark"], Integer)
    for key in attribute_ids(study.taxonomy or {"categories": []}):
        sql[ATTRIBUTE + key] = cast(work_columns["attributes"][key].as_string(), String)
    return [sql[name] for name in column_names(work, extra_columns, study)]


def row_values(
    session: Session, study: Study, work: Work | None = None, extra_columns: tuple[str, ...] = ()
) -> Iterator[tuple[Any, ...]]:
    """The values of each exported row (:func:`column_names`), typed (None for empty
    fields, ``created_at`` as ISO 8601 text). The adjudicated layer's rows have worker_id
    ``adjudicated``, no assignment or completion code, created_at when decided."""
    work = work or Work()
    when = CSV_COLUMNS.index("created_at")
    query = select_work(study, work, *export_columns(study, work, extra_columns))
    for row in stream(session, query):
        yield (*row[:when], isoformat(row[when]), *row[when + 1 :])


def annotation_rows(
    session: Session, study: Study, work: Work | None = None, extra_columns: tuple[str, ...] = ()
) -> Iterator[dict[str, Any]]:
    """Each exported row as a dict keyed by :func:`column_names`."""
    work = work or Work()
    names = column_names(work, extra_columns, study)
    scales = {
        a["id"]
        for c in (study.taxonomy or {}).get("categories", [])
        for a in c.get("attributes", ())
        if a["kind"] == "scale"
    }
    for values in row_values(session, study, work, extra_columns):
        row = dict(zip(names, values, strict=True))
        keys = [name for name in row if name.startswith(ATTRIBUTE)]
        if keys:  # one object, typed as declared
            given = {k[len(ATTRIBUTE) :]: row.pop(k) for k in keys}
            row["attributes"] = {
                k: int(v) if k in scales else v for k, v in given.items() if v is not None
            }
        yield row
