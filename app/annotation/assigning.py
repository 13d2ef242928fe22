"""The assignment policy's settings and refusals; the policy itself is
:func:`app.annotation.arrive.arrive`, the one way every arrival gets new work.

Rules, all per study:

* each document needs ``study.annotators_per_doc`` workers; an arriving worker gets the
  document with the fewest taken slots (humans' active or submitted assignments, one rule:
  ``arrival_sql.takes_slot``; an LLM annotator's take none), earliest position first; never
  a document they had before, whatever became of it; an arrival never takes an LLM
  annotator's worker ID (``llm:``, :func:`app.annotation.assignments.worker_id_from`);
* an arrival never gets back an assignment it has not proven it owns (see
  :mod:`app.annotation.admission`): a worker ID that has an active assignment gets
  :class:`WorkInProgress`, not that assignment;
* a new assignment's slot is *held* for ``settings["hold_minutes"]`` (default 5) until the
  worker does something (an annotation, a position update, a heartbeat: ``engaged_at``);
  when every slot is taken, an arrival takes over the oldest such unengaged hold, so
  arrivals that never load the page cannot fill a study. An engaged assignment whose
  ``last_seen_at`` is older than the study's abandon timeout
  (``settings["abandon_after_minutes"]``, default 45) is marked ``abandoned`` by a later
  arrival (at most every 5 s per study and process, and always before an arrival would be
  refused): its annotations stay stored, its slot is free again;
* with ``settings["randomise_conditions"]`` each worker is put in ``assisted`` or
  ``unassisted`` on arrival (balanced over workers, ties broken at random) and keeps it;
  the API hides suggestions from ``unassisted`` assignments;
* with ``settings["qualification"] = {"min_f1": F, "attempts": K}`` a worker first does
  gold documents (``Document.is_gold``), at most K of them, scored on submission against
  their :class:`GoldError` rows, and gets real documents only once one of them reaches
  F1 >= F (the training phase: practice documents, ``is_practice``, come first and teach,
  :mod:`app.annotation.practice` gives their answers per segment, and are never graded; the
  attempts are drawn at random from the other gold documents; a worker out of attempts is
  :class:`ScreenedOut`). Gold documents are then test items: they do not count against
  ``annotators_per_doc`` and are never handed out as real work.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.annotation import arrival_sql
from app.annotation.qualification import qualification
from app.crowd.platforms import DEFAULT_ABANDON_MINUTES, DEFAULT_HOLD_MINUTES
from app.documents.language import N_
from app.errors import Conflict
from app.models import Document, Study

CONDITIONS = ("assisted", "unassisted")
TAKEN = arrival_sql.TAKEN  # the statuses that take a document's slot


class ScreenedOut(Conflict):
    """The worker used every practice attempt without reaching the pass mark: no real
    documents for them; the worker pages send them back with the platform's screen-out
    return (:func:`app.crowd.platforms.screen_out_url`)."""

    def __init__(self) -> None:
        super().__init__(
            "thank you — your answers on the practice documents did not reach the "
            "accuracy this study needs, so there are no more documents for you"
        )


class WorkInProgress(Conflict):
    """The arriving worker ID has an active assignment that this arrival did not prove it owns."""

    template = N_(
        "this worker ID already has work in progress in another browser. Continue in the "
        "browser where you started; if you did not start this study, check the ID you were "
        "given"
    )

    def __init__(self) -> None:
        super().__init__(self.template)


class NoDocumentsLeft(Conflict):
    """Every document has the annotators it needs, or none is left for this worker."""

    def __init__(self) -> None:
        super().__init__("there are no more documents for you in this study — thank you!")


def abandon_after(study: Any) -> timedelta:
    minutes = (study.settings or {}).get("abandon_after_minutes", DEFAULT_ABANDON_MINUTES)
    return timedelta(minutes=float(minutes))


def hold_for(study: Any) -> timedelta:
    """How long a new assignment keeps its slot before the worker does anything."""
    minutes = (study.settings or {}).get("hold_minutes", DEFAULT_HOLD_MINUTES)
    return timedelta(minutes=float(minutes))


def randomises_conditions(study: Any) -> bool:
    return bool((study.settings or {}).get("randomise_conditions"))


def is_demo(study: Any) -> bool:
    """``marginalia demo``'s study: once every slot is taken, an arrival still gets the
    document with the fewest workers that it has not had (the demo never fills up)."""
    return bool((study.settings or {}).get("demo"))


def reads_whole_study(study: Any) -> bool:
    """Balanced conditions, qualification, the demo: those arrivals take the study's lock."""
    return randomises_conditions(study) or qualification(study) is not None or is_demo(study)


def preview_document(session: Session, study: Study) -> Document | None:
    """A document to show read-only before a worker accepts (MTurk preview); no writes."""
    return session.scalar(
        select(Document)
        .where(Document.study_id == study.id, Document.is_gold.is_(False))
        .order_by(Document.position, Document.id)
        .limit(1)
    ) or session.scalar(
        select(Document).where(Document.study_id == study.id).order_by(Document.position).limit(1)
    )
