"""The worker actions' SQL, written once: the claims, the writes and the reads of a refusal.

Plain ``text()`` statements built at import: an action binds its values and runs them on its
handle (:mod:`app.annotation.handle`), with no statement construction, cache-key walk or ORM
unit of work per request (building Core statements per request cost more than running them).
Each writing statement carries the whole rule it enforces in its ``WHERE``, so it changes
nothing unless every condition holds:

- the claim: the token's assignment is live (``status = 'active'``; one place: :data:`LIVE`),
  it is locked (an ``UPDATE``, or :data:`LOCK`, takes the row lock, so two racing adds cannot
  both pass the duplicate guard), and the worker's activity is stamped;
- :func:`insert_annotation`: no live duplicate from another ``client_id``; the unique
  ``(assignment_id, client_id)`` decides a retry (``ON CONFLICT DO NOTHING``);
- a checked practice segment is frozen (``practice_checks``, empty outside practice).

These are the rules' only definitions: nothing in Python decides them again. On a refusal,
``STATE*``, ``EARLIER`` and :func:`duplicate_of` read the same conditions back so
:mod:`app.annotation.refusals` can word the answer.

Where the databases differ, a function spells the dialect's form of the one statement (typed
NULLs and null-safe equality; Postgres's writes that stamp in the same statement, where SQLite,
whose writers are serial and whose ``WITH`` takes no ``INSERT``/``UPDATE``, claims first and
writes after in its one transaction): :func:`add_statements`, :func:`remove_statements`,
:func:`submit_statements`.
"""

from __future__ import annotations

from functools import cache

from sqlalchemy import JSON, DateTime, Executable, Float, Integer, TextClause, bindparam, text

from app.models.changes import LOCK_SPACE, assignment_reason

TIMESTAMP = DateTime(timezone=True)

# The token's assignment, and what makes it writable: the one place to add a condition.
ROW = "assignments.id = :assignment_id AND assignments.token = :token"
LIVE = f"{ROW} AND status = 'active'"
STAMP = "last_seen_at = :now, engaged_at = COALESCE(engaged_at, :now)"
FROZEN_SEGMENT = (
    "EXISTS (SELECT 1 FROM practice_checks WHERE practice_checks.assignment_id = "
    ":assignment_id AND practice_checks.segment = :segment)"
)
FROZEN_ANNOTATION = (
    "EXISTS (SELECT 1 FROM practice_checks JOIN annotations ON annotations.assignment_id "
    "= practice_checks.assignment_id AND annotations.segment = practice_checks.segment "
    "WHERE practice_checks.assignment_id = :assignment_id AND annotations.id = :annotation_id)"
)
NOT_FROZEN_SEGMENT = f"NOT {FROZEN_SEGMENT}"
NOT_FROZEN_ANNOTATION = f"NOT {FROZEN_ANNOTATION}"


def _stamped(sql: str) -> TextClause:
    return text(sql).bindparams(bindparam("now", type_=TIMESTAMP))


# The token's fixed keys (cached per process, app/annotation/cache.py): they never change.
KEYS = text(
    "SELECT assignments.id, assignments.document_id, assignments.study_id, "
    "assignments.created_at, documents.created_at AS document_created_at, "
    "studies.taxonomy_hash FROM assignments "
    "JOIN documents ON documents.id = assignments.document_id "
    "JOIN studies ON studies.id = assignments.study_id WHERE assignments.token = :token"
).columns(
    id=Integer,
    document_id=Integer,
    study_id=Integer,
    created_at=TIMESTAMP,
    document_created_at=TIMESTAMP,
)

CLAIM = _stamped(f"UPDATE assignments SET {STAMP} WHERE {LIVE}")
CLAIM_FOR_ADD = _stamped(f"UPDATE assignments SET {STAMP} WHERE {LIVE} AND {NOT_FROZEN_SEGMENT}")
CLAIM_FOR_REMOVE = _stamped(
    f"UPDATE assignments SET {STAMP} WHERE {LIVE} AND {NOT_FROZEN_ANNOTATION}"
)
CLAIM_POSITION = _stamped(
    f"UPDATE assignments SET {STAMP}, current_segment = :segment WHERE {LIVE}"
)

# What the submit's rules and its scoring read of the token's assignment, its study, its
# document and its session (app/annotation/submit.py): one row, no lock.
SUBMIT_FACTS = text(
    "SELECT assignments.id, assignments.study_id, assignments.document_id, "
    "assignments.worker_id, assignments.status, assignments.completion_code, "
    "assignments.platform, assignments.platform_data, assignments.scores, "
    "assignments.current_segment, assignments.session_id, "
    "studies.suggestions, studies.settings, studies.completion_url, studies.taxonomy_hash, "
    "documents.external_id, documents.is_gold, documents.created_at AS document_created_at, "
    "work_sessions.documents AS session_documents, "
    "work_sessions.completion_code AS session_code "
    "FROM assignments "
    "JOIN studies ON studies.id = assignments.study_id "
    "JOIN documents ON documents.id = assignments.document_id "
    "LEFT JOIN work_sessions ON work_sessions.id = assignments.session_id "
    "WHERE assignments.token = :token"
).columns(platform_data=JSON, scores=JSON, settings=JSON, document_created_at=TIMESTAMP)
# The segments a worker has reached (app/annotation/timing.py's all-segments-seen rule).
SEEN = text("SELECT segment FROM segment_times WHERE assignment_id = :assignment_id")

# How many times the assignment's live annotations changed: rows added plus rows removed. An
# annotation is never updated but to be removed (an edit is a remove and an add) and a removal
# is never undone, so both counts only grow: the same count, the same live annotations.
MARK_CHANGES = (
    "SELECT COUNT(*) + COUNT(removed_at) FROM annotations WHERE assignment_id = :assignment_id"
)

# The submit's scoring reads (app/annotation/assignment_scores.py), one round trip: the
# document's suggestions (kind 0, in (segment, start, id) order); the assignment's live
# annotations (kind 1, in id order), only when there are suggestions (else the score reads
# nothing more); and MARK_CHANGES (kind 2, in ``id``), which the scored write reads again.
SUBMIT_SPANS = text(
    'SELECT kind, id, segment, "start", "end", category, source, text FROM ('
    'SELECT 0 AS kind, id, segment, start_offset AS "start", end_offset AS "end", category, '
    "detector AS source, text FROM suggestions WHERE document_id = :document_id "
    "UNION ALL SELECT 1, id, segment, start_offset, end_offset, category, NULL, text "
    "FROM annotations WHERE assignment_id = :assignment_id AND removed_at IS NULL "
    "AND EXISTS (SELECT 1 FROM suggestions WHERE document_id = :document_id) "
    f"UNION ALL SELECT 2, ({MARK_CHANGES}), NULL, NULL, NULL, NULL, NULL, NULL"
    ") AS spans ORDER BY kind, CASE WHEN kind = 0 THEN segment END, "
    'CASE WHEN kind = 0 THEN "start" END, id'
)

# The submit's write: status, times, the code kept or new (:code: NULL for a qualification
# attempt, which gets none), the activity stamp, with ``scored`` the worker's scores too, and
# only while the row is live (and, scored, its live annotations are those scored:
# MARK_CHANGES as read), so a submit, an abandon or a change committed since the reads makes
# it write nothing; returning the code. The study's change log gets its row in the same
# transaction (app/models/changes.py: the served report goes stale).
_SUBMIT_SET = (
    "UPDATE assignments SET status = 'submitted', submitted_at = :now, "
    f"completion_code = COALESCE(completion_code, :code), {STAMP}"
)
_LOGGED = f"'{assignment_reason('submitted')}'"


def _submit_guard(scored: bool) -> str:
    return f"{LIVE} AND ({MARK_CHANGES}) = :changes" if scored else LIVE


def _with_scores(statement: TextClause, scored: bool) -> TextClause:
    return statement.bindparams(bindparam("scores", type_=JSON)) if scored else statement


@cache
def submit_statements(dialect: str, scored: bool) -> tuple[Executable, Executable]:
    """The submit's lock and write (:meth:`Handle.pair`): on Postgres the live row's lock and
    then the study's change log's shared lock (held from the change's row to the commit, so
    the figure job's exclusive lock sees every change committed), then the write with its log
    row in one statement; on SQLite (serial writers) the log row inserted on the same
    condition, then the write."""
    scores = ", scores = :scores" if scored else ""
    guard = _submit_guard(scored)
    if dialect == "postgresql":
        lock = text(
            f"SELECT pg_advisory_xact_lock_shared({LOCK_SPACE} + study_id) FROM "
            f"(SELECT study_id FROM assignments WHERE {LIVE} FOR NO KEY UPDATE) AS live"
        )
        write = _stamped(
            f"WITH done AS ({_SUBMIT_SET}{scores} WHERE {guard} "
            "RETURNING completion_code, study_id), "
            "logged AS (INSERT INTO work_changes (study_id, reason, created_at) "
            f"SELECT study_id, {_LOGGED}, :now FROM done) "
            "SELECT completion_code FROM done"
        )
        return lock, _with_scores(write, scored)
    log = _stamped(
        "INSERT INTO work_changes (study_id, reason, created_at) "
        f"SELECT study_id, {_LOGGED}, :now FROM assignments WHERE {guard}"
    )
    write = _stamped(f"{_SUBMIT_SET}{scores} WHERE {guard} RETURNING completion_code")
    return log, _with_scores(write, scored)


# The rows of the mark that annotation :annotation_id belongs to: a multi-label mark's other
# rows name its first row in ``mark``, and a remove of any of them takes them all.
MARK_HEAD = (
    "COALESCE((SELECT head.mark FROM annotations head WHERE head.id = :annotation_id "
    "AND head.assignment_id = :assignment_id), :annotation_id)"
)
OF_MARK = f"assignment_id = :assignment_id AND {MARK_HEAD} IN (id, mark)"

# A remove: every row of the mark stamped removed (idempotent), with the claim's rule
# repeated (the claim's row count is not read), returning the rows' ids.
REMOVE_CHECKED = (
    f"UPDATE annotations SET removed_at = COALESCE(removed_at, :now) WHERE {OF_MARK} "
    f"AND EXISTS (SELECT 1 FROM assignments WHERE {LIVE}) AND {NOT_FROZEN_ANNOTATION}"
)

# Postgres's claim for an add or a remove: LOCK takes the lock a claim takes, writing
# nothing; the write that follows (a new statement: a snapshot taken after the lock, so an add
# committed before it is seen) repeats the claim's rule and stamps the activity only when it
# stored, so a refusal, even committed (a pair run alone), has changed nothing. (One
# statement would take one snapshot before the lock: two racing duplicates would both pass
# the guard.)
LOCK = text(f"SELECT 1 FROM assignments WHERE {LIVE} FOR NO KEY UPDATE")


@cache
def lock_statement(dialect: str) -> Executable:
    """The live row's lock, taken first by an action of several writes (an edit): on
    Postgres :data:`LOCK`; SQLite's writer holds the database from its ``BEGIN IMMEDIATE``,
    so there the same read locks nothing more."""
    return LOCK if dialect == "postgresql" else text(f"SELECT 1 FROM assignments WHERE {LIVE}")


STAMP_IF = f"UPDATE assignments SET {STAMP} WHERE {LIVE} AND EXISTS (SELECT 1 FROM {{}})"


@cache
def remove_statements(dialect: str) -> tuple[Executable, Executable]:
    """A remove's claim and write (:meth:`Handle.pair`), returning the removed rows' ids: on
    Postgres LOCK, then the write stamping the activity when it removed; on SQLite the claim
    (its stamp rolled back with a refusal), then the write."""
    if dialect == "postgresql":
        write = _stamped(
            f"WITH gone AS ({REMOVE_CHECKED} RETURNING id), "
            f"stamp AS ({STAMP_IF.format('gone')}) SELECT id FROM gone"
        )
        return LOCK, write
    return CLAIM_FOR_REMOVE, _stamped(f"{REMOVE_CHECKED} RETURNING id")


# What a position report's time budget needs (app/annotation/timing.py): the last report's
# time and the seconds stored so far.
REPORTED = text(
    "SELECT MAX(updated_at) AS last, COALESCE(SUM(active_seconds), 0) AS total "
    "FROM segment_times WHERE assignment_id = :assignment_id"
).columns(last=TIMESTAMP, total=Float)


@cache
def add_seconds(dialect: str) -> TextClause:
    """One position's seconds, every segment's in one upsert: ``:seconds`` is a JSON object
    of segment index -> seconds (the segments seen with 0), each added to its row (a new
    row for a segment not seen before)."""
    rows = (
        "SELECT :assignment_id, CAST(key AS INTEGER), CAST(value AS DOUBLE PRECISION), :now "
        "FROM json_each_text(CAST(:seconds AS JSON))"
        if dialect == "postgresql"
        else "SELECT :assignment_id, CAST(key AS INTEGER), CAST(value AS REAL), :now "
        "FROM json_each(:seconds) WHERE true"  # SQLite: WHERE parses the upsert's ON
    )
    return text(
        "INSERT INTO segment_times (assignment_id, segment, active_seconds, updated_at) "
        f"{rows} ON CONFLICT (assignment_id, segment) DO UPDATE SET "
        "active_seconds = segment_times.active_seconds + excluded.active_seconds, "
        "updated_at = excluded.updated_at"
    ).bindparams(bindparam("now", type_=TIMESTAMP))


# Suggestion events (app/annotation/hint_events.py): the ids narrowed to those the worker is
# shown before any write, then each (suggestion, event) stored once.
INSERT_EVENT = _stamped(
    "INSERT INTO suggestion_events (assignment_id, suggestion_id, event, created_at) "
    "VALUES (:assignment_id, :suggestion_id, :event, :now) "
    "ON CONFLICT (assignment_id, suggestion_id, event) DO NOTHING"
)

# The annotations columns an add writes, in order, with the SQL type a NULL needs on Postgres.
ANNOTATION_COLUMNS = (
    ("segment", "segment", "INTEGER"),
    ("start", "start_offset", "INTEGER"),
    ("end", "end_offset", "INTEGER"),
    ("text", "text", "TEXT"),
    ("category", "category", "TEXT"),
    ("paired_segment", "paired_segment", "INTEGER"),
    ("paired_start", "paired_start", "INTEGER"),
    ("paired_end", "paired_end", "INTEGER"),
    ("paired_text", "paired_text", "TEXT"),
    ("paired_end_segment", "paired_end_segment", "INTEGER"),
    ("comment", "comment", "TEXT"),
    ("client_id", "client_id", "TEXT"),
    ("suggestion_id", "suggestion_id", "INTEGER"),
    ("attributes_json", "attributes", "JSON"),  # JSON text or NULL (app/annotation/add.py)
    ("mark", "mark", "INTEGER"),  # a multi-label mark's first row, on its other rows
)
# A duplicate: the same span, category and pair (the page flashes the existing mark).
DUPLICATE_COLUMNS = (
    "segment",
    "start_offset",
    "end_offset",
    "category",
    "paired_segment",
    "paired_start",
    "paired_end",
)


def _duplicates(dialect: str, what: str) -> str:
    """``SELECT what`` of the assignment's live annotations under another ``client_id`` with
    the same span, category and pair: the duplicate guard, written once for the insert's
    ``NOT EXISTS`` and for naming the existing mark (:data:`duplicate_of`)."""
    postgres = dialect == "postgresql"
    name_of = {column: name for name, column, _type in ANNOTATION_COLUMNS}
    same = " AND ".join(
        f"a.{column} IS NOT DISTINCT FROM "
        f"{_value(postgres, name_of[column], 'TEXT' if column == 'category' else 'INTEGER')}"
        if postgres
        else f"a.{column} IS :{name_of[column]}"
        for column in DUPLICATE_COLUMNS
    )
    return (
        f"SELECT {what} FROM annotations a WHERE a.assignment_id = :assignment_id "
        f"AND a.removed_at IS NULL AND a.client_id <> :client_id AND {same}"
    )


def _value(postgres: bool, name: str, sql_type: str) -> str:
    return f"CAST(:{name} AS {sql_type})" if postgres else f":{name}"


@cache
def insert_annotation(dialect: str, checked: bool = False) -> TextClause:
    """``INSERT … SELECT … WHERE NOT EXISTS (live duplicate) ON CONFLICT DO NOTHING
    RETURNING id`` for ``dialect`` (``postgresql`` or ``sqlite``). ``checked`` repeats the
    claim's conditions (live assignment, segment not frozen): sent after the claim in one
    pair (:func:`add_statements`), it must store nothing when the claim found nothing."""
    postgres = dialect == "postgresql"
    columns = ", ".join(column for _name, column, _type in ANNOTATION_COLUMNS)
    values = ", ".join(_value(postgres, name, kind) for name, _column, kind in ANNOTATION_COLUMNS)
    null_time = "CAST(NULL AS TIMESTAMP WITH TIME ZONE)" if postgres else "NULL"
    return text(
        f"INSERT INTO annotations (assignment_id, {columns}, created_at, removed_at) "
        f"SELECT :assignment_id, {values}, :now, {null_time} "
        f"WHERE NOT EXISTS ({_duplicates(dialect, '1')}) "
        + (
            f"AND EXISTS (SELECT 1 FROM assignments WHERE {LIVE}) AND {NOT_FROZEN_SEGMENT} "
            if checked
            else ""
        )
        + "ON CONFLICT (assignment_id, client_id) DO NOTHING RETURNING id"
    ).bindparams(bindparam("now", type_=TIMESTAMP))


@cache
def add_statements(dialect: str) -> tuple[Executable, Executable]:
    """An add's claim and write (:meth:`Handle.pair`), returning the new row's id: on Postgres
    LOCK, then :func:`insert_annotation` (``checked``) stamping the activity when it stored;
    on SQLite :data:`CLAIM_FOR_ADD` (its stamp rolled back with a refusal), then the insert
    (``checked``: the claim's row count is not read)."""
    if dialect == "postgresql":
        insert = insert_annotation(dialect, checked=True).text
        write = _stamped(
            f"WITH stored AS ({insert}), stamp AS ({STAMP_IF.format('stored')}) "
            "SELECT id FROM stored"
        )
        return LOCK, write
    return CLAIM_FOR_ADD, insert_annotation(dialect, checked=True)


# Why a claim or a write found nothing, read on a refusal only (app/annotation/refusals.py):
# the claim's conditions as columns (the practice freeze for an add's segment, a removed
# annotation, or not read), the annotation stored under a client_id, the duplicate's id.
STATE = text(f"SELECT status, 0 AS frozen FROM assignments WHERE {ROW}")
STATE_FOR_ADD = text(
    f"SELECT status, CASE WHEN {FROZEN_SEGMENT} THEN 1 ELSE 0 END AS frozen "
    f"FROM assignments WHERE {ROW}"
)
STATE_FOR_REMOVE = text(
    f"SELECT status, CASE WHEN {FROZEN_ANNOTATION} THEN 1 ELSE 0 END AS frozen "
    f"FROM assignments WHERE {ROW}"
)
EARLIER = text(
    "SELECT id, "
    + ", ".join(f'{column} AS "{name}"' for name, column, _type in ANNOTATION_COLUMNS)
    + ", created_at FROM annotations "
    "WHERE assignment_id = :assignment_id AND client_id = :client_id"
).columns(created_at=TIMESTAMP)


# The other categories of the multi-label mark whose first row is :mark, in order.
MARK_CATEGORIES = text(
    "SELECT category FROM annotations WHERE assignment_id = :assignment_id AND mark = :mark "
    "ORDER BY id"
)


@cache
def duplicate_of(dialect: str) -> TextClause:
    """The mark (its first row's id) of the live annotation an add duplicates (the first,
    when several)."""
    return text(f"{_duplicates(dialect, 'COALESCE(a.mark, a.id)')} ORDER BY a.id LIMIT 1")
