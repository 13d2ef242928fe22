"""Coherence error detector: backends (rules, MiniLM, T5), SNaC grammar, training, evaluation.

Public entry points for the worker: :func:`load_detector` and :func:`detect_document`.
"""

from model_server.detector import load_detector
from model_server.interface import DetectionInput, RawSuggestion
from model_server.pipeline import SuggestionRow, detect_document

__all__ = ["DetectionInput", "RawSuggestion", "SuggestionRow", "detect_document", "load_detector"]
