"""A study's learned detector retrained as its curated work grows
(``--retrain-every N``; docs/DETECTOR.md).

``marginalia study detector SLUG --retrain-every N [--layer L --min-workers K]`` keeps
``studies.settings["detector_retrain"] = {"every": N, "layer": L, "min_workers": K}``. The
worker loop (:func:`run_next`, after imports, detection and figures) queues a training
(``detector_trainings``) when the study's curated documents in the layer
(:func:`app.detection.study_data.curated_documents`) reach the last training's count + N (the
first one at N), and runs one queued training at a time: the study's data read as
``detector train --study`` reads it, the model trained (:func:`model_server.learned_train.
train_study`), stored (:func:`app.detection.learned_models.store_model`) and made the
study's model (:func:`app.detection.learned_models.use_model`: its documents are queued for
detection again, so new suggestions come from it; each suggestion names its model version).
A training that cannot train (too few curated documents) or whose model would suggest nothing
(no category with enough examples, or none good enough to suggest) fails with its reason, the
study keeps its model, and the next one is queued at the next N documents.
"""

from __future__ import annotations

import logging
import tempfile
import time
import traceback
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app import queue
from app.db import begin_write
from app.errors import InvalidInput
from app.models import DetectorTraining, Study, utcnow

log = logging.getLogger(__name__)
SETTING = "detector_retrain"
STALE_AFTER = timedelta(hours=2)  # a running training's worker counts as dead after it
CHECK_EVERY = 30.0  # seconds between two looks for studies due a training, per process
_last_check = [0.0]


def retrain_rule(every: int, layer: str, min_workers: int) -> dict[str, Any] | None:
    """The setting's value for ``--retrain-every N`` (0: off, None), checked."""
    from app.detection.study_data import check_layer

    if every < 0 or every > 1_000_000:
        raise InvalidInput("--retrain-every must be a number of documents from 0 to 1000000")
    check_layer(layer, min_workers)
    return {"every": every, "layer": layer, "min_workers": min_workers} if every else None


def set_rule(study: Study, rule: dict[str, Any] | None) -> None:
    settings = dict(study.settings or {})
    if rule is None:
        settings.pop(SETTING, None)
    else:
        settings[SETTING] = rule
    study.settings = settings


def latest(session: Session, study: Study) -> DetectorTraining | None:
    return session.scalar(
        select(DetectorTraining)
        .where(DetectorTraining.study_id == study.id)
        .order_by(DetectorTraining.id.desc())
        .limit(1)
    )


def queue_due(session: Session) -> int:
    """Queue a training for every study whose curated documents reached the last training's
    count + N (none while one is queued or running); returns how many were queued. Commits."""
    from app.detection.study_data import curated_documents

    def due(study: Study, rule: dict[str, Any]) -> int | None:
        last = latest(session, study)
        if last is not None and last.status in ("queued", "running"):
            return None
        count = curated_documents(session, study, rule["layer"], rule.get("min_workers", 1))
        return (
            count if count >= (last.documents if last is not None else 0) + rule["every"] else None
        )

    queued = 0
    begin_write(session)
    for study in session.scalars(select(Study).order_by(Study.id)):
        rule = (study.settings or {}).get(SETTING)
        if not rule or due(study, rule) is None:
            continue
        # Another worker may be queueing the same training: its insert commits before this
        # lock is ours (Postgres; SQLite's writers are serial), and the second look sees it.
        session.execute(select(Study.id).where(Study.id == study.id).with_for_update())
        count = due(study, rule)
        if count is not None:
            session.add(DetectorTraining(study_id=study.id, documents=count, attempts=0))
            session.flush()
            queued += 1
    session.commit()
    return queued


_give_up = queue.gave_up("training")


def run_next(session: Session, worker: str, *, check_every: float = CHECK_EVERY) -> bool:
    """Queue the trainings now due (at most every ``check_every`` seconds per process), then
    claim one and run it; False when none was run."""
    if time.monotonic() - _last_check[0] >= check_every:
        _last_check[0] = time.monotonic()
        queue_due(session)
    job = queue.claim_committed(
        session, DetectorTraining, worker, stale_after=STALE_AFTER, give_up=_give_up
    )
    if job is None:
        return False
    job_id = job.id
    try:
        model_id = _train(session, job.study_id)
        begin_write(session)
        done = session.get(DetectorTraining, job_id)
        if done is not None:
            done.status, done.model_id, done.finished_at = "done", model_id, utcnow()
            done.last_error = None
        session.commit()
    except (InvalidInput, ValueError) as exc:  # the data cannot train a model: not retried
        _end(session, job_id, "failed", str(exc))
        log.info("training %s: %s", job_id, exc)
    except Exception as exc:  # noqa: BLE001 - the worker loop must survive any study
        _end(session, job_id, "retry", "".join(traceback.format_exception(exc))[-4000:])
        log.warning("training %s failed: %s", job_id, str(exc).splitlines()[:1])
    return True


def _end(session: Session, job_id: int, how: str, error: str) -> None:
    session.rollback()
    begin_write(session)
    job = session.get(DetectorTraining, job_id)
    if job is not None:
        job.last_error = error
        if how == "retry":
            queue.requeue(job)
        else:
            job.status, job.finished_at = "failed", utcnow()
    session.commit()


def _train(session: Session, study_id: int) -> int | None:
    """Train the study's model on its curated work now, store it and make it the study's;
    the new model's id (None: the study or its rule is gone)."""
    from app.detection.learned_models import store_model, use_model
    from app.detection.study_data import read_study
    from model_server.learned_train import train_study

    study = session.get(Study, study_id)
    rule = (study.settings or {}).get(SETTING) if study is not None else None
    if study is None or not rule:
        return None
    data = read_study(session, study, rule["layer"], rule.get("min_workers", 1))
    session.commit()  # no read transaction held through the training
    with tempfile.TemporaryDirectory(prefix="marginalia-retrain-") as folder:
        card = train_study(data, folder)
        if not any(figures.get("suggested") for figures in card["categories"].values()):
            raise ValueError(
                f"no category would be suggested from {len(data.documents)} curated documents "
                "(each needs 10 sentences in 3 documents and an out-of-fold F1 of 0.30 above "
                "its baseline); the study keeps its model"
            )
        begin_write(session)
        study = session.get(Study, study_id)
        if study is None:
            return None
        model = store_model(session, study, folder, by="retrain")
        use_model(session, study, model.id)
        return model.id
