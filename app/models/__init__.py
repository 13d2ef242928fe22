"""Typed SQLAlchemy 2.x models: the whole schema, one module per domain, all importable from
``app.models``.

Offsets are Unicode code-point offsets into a segment's plain text, end exclusive
(``text[start:end]``). Annotations are never deleted: Remove stamps ``removed_at``.
"""

from app.models.accounts import ApiKey, LoginFailure, Researcher, StudyCollaborator
from app.models.base import (
    NAMING_CONVENTION,
    Base,
    isoformat,
    paired_columns,
    span_columns,
    span_place,
    utcnow,
)
from app.models.changes import WorkChange
from app.models.detection import (
    ConsensusUnit,
    DetectionJob,
    DetectorModel,
    DetectorTraining,
    DetectorVersion,
    DocumentFigures,
    FigureJob,
    ImportJob,
    Suggestion,
)
from app.models.journey import Consent, QuestionnaireAnswer
from app.models.llm import LlmAnswer, LlmJob, LlmRun
from app.models.review import AdjudicatedError, DocumentReview, WorkerAction, WorkerReview
from app.models.sessions import WorkSession
from app.models.studies import Document, Entity, EntityMention, GoldError, Segment, Study
from app.models.work import Annotation, Assignment, PracticeCheck, SegmentTime, SuggestionEvent

__all__ = [
    "AdjudicatedError",
    "Annotation",
    "ApiKey",
    "Assignment",
    "Base",
    "Consent",
    "ConsensusUnit",
    "DetectionJob",
    "DetectorModel",
    "DetectorTraining",
    "DetectorVersion",
    "Document",
    "DocumentFigures",
    "DocumentReview",
    "Entity",
    "EntityMention",
    "FigureJob",
    "GoldError",
    "ImportJob",
    "LlmAnswer",
    "LlmJob",
    "LlmRun",
    "LoginFailure",
    "NAMING_CONVENTION",
    "PracticeCheck",
    "QuestionnaireAnswer",
    "Researcher",
    "Segment",
    "SegmentTime",
    "Study",
    "StudyCollaborator",
    "Suggestion",
    "SuggestionEvent",
    "WorkerAction",
    "WorkerReview",
    "WorkChange",
    "WorkSession",
    "isoformat",
    "paired_columns",
    "span_columns",
    "span_place",
    "utcnow",
]
