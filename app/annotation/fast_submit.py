"""The common submit in two or three round trips on Postgres (issue 31: "arrivals as cheap as
adds").

``POST /api/assignments/<token>/submit`` through the route (:func:`app.web.api.submitted`)
locks the row, loads it with its study (its taxonomy parsed) and document through the ORM,
scores the worker against the document's suggestions and flushes the submit at commit:
``BEGIN``, ``SELECT … FOR UPDATE``, the scoring's reads, ``UPDATE``, ``COMMIT``, and most of
its CPU in the ORM. The common submit needs none of that. The fast lane
(:class:`app.web.fast_lane.FastLane`) answers it on the driver
(:class:`app.annotation.hot_sql.Driver`), each statement committed as it runs (``alone``):

1. ``hot_sql.SUBMIT_FACTS``: what the submit's rules and its scoring read of the assignment,
   its study and its document, one row, no lock. From it, transient (never session-added)
   ``Assignment``, ``Study`` and ``Document`` objects, and
   :func:`app.annotation.assignments.plain_submit` (the rules' own functions) decides whether
   this submit only scores and writes its row: active, no segments to have seen, no pause
   rule, no qualification attempt;
2. when the study scores suggestions (``hidden`` or ``shown``, the default):
   :func:`app.quality.assignment_scores.score_against_suggestions`, the route's own, reads the
   document's suggestions, the worker's live annotations and how often those changed
   (``hot_sql.SUBMIT_SPANS``, one round trip), with the segment texts and the taxonomy's
   scopes from the hot path's per-process caches (:func:`app.annotation.hot_cache.texts_of`,
   :func:`app.annotation.hot_cache.taxonomy_of`);
3. ``hot_sql.LOCK_FOR_SUBMIT`` (the row's lock, then the study's change log's shared lock, as
   the route takes them) and ``hot_sql.SUBMIT`` (``SUBMIT_SCORED``, with the score) in one
   round trip: the write, guarded by the row's being active (``status = 'active'``) and, when
   scored, by the annotations' being those scored (``MARK_CHANGES`` as read: an add or a
   remove committed since the scoring read makes it write nothing), logging the change for
   the served report (``work_changes``, as the route's flush does), returning the code (the
   stored one, else the new one).

Anything else answers None and the route's own submit runs (in a session, as before): an
unknown token, a submitted assignment (its stored code), one not active (the refusal), a
study with any of those rules, and a submit, an abandon or a change of the annotations
committed between the reads and the write (the guard's empty ``RETURNING``). So this path
accepts only what the route would, writes what it would (the property test in
tests/test_fast_submit.py), and never refuses. The answer is :func:`answer`'s, the route's too.

A study whose rules make every submit the route's (a pause rule, segments to have seen) would
cost each submit a wasted read (measured: +0.44 ms of the app's CPU and +0.2 ms of Postgres's
per submit, one round trip more). So a read that finds such a study marks it for
:data:`HINT_SECONDS` in this process, and a later submit of a token whose study this process
knows without a query (the keys cached by :mod:`app.annotation.fast`'s adds and heartbeats)
goes straight to the route. Only a hint: the route's submit is right for every submit, so a
stale mark (a study changed to plain rules meanwhile) costs speed for at most that long, never
a wrong answer.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from sqlalchemy import Engine

from app.annotation import fast, hot_sql
from app.annotation.assignments import (
    TOKEN_PATTERN,
    new_completion_code,
    now,
    plain_study,
    plain_submit,
    scores_suggestions,
    with_score,
)
from app.crowd.platforms import after_submit_redirect
from app.models import Assignment, Document, Study
from app.quality.assignment_scores import SuggestionScore, score_against_suggestions

HINT_SECONDS = 30.0
# per engine: study id -> when (time.monotonic) a read found its rules not plain
_not_plain: weakref.WeakKeyDictionary[Engine, dict[int, float]] = weakref.WeakKeyDictionary()


def answer(assignment: Assignment, code: str | None) -> dict[str, Any]:
    """The submit's answer (``docs/CONTRACT.md``) once ``assignment`` is submitted with
    ``code``: the route's (:func:`app.web.api.submitted`) and this module's."""
    out = {"completion_code": code, "redirect_url": after_submit_redirect(assignment)}
    if assignment.status == "screened_out":  # the done page gives the screen-out return
        out["screened_out"] = True
    return out


def read(driver: hot_sql.Driver, token: str) -> Assignment | None:
    """Round trip 1: the token's assignment with its study and document, as transient objects
    holding the columns the submit's rules and its scoring read (None: no such token)."""
    if not TOKEN_PATTERN.match(token):
        return None
    row = driver.run("submit_facts", hot_sql.SUBMIT_FACTS, {"token": token}, alone=True).first()
    if row is None:
        return None
    study = Study(
        id=row.study_id,
        suggestions=row.suggestions,
        settings=row.settings or {},
        completion_url=row.completion_url,
        taxonomy_hash=row.taxonomy_hash,
    )
    document = Document(
        id=row.document_id,
        external_id=row.external_id,
        is_gold=row.is_gold,
        created_at=row.document_created_at,
    )
    return Assignment(
        id=row.id,
        token=token,
        worker_id=row.worker_id,
        status=row.status,
        completion_code=row.completion_code,
        platform=row.platform,
        platform_data=row.platform_data or {},
        scores=row.scores,
        study=study,
        document=document,
    )


def score(driver: hot_sql.Driver, assignment: Assignment) -> SuggestionScore:
    """Round trip 2, when the study scores suggestions: the route's scoring, on the driver."""
    return score_against_suggestions(driver, assignment)


def write(
    driver: hot_sql.Driver, assignment: Assignment, scored: SuggestionScore | None = None
) -> str | None:
    """The last round trip: the submit's write (with ``scored``, the score too), when the row
    is still active (and, scored, its annotations are those scored); its code (None: they
    were not, nothing written)."""
    params = {
        "assignment_id": assignment.id,
        "token": assignment.token,
        "now": now(),
        "code": new_completion_code(),
    }
    statement = ("submit", hot_sql.SUBMIT)
    if scored is not None:
        params["scores"] = with_score(assignment.scores, scored.score)
        params["changes"] = scored.changes
        statement = ("submit_scored", hot_sql.SUBMIT_SCORED)
    lock = ("lock_for_submit", hot_sql.LOCK_FOR_SUBMIT)
    result = driver.claim_and_run(lock, statement, params, alone=True)
    return result.scalar() if result.rows else None


def submit(driver: hot_sql.Driver, token: str) -> dict[str, Any] | None:
    """The common submit's answer, committed; None when it is not one (nothing written: the
    route's submit answers)."""
    marks = _not_plain.setdefault(driver.engine, {})
    keys = fast.cached_keys(driver.engine, token)
    marked = marks.get(keys.study_id) if keys is not None else None
    if marked is not None and time.monotonic() - marked < HINT_SECONDS:
        return None  # its study's rules were not plain a moment ago: no read
    assignment = read(driver, token)
    if assignment is None:
        return None
    if not plain_study(assignment.study):
        marks[assignment.study.id] = time.monotonic()
        return None
    if not plain_submit(assignment):
        return None
    scored = score(driver, assignment) if scores_suggestions(assignment.study) else None
    code = write(driver, assignment, scored)
    if code is None:  # submitted or abandoned (or the annotations changed) since the read
        return None
    assignment.status, assignment.completion_code = "submitted", code
    return answer(assignment, code)
