"""A study's learned detectors: storing a model folder for a study, choosing the
one its suggestions come from, and the detector the worker runs for it.

``marginalia study detector SLUG DIR`` and the Settings page store or choose a model; the
study then points to it (``studies.settings["detector_model"]``, a ``detector_models`` id)
and its documents are queued for detection again, so its suggestions (and the recall
estimates read from them) all come from one model. The worker (:func:`detector_for`) runs a
study's chosen model instead of the detector it was started with; every suggestion row
names its detector (``learned``) and version (the model's name and its ``head.json``
digest), and the version's confident thresholds go to ``detector_versions`` as the shipped
detector's do.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.errors import InvalidInput, NotFound
from app.models import DetectionJob, DetectorModel, Document, Study, utcnow
from model_server.learned import CARD_FILE, HEAD_FILE, LearnedDetector

SETTING = "detector_model"
MAX_BYTES = 20_000_000


def _check(study: Study, raw: bytes) -> LearnedDetector:
    """The model of ``raw`` if it suits the study: a learned detector's ``head.json`` whose
    categories the study's taxonomy all has."""
    if len(raw) > MAX_BYTES:
        raise InvalidInput(f"{HEAD_FILE} is over {MAX_BYTES // 1_000_000} MB")
    try:
        model = LearnedDetector.from_bytes(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{HEAD_FILE} is not a learned detector: {exc}") from None
    known = {str(c.get("id")) for c in (study.taxonomy or {}).get("categories", [])}
    unknown = [c for c in model.categories if c not in known]
    if unknown:
        raise InvalidInput(
            f"the model suggests categories study {study.slug!r} does not have: "
            + ", ".join(sorted(unknown)[:10])
        )
    return model


def store_model(
    session: Session, study: Study, folder: str | Path, by: str | None = None
) -> DetectorModel:
    """Store the model folder (``head.json`` and ``MODEL_CARD.md``) for the study; the same
    folder again is the row already stored."""
    path = Path(folder)
    try:
        raw = (path / HEAD_FILE).read_bytes()
    except OSError:
        raise InvalidInput(f"{path}: no {HEAD_FILE} (train one with `detector train`)") from None
    model = _check(study, raw)
    digest = hashlib.sha256(raw).hexdigest()
    found = session.scalar(
        select(DetectorModel).where(
            DetectorModel.study_id == study.id, DetectorModel.digest == digest
        )
    )
    if found is not None:
        return found
    card = (path / CARD_FILE).read_text(encoding="utf-8") if (path / CARD_FILE).is_file() else None
    row = DetectorModel(
        study_id=study.id,
        name=str(model.data.get("model") or "learned")[:200],
        version=model.version[:100],
        digest=digest,
        payload=raw,
        card=card,
        created_by=by,
    )
    session.add(row)
    session.flush()
    return row


def models_of(session: Session, study: Study) -> list[DetectorModel]:
    """The study's stored models, newest first."""
    return list(
        session.scalars(
            select(DetectorModel)
            .where(DetectorModel.study_id == study.id)
            .order_by(DetectorModel.id.desc())
        )
    )


def chosen_model(session: Session, study: Study) -> DetectorModel | None:
    model_id = (study.settings or {}).get(SETTING)
    if model_id is None:
        return None
    row = session.get(DetectorModel, model_id)
    return row if row is not None and row.study_id == study.id else None


def use_model(session: Session, study: Study, model_id: int | None) -> int:
    """Make the study's suggestions come from its stored model ``model_id`` (None: the
    worker's own detector) and queue its documents for detection again (when the study
    has suggestions); returns how many documents were queued."""
    if model_id is not None:
        row = session.get(DetectorModel, model_id)
        if row is None or row.study_id != study.id:
            raise NotFound(f"study {study.slug!r} has no stored model {model_id}")
    settings = dict(study.settings or {})
    if settings.get(SETTING) == model_id:
        return 0
    if model_id is None:
        settings.pop(SETTING, None)
    else:
        settings[SETTING] = model_id
    study.settings = settings
    return requeue(session, study)


def requeue(session: Session, study: Study) -> int:
    """Queue every document of the study for detection again (one job per document)."""
    if study.suggestions == "off":
        return 0
    ids = list(session.scalars(select(Document.id).where(Document.study_id == study.id)))
    queued = set(
        session.scalars(select(DetectionJob.document_id).where(DetectionJob.document_id.in_(ids)))
    )
    if queued:
        session.execute(
            update(DetectionJob)
            .where(DetectionJob.document_id.in_(queued))
            .values(status="queued", attempts=0, run_after=utcnow(), last_error=None)
        )
    session.add_all(DetectionJob(document_id=i) for i in ids if i not in queued)
    return len(ids)


_LOADED: dict[str, LearnedDetector] = {}


def detector_for(session: Session, study: Study, default: Any) -> Any:
    """The detector that makes the study's suggestions: its chosen learned model (loaded
    once per version), else ``default`` (the worker's)."""
    row = chosen_model(session, study)
    if row is None:
        return default
    if row.digest not in _LOADED:
        if len(_LOADED) >= 8:
            _LOADED.clear()
        _LOADED[row.digest] = LearnedDetector.from_bytes(bytes(row.payload))
    return _LOADED[row.digest]
